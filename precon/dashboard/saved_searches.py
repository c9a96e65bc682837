"""Saved searches: a name for a filter state, who saved it and what it answered when last opened, kept in the
dashboard's own SQLite file (shared by everyone using that dashboard) with the webhook subscriptions that alert on
each. No Streamlit here: the dashboard's pages (``components/saved.py``) and the tests use it alike.

A saved search holds the filter state in its address form (:meth:`precon.dashboard.filter_state.FilterState.to_params`),
so reopening it restores the same state exactly, with the API version and province it was saved in and the
deployment it was saved against. What it last answered (:class:`Answer`: each matching listing's start price and
selling status) is what "what changed since" compares the deployment's answer now with (:func:`compare`), which
works against any deployment, the production service included.

Every write is one transaction; the file is in WAL mode with a busy timeout, so several dashboards (or threads)
share it safely. A file that cannot be opened or read raises :class:`Unavailable` with a sentence for a person and
is never rewritten: nothing in it is lost.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from precon import filters
from precon.dashboard.filter_state import PARAMS, FilterState
from precon.filters import Expr
from precon.sqlite_wal import use_wal

DB_FILE_NAME = "dashboard.sqlite3"
MAX_NAME_CHARS = 200
MAX_WHO_CHARS = 100
BUSY_TIMEOUT_S = 15
SCHEMA_VERSION = 1
WATCH_ATTRIBUTE = "listingId"
SCHEMA = """
CREATE TABLE IF NOT EXISTS saved_searches (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    saved_by TEXT NOT NULL DEFAULT '',
    saved_at TEXT NOT NULL,
    params TEXT NOT NULL,
    version TEXT NOT NULL,
    province TEXT NOT NULL,
    listing_id TEXT,
    deployment TEXT NOT NULL,
    answer TEXT
);
CREATE TABLE IF NOT EXISTS saved_search_alerts (
    deployment TEXT NOT NULL,
    subscription_id TEXT NOT NULL,
    saved_search_id INTEGER NOT NULL REFERENCES saved_searches(id) ON DELETE CASCADE,
    event TEXT NOT NULL,
    target_url TEXT NOT NULL,
    fields TEXT,
    created_at TEXT NOT NULL,
    PRIMARY KEY (deployment, subscription_id)
);
CREATE INDEX IF NOT EXISTS saved_search_alerts_by_search ON saved_search_alerts (saved_search_id);
"""


class Unavailable(Exception):
    """The saved searches file cannot be opened, read or written; the message says why, for a person."""


class Refused(ValueError):
    """A value a person gave cannot be saved (an empty or too long name, say); the message says why."""


class NotFound(KeyError):
    """No saved search has that id (deleted meanwhile, perhaps by someone else)."""


# -- values ----------------------------------------------------------------------------------------------------


def now() -> datetime:
    return datetime.now(UTC)


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _moment(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _one_line(text: str) -> str:
    """Control characters (a pasted newline or tab) as spaces, runs of spaces as one: a name is one line."""
    return " ".join("".join(c if c.isprintable() else " " for c in text).split())


def clean_name(name: str | None) -> str:
    """The name as it is kept: on one line, stripped; markup is kept as text (pages show it escaped)."""
    cleaned = _one_line(name or "")
    if not cleaned:
        raise Refused("Give the search a name (1 to 200 characters).")
    if len(cleaned) > MAX_NAME_CHARS:
        raise Refused(f"A name is at most {MAX_NAME_CHARS} characters; this one has {len(cleaned):,}.")
    return cleaned


def clean_who(who: str | None) -> str:
    cleaned = _one_line(who or "")
    if len(cleaned) > MAX_WHO_CHARS:
        raise Refused(f"“Saved by” is at most {MAX_WHO_CHARS} characters; this one has {len(cleaned):,}.")
    return cleaned


@dataclass(frozen=True)
class Match:
    """A listing a saved search answered, as far as "what changed" follows it."""

    name: str | None = None
    start_price: float | None = None
    selling_status: str | None = None


@dataclass(frozen=True)
class Answer:
    """What a saved search answered at a moment: its matching listings by id, and how many matched in all (more
    than ``matches`` holds when only the first of very many were read)."""

    at: datetime
    matches: Mapping[str, Match] = field(default_factory=dict)
    total: int = 0
    history_at: datetime | None = None
    """The time of the deployment's newest history entry then, where it keeps history: a catalogue can hold
    entries timed after the clock (a simulated future), and those were part of this answer already."""

    @property
    def complete(self) -> bool:
        return self.total <= len(self.matches)

    def to_json(self) -> str:
        rows = {key: [m.name, m.start_price, m.selling_status] for key, m in self.matches.items()}
        data = {"at": iso(self.at), "total": self.total, "matches": rows}
        if self.history_at is not None:
            data["historyAt"] = iso(self.history_at)
        return json.dumps(data, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> Answer:
        data = json.loads(text)
        matches = {str(key): Match(*row) for key, row in data.get("matches", {}).items()}
        history_at = _moment(data["historyAt"]) if data.get("historyAt") else None
        return cls(_moment(data["at"]), matches, int(data.get("total", len(matches))), history_at)


@dataclass(frozen=True)
class Moved:
    """One matching listing whose start price or selling status differs from what was last seen."""

    listing_id: str
    name: str | None
    before: Any
    after: Any


@dataclass(frozen=True)
class WhatChanged:
    """Between two answers of one saved search: listings that came to match, that stopped (deleted, or changed so
    that they no longer match), and the price and status moves of those that matched both times."""

    new: list[tuple[str, Match]] = field(default_factory=list)
    gone: list[tuple[str, Match]] = field(default_factory=list)
    prices: list[Moved] = field(default_factory=list)
    statuses: list[Moved] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.new) + len(self.gone) + len(self.prices) + len(self.statuses)

    def summary(self) -> str:
        """``2 new, 1 gone, 3 price changes`` (``nothing changed`` when empty)."""
        parts = [
            (len(self.new), "new", "new"),
            (len(self.gone), "gone", "gone"),
            (len(self.prices), "price change", "price changes"),
            (len(self.statuses), "status change", "status changes"),
        ]
        said = [f"{n:,} {one if n == 1 else many}" for n, one, many in parts if n]
        return ", ".join(said) if said else "nothing changed"


def compare(before: Answer, after: Answer) -> WhatChanged:
    """What changed from ``before`` to ``after``, in ``after``'s order for new listings and ``before``'s for the
    rest."""
    changed = WhatChanged()
    for key, match in after.matches.items():
        if key not in before.matches:
            changed.new.append((key, match))
    for key, was in before.matches.items():
        match = after.matches.get(key)
        if match is None:
            changed.gone.append((key, was))
            continue
        if was.start_price != match.start_price:
            changed.prices.append(Moved(key, match.name or was.name, was.start_price, match.start_price))
        if was.selling_status != match.selling_status:
            changed.statuses.append(Moved(key, match.name or was.name, was.selling_status, match.selling_status))
    return changed


@dataclass(frozen=True)
class Alert:
    """A webhook subscription that serves a saved search, on the deployment it was made on."""

    deployment: str
    subscription_id: str
    saved_search_id: int
    event: str
    target_url: str
    fields: tuple[str, ...] | None
    created_at: datetime


@dataclass(frozen=True)
class SavedSearch:
    id: int
    name: str
    saved_by: str
    saved_at: datetime
    params: Mapping[str, str]
    """The filter state's address form."""
    version: str
    province: str
    listing_id: str | None
    """A watch: the saved search follows this one listing."""
    deployment: str
    answer: Answer | None
    """What it answered when last opened (None: never answered yet)."""

    @property
    def state(self) -> FilterState:
        state, _ = FilterState.from_params(dict(self.params))
        return state

    @property
    def last_opened(self) -> datetime:
        return self.answer.at if self.answer is not None else self.saved_at

    @property
    def changes_since(self) -> datetime:
        """Where its history starts: after everything its last answer had seen (``changes``' ``since`` is
        inclusive, to the millisecond)."""
        seen = self.answer.history_at if self.answer is not None else None
        return self.last_opened if seen is None else max(self.last_opened, seen + timedelta(milliseconds=1))

    def listing_filter(self, *, unit_level: bool = True) -> Expr | None:
        """The ``filterQuery`` it asks: the state's, and for a watch its one listing."""
        watched = filters.eq(WATCH_ATTRIBUTE, self.listing_id) if self.listing_id else None
        return filters.and_(self.state.listing_expression(unit_level=unit_level), watched)

    def unit_filter(self, *, unit_level: bool = True) -> Expr | None:
        return self.state.unit_expression() if unit_level else None

    @property
    def text(self) -> str:
        return self.state.text

    def address(self) -> dict[str, str]:
        """The Search page's address that reopens it: the filters, and the version and province when not the
        defaults."""
        params = dict(self.params)
        if self.version != "v1":
            params["version"] = self.version
        if self.province != "all":
            params["province"] = self.province
        return params


