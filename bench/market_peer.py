"""Benchmark of ``market_stats`` against DuckDB: an independent oracle of every figure, and a speed peer.

What an analyst would otherwise use: the same catalogue and history loaded into DuckDB, each unit's state per month
precomputed there in SQL, and each question one SQL statement over that table (bench/market_sql.py, shared with
tests/test_market_peer.py, which checks that SQL against the service on a small catalogue).

What it measures, at ``--listings`` listings (2,500 by default) with ``--history-days`` (730) of simulated history:

1. **The catalogue**: built as bench/history.py builds it (the service's generator and simulation, loaded into a
   data directory), or kept with ``--reuse``.
2. **DuckDB's load** (documents and ``listing_history`` copied from the SQLite file) and its **precomputation**
   (units, counted entries, and ``unit_states``: each unit's status and price at each month's start it exists at),
   timed apart; the precomputed table's rows and size.
3. **Agreement**: five questions (the whole market by month over the last 24 months; by ``cityOrDistrict`` by
   quarter; ``filterQuery=cityOrDistrict:Toronto``; by ``floorPlans.numberOfBedrooms``;
   ``unitFilter=numberOfBedrooms = 2``), each asked of the service (``precon serve`` on the data directory, over
   real HTTP) and of DuckDB: every figure of every group and interval compared (counts exactly, fractions and
   medians within 1e-9 relative). Disagreements are listed; they make the exit status 1.
4. **Speed**: ``--rounds`` rounds of the five questions, ours over HTTP and DuckDB's statement in-process,
   interleaved question by question: p50/p95 of each side over all questions and per question, and the ratio
   DuckDB p95 / ours p95 (target: at least 5).

Run (from the project root)::

    .venv/bin/python bench/market_peer.py                     # 2,500 listings, 30 rounds
    .venv/bin/python bench/market_peer.py --listings 50000 --rounds 20
    .venv/bin/python bench/market_peer.py --reuse             # keep the catalogue built in --data

Figures go to stdout and, as JSON, to ``bench/out/market_peer-<listings>.json``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import httpx
import numpy as np
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

import market_sql  # bench/ is not a package: its directory is on the path
from history import build, holdings
from load import percentiles
from market_sql import Question
from mix import PRODUCT
from serving import OUT_DIR, Service, create_key

DEFAULT_LISTINGS = 2500
DEFAULT_SEED = 1
DEFAULT_HISTORY_DAYS = 730
DEFAULT_ROUNDS = 30
TARGET_RATIO = 5.0
"""DuckDB's p95 over ours: at least this."""

JsonDict = dict[str, Any]


