"""``market_stats`` in DuckDB SQL: what an analyst would write beside the service, an independent oracle of its
figures (docs/api.md, "Market statistics (ours)") and a speed peer (bench/market_peer.py times it).

Three steps, each its own function so that their costs are told apart:

1. :func:`load`: the catalogue's documents (listings, and deleted listings as they last were) and its whole
   ``listing_history`` copied from the SQLite file into DuckDB tables, as they are (documents as JSON);
2. :func:`precompute`: from them, in SQL, the units as history knows them (a floor plan by its ``id``, a unit by its
   ``unitNumber``, else by position), the counted entries (sales, price moves, launches) and ``unit_states``: each
   unit's state at each month's start (status, price) for every month it exists at, replayed backwards from the
   documents (the ``from`` of its first later entry, else its value now): exact, no sampling;
3. :func:`answer`: one SQL statement per question over those tables, the same figures the service answers, in the
   same shape (``{"series": [{"group", "points": [...]}]}``).

Nothing here imports the service's market code: the semantics are read from docs/api.md and written again in SQL.
A question's filterQuery is translated to SQL over the listings' attributes (:func:`filter_sql`); its unitFilter
may name ``numberOfBedrooms`` (the only unit filter translated).
"""

from __future__ import annotations

import itertools
import math
import sqlite3
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from precon import filters

FIGURES = (
    "unitsSold",
    "unitsAvailable",
    "sellThrough",
    "launches",
    "medianPrice",
    "medianPricePerSqFt",
    "priceIncreases",
    "priceCuts",
)
PRECOMPUTED = ("listings", "plans", "units", "unit_events", "launches", "months", "unit_states")
"""The tables :func:`precompute` makes (what a question reads)."""
LISTING_COLUMNS = {"cityOrDistrict": "city", "sellingStatus": "selling_status", "province": "province"}
"""The listing attributes a filterQuery or groupBy may name here, and their columns in ``listings``."""
PLAN_GROUP = "floorPlans.numberOfBedrooms"

DOCUMENTS = (
    "SELECT l.listing_id, l.province, d.doc, 0 FROM listings l JOIN listing_docs d ON d.id = l.id UNION ALL "
    "SELECT listing_id, province, doc, 1 FROM deleted_listings "
    "WHERE listing_id NOT IN (SELECT listing_id FROM listings)"
)
HISTORY = "SELECT seq, at, listing_id, scope, plan, unit, field, change, from_value, to_value FROM listing_history"
CHUNK = 200_000


def _text(blob: bytes | str | None) -> str | None:
    return blob.decode() if isinstance(blob, bytes) else blob


def load(con: duckdb.DuckDBPyConnection, catalogue: Path) -> dict[str, Any]:
    """Copies the catalogue's documents and history into DuckDB (tables ``docs`` and ``history``): rows and seconds."""
    started = time.perf_counter()
    source = sqlite3.connect(f"file:{catalogue}?mode=ro", uri=True)
    try:
        rows = source.execute(DOCUMENTS).fetchall()
        frame = pd.DataFrame(
            {
                "listing_id": [r[0] for r in rows],
                "province": [r[1] for r in rows],
                "doc": [_text(r[2]) for r in rows],
                "deleted": [bool(r[3]) for r in rows],
            }
        )
        del rows
        con.register("doc_frame", frame)
        con.execute(
            "CREATE OR REPLACE TABLE docs AS SELECT listing_id, province, deleted, doc::JSON AS doc FROM doc_frame"
        )
        con.unregister("doc_frame")
        del frame
        con.execute(
            "CREATE OR REPLACE TABLE history(seq BIGINT, at_text VARCHAR, ms BIGINT, listing_id VARCHAR, "
            "scope VARCHAR, plan VARCHAR, unit VARCHAR, field VARCHAR, change VARCHAR, from_value JSON, to_value JSON)"
        )
        cursor = source.execute(HISTORY)
        while chunk := cursor.fetchmany(CHUNK):
            columns = list(zip(*chunk, strict=True))
            part = pd.DataFrame(
                {
                    "seq": columns[0],
                    "at": columns[1],
                    **dict(zip(("listing_id", "scope", "plan", "unit", "field", "change"), columns[2:8], strict=True)),
                    "from_value": [_text(v) for v in columns[8]],
                    "to_value": [_text(v) for v in columns[9]],
                }
            )
            con.register("history_part", part)
            con.execute(
                'INSERT INTO history SELECT seq, "at", epoch_ms(strptime("at", \'%Y-%m-%dT%H:%M:%S.%gZ\')), '
                "listing_id, scope, plan, unit, field, change, from_value::JSON, to_value::JSON FROM history_part"
            )
            con.unregister("history_part")
    finally:
        source.close()
    documents = con.execute("SELECT count(*) FROM docs").fetchone()
    entries = con.execute("SELECT count(*) FROM history").fetchone()
    return {
        "seconds": round(time.perf_counter() - started, 2),
        "documents": int(documents[0]) if documents else 0,
        "history_entries": int(entries[0]) if entries else 0,
    }