def _params_of(state: FilterState | Mapping[str, str]) -> dict[str, str]:
    params = state.to_params() if isinstance(state, FilterState) else dict(state)
    return {name: params[name] for name in PARAMS if params.get(name)}


# -- the file --------------------------------------------------------------------------------------------------


def _why(error: sqlite3.Error) -> str:
    text = str(error) or type(error).__name__
    if "readonly" in text or "read-only" in text:
        return "it is read-only here"
    if "unable to open" in text:
        return "it cannot be opened (its folder may be missing or not writable)"
    if "not a database" in text or "malformed" in text:
        return "it is not a readable SQLite file (damaged, or something else)"
    if "locked" in text or "busy" in text:
        return f"another dashboard kept it busy for more than {BUSY_TIMEOUT_S} s"
    return text


class SavedSearches:
    """The saved searches in one SQLite file (made on first write; reading a missing file finds none)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def _fail(self, doing: str, error: BaseException) -> Unavailable:
        reason = _why(error) if isinstance(error, sqlite3.Error) else (str(error) or type(error).__name__)
        return Unavailable(
            f"The saved searches file {self.path} could not be {doing}: {reason}. Nothing in it was changed; "
            "set PRECON_DASHBOARD_DB to a file this dashboard may write, or fix this one."
        )

    @contextmanager
    def _connection(self, write: bool) -> Iterator[sqlite3.Connection]:
        doing = "written" if write else "read"
        try:
            if write:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            with closing(sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)) as db:
                db.execute("PRAGMA foreign_keys=ON")
                if write:
                    use_wal(db, BUSY_TIMEOUT_S)
                    db.execute("BEGIN IMMEDIATE")
                    try:
                        self._migrate(db)
                        yield db
                        db.execute("COMMIT")
                    except BaseException:
                        db.execute("ROLLBACK")
                        raise
                else:
                    yield db
        except (Refused, NotFound):
            raise
        except (sqlite3.Error, OSError) as error:
            raise self._fail(doing, error) from error

    @staticmethod
    def _migrate(db: sqlite3.Connection) -> None:
        (version,) = db.execute("PRAGMA user_version").fetchone()
        if version > SCHEMA_VERSION:
            raise sqlite3.DatabaseError(f"it was written by a newer dashboard (layout {version})")
        if version < SCHEMA_VERSION:
            # One statement at a time: executescript would commit the write transaction this runs in.
            for statement in filter(str.strip, SCHEMA.split(";")):
                db.execute(statement)
            db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    def _read(self, sql: str, args: Sequence[Any] = ()) -> list[sqlite3.Row]:
        if not self.path.exists():
            return []
        with self._connection(write=False) as db:
            db.row_factory = sqlite3.Row
            try:
                return list(db.execute(sql, args))
            except sqlite3.OperationalError as error:
                if "no such table" in str(error):  # a file made but never written by us: nothing saved yet
                    return []
                raise

    # reading

    def all(self) -> list[SavedSearch]:
        """Every saved search, the most recently saved first."""
        return [_search(row) for row in self._read("SELECT * FROM saved_searches ORDER BY saved_at DESC, id DESC")]

    def get(self, search_id: int) -> SavedSearch:
        rows = self._read("SELECT * FROM saved_searches WHERE id = ?", (int(search_id),))
        if not rows:
            raise NotFound(search_id)
        return _search(rows[0])

    def alerts(self, deployment: str | None = None) -> list[Alert]:
        """The subscriptions serving saved searches (on one deployment, if named)."""
        where, args = ("WHERE deployment = ?", (deployment,)) if deployment else ("", ())
        rows = self._read(f"SELECT * FROM saved_search_alerts {where} ORDER BY created_at, subscription_id", args)
        return [_alert(row) for row in rows]

    # writing

    def save(
        self,
        name: str,
        state: FilterState | Mapping[str, str],
        *,
        deployment: str,
        saved_by: str | None = None,
        version: str = "v1",
        province: str = "all",
        listing_id: str | None = None,
        answer: Answer | None = None,
    ) -> SavedSearch:
        """A new saved search (the name and "saved by" checked first: a refused one writes nothing)."""
        values = (
            clean_name(name),
            clean_who(saved_by),
            iso(now()),
            json.dumps(_params_of(state), sort_keys=True),
            version,
            province,
            (listing_id or "").strip() or None,
            deployment,
            answer.to_json() if answer is not None else None,
        )
        with self._connection(write=True) as db:
            cursor = db.execute(
                "INSERT INTO saved_searches (name, saved_by, saved_at, params, version, province, listing_id, "
                "deployment, answer) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                values,
            )
            new_id = int(cursor.lastrowid or 0)
        return self.get(new_id)

    def _update(self, sql: str, args: Sequence[Any], search_id: int) -> None:
        with self._connection(write=True) as db:
            if db.execute(sql, (*args, int(search_id))).rowcount == 0:
                raise NotFound(search_id)

    def rename(self, search_id: int, name: str) -> None:
        self._update("UPDATE saved_searches SET name = ? WHERE id = ?", (clean_name(name),), search_id)

    def record_answer(self, search_id: int, answer: Answer) -> None:
        """What it answered on being opened (or marked as seen): the next "what changed" starts from it."""
        self._update("UPDATE saved_searches SET answer = ? WHERE id = ?", (answer.to_json(),), search_id)

    def delete(self, search_id: int) -> None:
        """The saved search and the record of its alerts (the subscriptions themselves are the caller's)."""
        self._update("DELETE FROM saved_searches WHERE id = ?", (), search_id)

    def add_alert(
        self,
        search_id: int,
        *,
        deployment: str,
        subscription_id: str,
        event: str,
        target_url: str,
        fields: Sequence[str] | None,
    ) -> None:
        with self._connection(write=True) as db:
            if db.execute("SELECT 1 FROM saved_searches WHERE id = ?", (int(search_id),)).fetchone() is None:
                raise NotFound(search_id)
            db.execute(
                "INSERT OR REPLACE INTO saved_search_alerts (deployment, subscription_id, saved_search_id, event, "
                "target_url, fields, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    deployment,
                    subscription_id,
                    int(search_id),
                    event,
                    target_url,
                    None if fields is None else json.dumps(list(fields)),
                    iso(now()),
                ),
            )

    def forget_alert(self, deployment: str, subscription_id: str) -> None:
        with self._connection(write=True) as db:
            db.execute(
                "DELETE FROM saved_search_alerts WHERE deployment = ? AND subscription_id = ?",
                (deployment, subscription_id),
            )