def questions(until: datetime) -> list[Question]:
    """The questions asked of both: the last 24 months (the quarters holding them, by quarter) up to ``until``."""
    month = until.year * 12 + until.month - 1 - 23
    since = datetime(month // 12, month % 12 + 1, 1, tzinfo=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    end = until.strftime("%Y-%m-%dT%H:%M:%SZ")
    return [
        Question("whole_by_month", since, end),
        Question("city_by_quarter", since, end, interval="quarter", group_by="cityOrDistrict"),
        Question("toronto_by_month", since, end, filter_query="cityOrDistrict:Toronto"),
        Question("bedrooms_by_month", since, end, group_by="floorPlans.numberOfBedrooms"),
        Question("unit_filter_2_bedrooms", since, end, unit_filter="numberOfBedrooms = 2"),
    ]


class Ours:
    """The service over HTTP, one keep-alive connection."""

    def __init__(self, base_url: str, key: str) -> None:
        self.http = httpx.Client(base_url=base_url, headers={"x-api-key": key}, timeout=900)

    def ask(self, question: Question) -> JsonDict:
        response = self.http.get("/v1/all/market_stats", params={"product_id": PRODUCT, **question.params()})
        if response.status_code != 200:
            raise SystemExit(f"market_stats answered {response.status_code}: {response.text[:300]}")
        answer: JsonDict = orjson.loads(response.content)
        return answer


def duck(data_dir: Path, memory: str) -> tuple[duckdb.DuckDBPyConnection, JsonDict]:
    """A new DuckDB database beside the catalogue, loaded and precomputed: the cost of each step."""
    path = data_dir / "market_peer.duckdb"
    for old in (path, path.with_name(path.name + ".wal")):
        old.unlink(missing_ok=True)
    con = duckdb.connect(str(path))
    con.execute(f"SET memory_limit = '{memory}'")  # the machine is shared: spill to disk past this
    loaded = market_sql.load(con, data_dir / "catalogue.sqlite3")
    precomputed = market_sql.precompute(con)
    precomputed["database_mb"] = round(path.stat().st_size / 2**20, 1)
    return con, {"load": loaded, "precompute": precomputed, "threads": _threads(con), "memory_limit": memory}


def _threads(con: duckdb.DuckDBPyConnection) -> int:
    found = con.execute("SELECT current_setting('threads')").fetchone()
    return int(found[0]) if found else 0


def agreement(ours: Ours, con: duckdb.DuckDBPyConnection, asked: list[Question]) -> JsonDict:
    """Each question asked of both, every figure compared."""
    found: JsonDict = {}
    for question in asked:
        if not market_sql.covered(con, question):
            raise SystemExit(f"{question.name}: an interval ends outside DuckDB's unit_states")
        mine, theirs = ours.ask(question), market_sql.answer(con, question)
        differ = market_sql.disagreements(mine, theirs)
        found[question.name] = {
            "params": question.params(),
            "groups": len(mine["series"]),
            "figures": market_sql.figures_compared(mine),
            "disagree": len(differ),
            "first_disagreements": differ[:20],
        }
    return found


def timed(ours: Ours, con: duckdb.DuckDBPyConnection, asked: list[Question], rounds: int) -> JsonDict:
    """``rounds`` rounds, each question asked of ours then of DuckDB: milliseconds per answer."""
    statements = {q.name: market_sql.question_sql(q) for q in asked}
    samples: dict[str, dict[str, list[float]]] = {q.name: {"ours": [], "duckdb": []} for q in asked}
    for _ in range(rounds):
        for question in asked:
            started = time.perf_counter()
            ours.ask(question)
            middle = time.perf_counter()
            con.execute(statements[question.name]).fetchall()
            ended = time.perf_counter()
            samples[question.name]["ours"].append((middle - started) * 1000)
            samples[question.name]["duckdb"].append((ended - middle) * 1000)
    every = {side: [ms for held in samples.values() for ms in held[side]] for side in ("ours", "duckdb")}
    latency = {side: percentiles(values) for side, values in every.items()}
    return {
        "latency_ms": latency,
        "ratio_p95": round(float(latency["duckdb"]["p95"]) / float(latency["ours"]["p95"]), 2),
        "by_question_ms": {
            name: {side: percentiles(values) for side, values in held.items()} for name, held in samples.items()
        },
        "ratio_p95_by_question": {
            name: round(float(np.percentile(held["duckdb"], 95)) / float(np.percentile(held["ours"], 95)), 2)
            for name, held in samples.items()
        },
    }


def report(figures: JsonDict) -> list[str]:
    peer = figures["duckdb"]
    lines = [
        f"catalogue: {figures['catalogue']}",
        f"build: {figures.get('build')}",
        f"DuckDB {figures['duckdb_version']} ({peer['threads']} threads): load {peer['load']}",
        f"  precompute {peer['precompute']['seconds']} s, unit_states {peer['precompute']['rows']['unit_states']:,} "
        f"rows, {peer['precompute']['unit_states_mb']} MB (database {peer['precompute']['database_mb']} MB)",
        f"  the service healthy after {figures['ours_started_s']} s; market_stats' first answer "
        f"{figures['ours_first_s']} s, the first with a unitFilter {figures['ours_first_unit_filter_s']} s",
    ]
    for name, held in figures["agreement"].items():
        verdict = "all agree" if not held["disagree"] else f"{held['disagree']} DISAGREE"
        lines.append(f"  {name:24} {held['groups']:>3} groups {held['figures']:>6} figures  {verdict}")
        lines += [f"      {line}" for line in held["first_disagreements"][:5]]
    speed = figures["speed"]
    for name, held in speed["by_question_ms"].items():
        ours, theirs = held["ours"], held["duckdb"]
        lines.append(
            f"  {name:24} ours p50 {ours['p50']:8} p95 {ours['p95']:8}   DuckDB p50 {theirs['p50']:8} "
            f"p95 {theirs['p95']:8}   ratio {speed['ratio_p95_by_question'][name]}"
        )
    ours, theirs = speed["latency_ms"]["ours"], speed["latency_ms"]["duckdb"]
    lines.append(f"  {'all questions':24} ours p50 {ours['p50']:8} p95 {ours['p95']:8}   DuckDB p50 {theirs['p50']:8} "
                 f"p95 {theirs['p95']:8}")  # fmt: skip
    ratio = speed["ratio_p95"]
    lines.append(
        f"  DuckDB p95 / ours p95: {ratio} (target >= {TARGET_RATIO}: {'ok' if ratio >= TARGET_RATIO else 'MISSED'})"
    )
    return lines


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--listings", type=int, default=DEFAULT_LISTINGS)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--history-days", type=int, default=DEFAULT_HISTORY_DAYS)
    parser.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS)
    parser.add_argument("--data", type=Path, default=None, help="default bench/out/market_peer-<listings>")
    parser.add_argument("--duckdb-memory", default="6GB", help="DuckDB's memory_limit (it spills past it)")
    parser.add_argument("--reuse", action="store_true", help="keep the catalogue already built in --data")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    OUT_DIR.mkdir(exist_ok=True)
    data_dir = args.data or OUT_DIR / f"market_peer-{args.listings}"
    figures: JsonDict = {"listings": args.listings, "seed": args.seed, "history_days": args.history_days}
    if not (args.reuse and (data_dir / "catalogue.sqlite3").exists()):
        figures["build"] = build(data_dir, args.listings, args.seed, args.history_days)
    figures["catalogue"] = holdings(data_dir)
    figures["duckdb_version"] = duckdb.__version__
    con, figures["duckdb"] = duck(data_dir, args.duckdb_memory)
    key = create_key(data_dir)
    service = Service.start(data_dir, OUT_DIR / f"market_peer-serve-{data_dir.name}.log")
    try:
        ours = Ours(service.base_url, key)
        figures["ours_started_s"] = round(service.started_s, 1)
        asked = questions(datetime.now(UTC))
        started = time.perf_counter()
        ours.ask(asked[0])
        figures["ours_first_s"] = round(time.perf_counter() - started, 2)
        started = time.perf_counter()
        ours.ask(next(q for q in asked if q.unit_filter))  # its unit ledger is built by the first request naming one
        figures["ours_first_unit_filter_s"] = round(time.perf_counter() - started, 2)
        figures["agreement"] = agreement(ours, con, asked)
        figures["speed"] = timed(ours, con, asked, args.rounds)
    finally:
        service.stop()
        con.close()
    print("\n".join(report(figures)))
    (OUT_DIR / f"market_peer-{args.listings}.json").write_bytes(orjson.dumps(figures, option=orjson.OPT_INDENT_2))
    if any(held["disagree"] for held in figures["agreement"].values()):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