# -- the precomputation ----------------------------------------------------------------------------------------------

FOLD = "trim(regexp_replace(lower({0}), '[\\s_-]+', ' ', 'g'))"
"""Text as the filters compare it: case ignored, runs of spaces, hyphens and underscores one space."""


def _key(record: str, name: str, position: str) -> str:
    """A record's key as history knows it: its ``name`` (text, or an integer written out), else ``#<position>``."""
    value = f"json_type({record}, '$.{name}')"
    return (
        f"coalesce(CASE {value} WHEN 'VARCHAR' THEN nullif({record}->>'$.{name}', '') "
        f"WHEN 'BIGINT' THEN {record}->>'$.{name}' WHEN 'UBIGINT' THEN {record}->>'$.{name}' "
        f"WHEN 'BOOLEAN' THEN CASE WHEN {record}->>'$.{name}' = 'true' THEN 'True' ELSE 'False' END END, "
        f"'#' || {position})"
    )


def _number(json: str, path: str) -> str:
    """A JSON value as a number (a number or numeric text, never a boolean), else NULL."""
    kind = f"json_type({json}, '{path}')"
    return (
        f"CASE WHEN {kind} IN ('BIGINT', 'UBIGINT', 'DOUBLE') THEN ({json}->>'{path}')::DOUBLE "
        f"WHEN {kind} = 'VARCHAR' THEN CASE WHEN isfinite(TRY_CAST({json}->>'{path}' AS DOUBLE)) "
        f"THEN TRY_CAST({json}->>'{path}' AS DOUBLE) END END"
    )


def _price(json: str, path: str = "$") -> str:
    """A unit's price: a JSON number (not numeric text, not a boolean), else NULL."""
    return (
        f"CASE WHEN json_type({json}, '{path}') IN ('BIGINT', 'UBIGINT', 'DOUBLE') THEN ({json}->>'{path}')::DOUBLE END"
    )


def _status(json: str, path: str = "$") -> str:
    """A status as a code: 1 Available, 2 Sold, 0 anything else (Reserved, none)."""
    return (
        f"CASE WHEN json_type({json}, '{path}') = 'VARCHAR' THEN CASE {json}->>'{path}' WHEN 'Available' THEN 1 "
        "WHEN 'Sold' THEN 2 ELSE 0 END ELSE 0 END"
    )