def _search(row: sqlite3.Row) -> SavedSearch:
    return SavedSearch(
        id=int(row["id"]),
        name=row["name"],
        saved_by=row["saved_by"] or "",
        saved_at=_moment(row["saved_at"]),
        params=_params_of(json.loads(row["params"] or "{}")),
        version=row["version"],
        province=row["province"],
        listing_id=row["listing_id"],
        deployment=row["deployment"],
        answer=Answer.from_json(row["answer"]) if row["answer"] else None,
    )


def _alert(row: sqlite3.Row) -> Alert:
    return Alert(
        deployment=row["deployment"],
        subscription_id=row["subscription_id"],
        saved_search_id=int(row["saved_search_id"]),
        event=row["event"],
        target_url=row["target_url"],
        fields=tuple(json.loads(row["fields"])) if row["fields"] else None,
        created_at=_moment(row["created_at"]),
    )


# -- alerts: what a deployment offers, and what a saved search asks of it ---------------------------------------

FIELD_CHOICES: dict[str, tuple[str, ...]] = {
    "price": ("startPrice", "price"),
    "status": ("sellingStatus", "status"),
}
"""The alert form's checkboxes as ``fields``: ``startPrice`` is the listing's and each floor plan's starting price and
``price`` a unit's; ``sellingStatus`` the listing's, ``status`` each floor plan's and each unit's (a unit selling)."""
ALERT_EVENTS = ("listing.matched", "listing.updated")