def _precompute_sql() -> list[str]:
    listings = """CREATE OR REPLACE TABLE listings AS SELECT listing_id, deleted, province,
        CASE WHEN json_type(doc, '$.cityOrDistrict') = 'VARCHAR' THEN doc->>'$.cityOrDistrict' END AS city,
        CASE WHEN json_type(doc, '$.sellingStatus') = 'VARCHAR' THEN doc->>'$.sellingStatus' END AS selling_status,
        (SELECT max(ms) FILTER (change = 'deleted') FROM history h
         WHERE h.listing_id = docs.listing_id AND h.scope = 'listing') AS deleted_ms
        FROM docs"""
    plans = f"""CREATE OR REPLACE TABLE plans AS
        WITH raw AS (
          SELECT listing_id, unnest(range(len(items))) AS position, unnest(items) AS plan FROM (
            SELECT listing_id, CASE WHEN json_type(doc, '$.floorPlans') = 'ARRAY'
              THEN json_extract(doc, '$.floorPlans[*]') ELSE [] END AS items FROM docs))
        SELECT listing_id, {_key("plan", "id", "position")} AS plan_key, position, plan,
          {_number("plan", "$.numberOfBedrooms")} AS bedrooms,
          CASE WHEN {_number("plan", "$.squareFeet")} > 0 THEN {_number("plan", "$.squareFeet")} END AS sqft
        FROM raw WHERE json_type(plan) = 'OBJECT'
        QUALIFY row_number() OVER (PARTITION BY listing_id, plan_key ORDER BY position DESC) = 1"""
    born = """CREATE OR REPLACE TEMP TABLE born AS
        SELECT listing_id, CASE WHEN scope = 'listing' THEN NULL ELSE plan END AS plan,
          CASE WHEN scope = 'unit' THEN unit END AS unit, scope, max(ms) AS ms
        FROM history WHERE change = 'created' GROUP BY ALL"""
    units = f"""CREATE OR REPLACE TABLE units AS
        WITH raw AS (
          SELECT listing_id, plan_key, sqft, unnest(range(len(items))) AS position, unnest(items) AS unit FROM (
            SELECT listing_id, plan_key, sqft, CASE WHEN json_type(plan, '$.units') = 'ARRAY'
              THEN json_extract(plan, '$.units[*]') ELSE [] END AS items FROM plans)),
        keyed AS (
          SELECT listing_id, plan_key, {_key("unit", "unitNumber", "position")} AS unit_key, position, sqft,
            {_status("unit", "$.status")} AS status, {_price("unit", "$.price")} AS price
          FROM raw WHERE json_type(unit) = 'OBJECT'
          QUALIFY row_number() OVER (PARTITION BY listing_id, plan_key, unit_key ORDER BY position DESC) = 1)
        SELECT (row_number() OVER (ORDER BY k.listing_id, k.plan_key, k.position) - 1)::INTEGER AS unit_id,
          k.listing_id, k.plan_key, k.unit_key, k.sqft, k.status::TINYINT AS status, k.price,
          greatest(bl.ms, bp.ms, bu.ms) AS born_ms, CASE WHEN l.deleted THEN l.deleted_ms END AS gone_ms
        FROM keyed k JOIN listings l USING (listing_id)
        LEFT JOIN born bl ON bl.scope = 'listing' AND bl.listing_id = k.listing_id
        LEFT JOIN born bp ON bp.scope = 'floorPlan' AND bp.listing_id = k.listing_id AND bp.plan = k.plan_key
        LEFT JOIN born bu ON bu.scope = 'unit' AND bu.listing_id = k.listing_id AND bu.plan = k.plan_key
          AND bu.unit = k.unit_key"""
    moves = """CREATE OR REPLACE TEMP TABLE moves AS
        SELECT u.unit_id, h.field, h.ms, arg_min(h.from_value, h.seq) AS from_value
        FROM history h JOIN units u ON u.listing_id = h.listing_id AND u.plan_key = h.plan AND u.unit_key = h.unit
        WHERE h.scope = 'unit' AND h.change = 'updated' AND h.field IN ('status', 'price') GROUP BY ALL"""
    events = f"""CREATE OR REPLACE TABLE unit_events AS
        SELECT listing_id, plan AS plan_key, unit AS unit_key, ms,
          CASE WHEN field = 'status' THEN 0 WHEN {_price("to_value")} > {_price("from_value")} THEN 1 ELSE 2
          END::TINYINT AS kind
        FROM history WHERE scope = 'unit' AND change = 'updated' AND (
          (field = 'status' AND {_status("to_value")} = 2 AND {_status("from_value")} <> 2)
          OR (field = 'price' AND {_price("to_value")} <> {_price("from_value")}))"""
    launches = """CREATE OR REPLACE TABLE launches AS
        WITH selling AS (
          SELECT listing_id, seq, ms, from_value, to_value FROM history
          WHERE scope = 'listing' AND field = 'sellingStatus' AND change <> 'created'),
        created AS (SELECT listing_id, seq, ms FROM history WHERE scope = 'listing' AND change = 'created'),
        at_creation AS (
          SELECT c.listing_id, c.ms, arg_min(s.from_value, s.seq) AS next_from, count(s.seq) AS later
          FROM created c LEFT JOIN selling s ON s.listing_id = c.listing_id AND s.seq > c.seq GROUP BY ALL)
        SELECT listing_id, ms FROM selling
          WHERE json_type(to_value) = 'VARCHAR' AND to_value->>'$' = 'Selling Now'
        UNION ALL
        SELECT a.listing_id, a.ms FROM at_creation a JOIN listings l USING (listing_id)
          WHERE CASE WHEN a.later > 0 THEN json_type(a.next_from) = 'VARCHAR' AND a.next_from->>'$' = 'Selling Now'
                ELSE l.selling_status = 'Selling Now' END"""
    months = """CREATE OR REPLACE TABLE months AS
        SELECT epoch_ms(m)::BIGINT AS end_ms FROM range(
          date_trunc('month', (SELECT make_timestamp(min(ms) * 1000) FROM history)),
          date_trunc('month', greatest(now()::TIMESTAMP, (SELECT make_timestamp(max(ms) * 1000) FROM history)))
            + INTERVAL 2 MONTH, INTERVAL 1 MONTH) t(m)"""
    states = f"""CREATE OR REPLACE TABLE unit_states AS
        WITH grid AS (
          SELECT u.unit_id, m.end_ms, u.status, u.price FROM units u CROSS JOIN months m
          WHERE (u.born_ms IS NULL OR u.born_ms < m.end_ms) AND (u.gone_ms IS NULL OR m.end_ms <= u.gone_ms)),
        status_moves AS (SELECT unit_id, ms, {_status("from_value")} AS from_status FROM moves WHERE field = 'status'),
        price_moves AS (SELECT unit_id, ms, {_price("from_value")} AS from_price FROM moves WHERE field = 'price')
        SELECT g.unit_id, g.end_ms, coalesce(s.from_status, g.status)::TINYINT AS status,
          CASE WHEN p.ms IS NULL THEN g.price ELSE p.from_price END AS price
        FROM grid g
        ASOF LEFT JOIN status_moves s ON s.unit_id = g.unit_id AND s.ms >= g.end_ms
        ASOF LEFT JOIN price_moves p ON p.unit_id = g.unit_id AND p.ms >= g.end_ms
        ORDER BY g.end_ms, g.unit_id"""
    return [listings, plans, born, units, moves, events, launches, months, states]


def precompute(con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    """The tables a question reads (:data:`PRECOMPUTED`), built in SQL from ``docs`` and ``history``: seconds, and
    ``unit_states``' rows and size."""
    started = time.perf_counter()
    for statement in _precompute_sql():
        con.execute(statement)
    con.execute("CHECKPOINT")
    seconds = time.perf_counter() - started
    counted = {table: _count(con, table) for table in PRECOMPUTED}
    return {"seconds": round(seconds, 2), "rows": counted, "unit_states_mb": _table_mb(con, "unit_states")}


def _count(con: duckdb.DuckDBPyConnection, table: str) -> int:
    found = con.execute(f"SELECT count(*) FROM {table}").fetchone()
    return int(found[0]) if found else 0


def _table_mb(con: duckdb.DuckDBPyConnection, table: str) -> float:
    """A table's size as stored (its compressed column segments' blocks, after a checkpoint), in MiB."""
    found = con.execute(
        f"SELECT count(DISTINCT block_id) FROM pragma_storage_info('{table}') WHERE block_id >= 0"
    ).fetchone()
    size = con.execute("SELECT block_size FROM pragma_database_size()").fetchone()
    return round(int(found[0] if found else 0) * int(size[0] if size else 262144) / 2**20, 1)


# -- the questions ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Question:
    """One ``market_stats`` request: what the service is asked (:meth:`params`) and DuckDB answers (:func:`answer`)."""

    name: str
    since: str
    until: str
    interval: str = "month"
    group_by: str | None = None
    filter_query: str | None = None
    unit_filter: str | None = None
    group_limit: int = 10
    extra: dict[str, str] = field(default_factory=dict)

    def params(self) -> dict[str, str]:
        asked = {"interval": self.interval, "since": self.since, "until": self.until}
        if self.group_by:
            asked |= {"groupBy": self.group_by, "groupLimit": str(self.group_limit)}
        if self.filter_query:
            asked["filterQuery"] = self.filter_query
        if self.unit_filter:
            asked["unitFilter"] = self.unit_filter
        return asked | self.extra

    def edges(self) -> list[int]:
        """The intervals' edges in Unix ms: from the start of the one holding ``since`` to the end of the one holding
        ``until``."""
        step = 1 if self.interval == "month" else 3
        start, until = _moment(self.since), _moment(self.until)
        year, month = start.year, (start.month - 1) // step * step + 1
        edges: list[int] = []
        while True:
            edges.append(int(datetime(year, month, 1, tzinfo=UTC).timestamp() * 1000))
            if edges[-1] > until.timestamp() * 1000:
                return edges
            month += step
            if month > 12:
                year, month = year + 1, month - 12


def _moment(text: str) -> datetime:
    found = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return found if found.tzinfo else found.replace(tzinfo=UTC)


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def filter_sql(expr: filters.Expr | None, columns: dict[str, str], table: str) -> str:
    """A filterQuery (its matches, comparisons, AND, OR, NOT) as SQL over ``table``'s ``columns`` (attribute to column):
    a match folds both sides (case, runs of spaces, hyphens and underscores); a missing value fails every test, so
    ``NOT`` of one holds."""
    if expr is None:
        return "TRUE"
    if isinstance(expr, filters.And | filters.Or):
        joiner = " AND " if isinstance(expr, filters.And) else " OR "
        return "(" + joiner.join(filter_sql(item, columns, table) for item in expr.items) + ")"
    if isinstance(expr, filters.Not):
        return f"(NOT {filter_sql(expr.expr, columns, table)})"
    column = columns.get(getattr(expr, "attr", ""))
    if column is None:
        raise ValueError(f"not translated to SQL here: {expr}")
    if isinstance(expr, filters.Match):
        test = f"{FOLD.format(f'{table}.{column}')} = {FOLD.format(_literal(expr.value))}"
    elif isinstance(expr, filters.Compare):
        operator = {"=": "=", "!=": "<>"}.get(expr.op, expr.op)
        if operator == "<>":
            return f"(NOT coalesce({table}.{column} = {expr.value!r}, FALSE))"
        test = f"{table}.{column} {operator} {expr.value!r}"
    elif isinstance(expr, filters.Range):
        test = f"{table}.{column} BETWEEN {expr.low!r} AND {expr.high!r}"
    else:
        raise ValueError(f"not translated to SQL here: {expr}")
    return f"coalesce({test}, FALSE)"


def _number_key(column: str) -> str:
    """A number as facet_counts keys it: whole numbers without a decimal point, others as written."""
    return f"CASE WHEN {column} = trunc({column}) THEN ({column}::HUGEINT)::VARCHAR ELSE {column}::VARCHAR END"


def _groups_sql(question: Question) -> tuple[str, str]:
    """The question's groups ``(rank, grp)`` and each group's listings ``(rank, listing_id)``, over ``chosen``."""
    limit = question.group_limit
    if question.group_by is None:
        return "SELECT 0 AS rank, NULL::VARCHAR AS grp", "SELECT 0 AS rank, listing_id FROM chosen"
    if question.group_by == PLAN_GROUP:
        key = _number_key("p.bedrooms")
        groups = (
            f"SELECT row_number() OVER (ORDER BY n DESC, grp) - 1 AS rank, grp FROM ("
            f"SELECT {key} AS grp, count(DISTINCT p.listing_id) AS n FROM plans p JOIN chosen c USING (listing_id) "
            f"WHERE NOT c.deleted AND p.bedrooms IS NOT NULL GROUP BY grp ORDER BY n DESC, grp LIMIT {limit})"
        )
        return groups, "SELECT g.rank, c.listing_id FROM groups g CROSS JOIN chosen c"
    column = LISTING_COLUMNS[question.group_by]
    groups = (
        f"SELECT row_number() OVER (ORDER BY n DESC, grp) - 1 AS rank, grp FROM ("
        f"SELECT {column} AS grp, count(*) AS n FROM chosen WHERE NOT deleted AND {column} IS NOT NULL "
        f"GROUP BY grp ORDER BY n DESC, grp LIMIT {limit})"
    )
    folded = f"{FOLD.format('c.' + column)} = {FOLD.format('g.grp')}"
    members = f"SELECT g.rank, c.listing_id FROM groups g JOIN chosen c ON {folded}"
    return groups, members


def _plan_scope(question: Question) -> str | None:
    """The plans whose units a group counts ``(rank, listing_id, plan_key)``, where a plan attribute chooses them
    (grouped by one, or a unitFilter); None: every unit of the group's listings."""
    tests = []
    if question.group_by == PLAN_GROUP:
        tests.append(f"{_number_key('p.bedrooms')} = g.grp")
    if question.unit_filter:
        tests.append(filter_sql(filters.parse(question.unit_filter), {"numberOfBedrooms": "bedrooms"}, "p"))
    if not tests:
        return None
    return (
        "SELECT m.rank, p.listing_id, p.plan_key FROM members m JOIN groups g USING (rank) "
        f"JOIN plans p ON p.listing_id = m.listing_id WHERE {' AND '.join(tests)}"
    )


def question_sql(question: Question) -> str:
    """One statement: per group and interval, every figure (rows ordered by group rank, then interval)."""
    edges = question.edges()
    intervals = ", ".join(f"({i}, {start}, {end})" for i, (start, end) in enumerate(itertools.pairwise(edges)))
    where = filter_sql(filters.parse(question.filter_query) if question.filter_query else None, LISTING_COLUMNS, "l")
    groups, members = _groups_sql(question)
    plan_scope = _plan_scope(question)
    if plan_scope is None:
        unit_scope, unit_join, launch_scope = "members", "s_.listing_id = u.listing_id", "members"
    else:
        unit_scope, launch_scope = "plan_members", "(SELECT DISTINCT rank, listing_id FROM plan_members)"
        unit_join = "s_.listing_id = u.listing_id AND s_.plan_key = u.plan_key"
    event_join = unit_join.replace("u.", "e.")
    return f"""WITH chosen AS (SELECT * FROM listings l WHERE {where}),
      groups AS ({groups}),
      members AS ({members}),
      plan_members AS ({plan_scope or "SELECT NULL::BIGINT AS rank, NULL AS listing_id, NULL AS plan_key"}),
      intervals(i, start_ms, end_ms) AS (VALUES {intervals}),
      held AS (
        SELECT s_.rank, i.i, count(*) FILTER (st.status = 1) AS available, count(*) FILTER (st.status = 2) AS sold,
          count(*) AS existing,
          median(st.price) FILTER (st.status = 1 AND st.price IS NOT NULL) AS median_price,
          median(st.price / u.sqft) FILTER (st.status = 1 AND st.price IS NOT NULL AND u.sqft IS NOT NULL)
            AS median_ppsf
        FROM intervals i JOIN unit_states st ON st.end_ms = i.end_ms JOIN units u USING (unit_id)
        JOIN {unit_scope} s_ ON {unit_join} GROUP BY ALL),
      moved AS (
        SELECT s_.rank, i.i, count(*) FILTER (e.kind = 0) AS sales, count(*) FILTER (e.kind = 1) AS increases,
          count(*) FILTER (e.kind = 2) AS cuts
        FROM unit_events e JOIN {unit_scope} s_ ON {event_join}
        JOIN intervals i ON e.ms >= i.start_ms AND e.ms < i.end_ms GROUP BY ALL),
      launched AS (
        SELECT s_.rank, i.i, count(*) AS n FROM launches la JOIN {launch_scope} s_ ON s_.listing_id = la.listing_id
        JOIN intervals i ON la.ms >= i.start_ms AND la.ms < i.end_ms GROUP BY ALL)
    SELECT g.rank, g.grp, i.start_ms, coalesce(moved.sales, 0), coalesce(held.available, 0),
      CASE WHEN held.existing > 0 THEN held.sold / held.existing END, coalesce(launched.n, 0),
      held.median_price, held.median_ppsf, coalesce(moved.increases, 0), coalesce(moved.cuts, 0)
    FROM groups g CROSS JOIN intervals i
    LEFT JOIN held ON held.rank = g.rank AND held.i = i.i
    LEFT JOIN moved ON moved.rank = g.rank AND moved.i = i.i
    LEFT JOIN launched ON launched.rank = g.rank AND launched.i = i.i
    ORDER BY g.rank, i.i"""


def answer(con: duckdb.DuckDBPyConnection, question: Question, sql: str | None = None) -> dict[str, Any]:
    """DuckDB's answer to a question, shaped as the service's (``series`` of ``group`` and ``points``)."""
    rows = con.execute(sql or question_sql(question)).fetchall()
    series: list[dict[str, Any]] = []
    for rank, group, start, *figures in rows:
        if not series or series[-1]["_rank"] != rank:
            series.append({"_rank": rank, "group": group, "points": []})
        start_text = datetime.fromtimestamp(start / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        series[-1]["points"].append({"start": start_text, **dict(zip(FIGURES, figures, strict=True))})
    return {"series": [{"group": s["group"], "points": s["points"]} for s in series]}


def covered(con: duckdb.DuckDBPyConnection, question: Question) -> bool:
    """Whether ``unit_states`` holds every interval end the question needs (else its unit figures would be 0)."""
    held = {int(row[0]) for row in con.execute("SELECT end_ms FROM months").fetchall()}
    return set(question.edges()[1:]) <= held


def disagreements(ours: dict[str, Any], theirs: dict[str, Any], rel: float = 1e-9) -> list[str]:
    """Where the service's answer (``ours``) and DuckDB's differ: each group, interval and figure, said in words
    (empty: every figure agrees; counts exactly, medians and fractions within ``rel``)."""
    found: list[str] = []
    groups = [s["group"] for s in ours["series"]], [s["group"] for s in theirs["series"]]
    if groups[0] != groups[1]:
        return [f"groups: service {groups[0]} DuckDB {groups[1]}"]
    for mine, other in zip(ours["series"], theirs["series"], strict=True):
        starts = [p["start"] for p in mine["points"]], [p["start"] for p in other["points"]]
        if starts[0] != starts[1]:
            found.append(f"{mine['group']}: intervals service {starts[0]} DuckDB {starts[1]}")
            continue
        for point, peer in zip(mine["points"], other["points"], strict=True):
            for name in FIGURES:
                if not _same(point[name], peer[name], rel):
                    found.append(f"{mine['group']} {point['start']} {name}: service {point[name]} DuckDB {peer[name]}")
    return found


def _same(value: Any, other: Any, rel: float) -> bool:
    if value is None or other is None:
        return value is None and other is None
    if isinstance(value, float) or isinstance(other, float):
        return math.isclose(float(value), float(other), rel_tol=rel, abs_tol=0.0)
    return bool(value == other)


def figures_compared(answer_: dict[str, Any]) -> int:
    return sum(len(s["points"]) for s in answer_["series"]) * len(FIGURES)