def alert_fields(choices: Sequence[str], everything: bool = False) -> list[str] | None:
    """The ``fields`` of the alert's subscriptions for the boxes ticked (None: every change is heard of)."""
    if everything:
        return None
    chosen = [name for choice in choices for name in FIELD_CHOICES[choice]]
    if not chosen:
        raise Refused("Tick what the alert is about: prices, statuses, or every change.")
    return list(dict.fromkeys(chosen))


def alert_problem(saved: SavedSearch) -> str | None:
    """Why this saved search cannot become a filtered subscription (None: it can)."""
    if saved.text:
        return (
            "It has search words, which a webhook subscription cannot follow (subscriptions take filters only): "
            "save the search without words to get alerts for it."
        )
    if saved.listing_filter() is None and saved.unit_filter() is None:
        return "It has no filter, so it would be every listing: add a filter to the search and save it again."
    return None


def offers_filtered_subscriptions(openapi: Mapping[str, Any]) -> bool:
    """Whether a deployment's OpenAPI document says that creating a webhook takes ``filterQuery``."""
    schemas = openapi.get("components", {}).get("schemas", {})
    for path, operations in openapi.get("paths", {}).items():
        if not str(path).rstrip("/").endswith("/webhooks") or not isinstance(operations, Mapping):
            continue
        body = operations.get("post", {}).get("requestBody", {})
        schema = body.get("content", {}).get("application/json", {}).get("schema", {})
        reference = str(schema.get("$ref", ""))
        if reference:
            schema = schemas.get(reference.rsplit("/", 1)[-1], {})
        if "filterQuery" in schema.get("properties", {}):
            return True
    return False
