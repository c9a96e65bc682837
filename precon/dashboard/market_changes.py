"""What moved in the market, read from the catalogue's history (``changes``): launches, sell-outs, start price
increases and cuts, and units sold; their counts, the median size of the price moves, and a count per week.

Nothing here asks the service or draws anything: the dashboard's Changes page fetches the entries (only those each
figure needs, :data:`QUERIES`), and this module says what they mean.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from precon.client.models import HistoryEntry

LAUNCH, SELL_OUT, INCREASE, CUT, UNIT_SOLD = "launch", "sellout", "increase", "cut", "unitsold"
KINDS = (LAUNCH, SELL_OUT, INCREASE, CUT, UNIT_SOLD)
KIND_LABELS = {
    LAUNCH: "Launches",
    SELL_OUT: "Sell-outs",
    INCREASE: "Price increases",
    CUT: "Price cuts",
    UNIT_SOLD: "Units sold",
}
QUERIES: tuple[Mapping[str, str], ...] = (
    {"scope": "listing", "fields": "sellingStatus", "change": "updated"},
    {"scope": "listing", "fields": "startPrice", "change": "updated"},
    {"scope": "unit", "fields": "status", "change": "updated"},
)
"""The ``changes`` narrowings that hold every entry a kind is made of: a year of a large catalogue is mostly other
fields, which the page then never reads."""
PENDING, SELLING_NOW, SOLD_OUT, SOLD = "Pending", "Selling Now", "Sold Out", "Sold"


@dataclass(frozen=True)
class MarketChange:
    """An entry of the history that is one of :data:`KINDS`; ``percent`` is a price move's size."""

    kind: str
    entry: HistoryEntry
    percent: float | None = None


def _price(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if value > 0 else None


def classify(entry: HistoryEntry) -> MarketChange | None:
    """The kind of market change an entry is, or None for one that is none of them.

    A start price that appears or goes (contact for pricing) is no increase or cut: there is nothing to compare.
    """
    if entry.change != "updated":
        return None
    if entry.scope == "listing" and entry.field == "sellingStatus":
        if entry.before == PENDING and entry.after == SELLING_NOW:
            return MarketChange(LAUNCH, entry)
        if entry.after == SOLD_OUT and entry.before != SOLD_OUT:
            return MarketChange(SELL_OUT, entry)
        return None
    if entry.scope == "listing" and entry.field == "startPrice":
        before, after = _price(entry.before), _price(entry.after)
        if before is None or after is None or before == after:
            return None
        percent = (after - before) / before * 100
        return MarketChange(INCREASE if after > before else CUT, entry, percent)
    if entry.scope == "unit" and entry.field == "status" and entry.after == SOLD and entry.before != SOLD:
        return MarketChange(UNIT_SOLD, entry)
    return None


def market_changes(entries: Iterable[HistoryEntry]) -> list[MarketChange]:
    """The market changes among ``entries``, newest first (ties in the order given)."""
    found = [change for change in map(classify, entries) if change is not None]
    return sorted(found, key=lambda change: _moment(change.entry), reverse=True)


def _moment(entry: HistoryEntry) -> datetime:
    return entry.at if entry.at is not None else datetime.min.replace(tzinfo=UTC)


@dataclass(frozen=True)
class Summary:
    counts: Mapping[str, int]
    median_increase: float | None
    """The median increase in per cent (positive); None without one."""
    median_cut: float | None
    """The median cut in per cent (negative); None without one."""


def summarize(changes: Iterable[MarketChange]) -> Summary:
    return tally((change.kind, change.percent) for change in changes)


def tally(kinds: Iterable[tuple[str, float | None]]) -> Summary:
    """Counts per kind and the median price moves, from (kind, percent) pairs."""
    pairs = list(kinds)
    counts = Counter(kind for kind, _ in pairs)
    increases = [p for kind, p in pairs if kind == INCREASE and p is not None and not math.isnan(p)]
    cuts = [p for kind, p in pairs if kind == CUT and p is not None and not math.isnan(p)]
    return Summary(
        {kind: counts.get(kind, 0) for kind in KINDS},
        statistics.median(increases) if increases else None,
        statistics.median(cuts) if cuts else None,
    )


def week_of(moment: datetime) -> date:
    """The Monday of the (UTC) week a moment falls in."""
    day = moment.astimezone(UTC).date()
    return day - timedelta(days=day.weekday())


def weekly(changes: Iterable[MarketChange]) -> dict[tuple[date, str], int]:
    """Changes per (week's Monday, kind)."""
    return weekly_counts((c.entry.at, c.kind) for c in changes if c.entry.at is not None)


def weekly_counts(moments: Iterable[tuple[datetime, str]]) -> dict[tuple[date, str], int]:
    """(moment, kind) pairs counted per (week's Monday, kind)."""
    return dict(Counter((week_of(at), kind) for at, kind in moments))


def week_starts(first: date, last: date) -> list[date]:
    """The Mondays of every week from ``first``'s to ``last``'s, so that a quiet week is drawn as one."""
    monday, weeks = first - timedelta(days=first.weekday()), []
    while monday <= last:
        weeks.append(monday)
        monday += timedelta(days=7)
    return weeks


# -- the window --------------------------------------------------------------------------------------------------

PRESET_DAYS = (7, 30, 90, 365)
DEFAULT_DAYS = 30


@dataclass(frozen=True)
class Window:
    """The days a page looks at: the last ``days`` (to now), or the dates ``start`` to ``end``, both included."""

    days: int | None = DEFAULT_DAYS
    start: date | None = None
    end: date | None = None

    @property
    def explicit(self) -> bool:
        return self.days is None

    def bounds(self, today: date) -> tuple[datetime | None, datetime | None]:
        """``since`` and ``until``: the last N days start at midnight (UTC), so the window is the same all day."""
        if self.days is not None:
            return datetime.combine(today - timedelta(days=self.days), time(), UTC), None
        since = datetime.combine(self.start, time(), UTC) if self.start else None
        until = datetime.combine(self.end, time.max, UTC) if self.end else None
        return since, until

    def to_params(self) -> dict[str, str]:
        """The window in the address: nothing for the default."""
        if self.days is not None:
            return {} if self.days == DEFAULT_DAYS else {"window": str(self.days)}
        params = {}
        if self.start:
            params["from"] = self.start.isoformat()
        if self.end:
            params["to"] = self.end.isoformat()
        return params

    def describe(self) -> str:
        if self.days is not None:
            return f"the last {self.days} days"
        if self.start and self.end:
            return f"{self.start:%-d %b %Y} to {self.end:%-d %b %Y}"
        if self.start:
            return f"since {self.start:%-d %b %Y}"
        return f"up to {self.end:%-d %b %Y}" if self.end else "all time"


def _date(text: str, name: str, problems: list[str]) -> date | None:
    try:
        return date.fromisoformat(text.strip())
    except ValueError:
        problems.append(f"The {name} date “{text}” is not a date like 2026-11-01, so it was left out.")
        return None


def window_from_params(params: Mapping[str, str]) -> tuple[Window, list[str]]:
    """The window an address names, and what in it could not be used (sentences to show); the default in its place."""
    problems: list[str] = []
    start_text, end_text = params.get("from"), params.get("to")
    if start_text or end_text:
        start = _date(start_text, "start", problems) if start_text else None
        end = _date(end_text, "end", problems) if end_text else None
        if start and end and end < start:
            problems.append(f"The window ends ({end:%-d %b %Y}) before it starts ({start:%-d %b %Y}).")
            return Window(), [*problems, f"Showing the last {DEFAULT_DAYS} days instead."]
        if start or end:
            return Window(None, start, end), problems
        return Window(), [*problems, f"Showing the last {DEFAULT_DAYS} days instead."]
    text = params.get("window")
    if text is None:
        return Window(), problems
    if text.strip().isdigit() and int(text) in PRESET_DAYS:
        return Window(int(text)), problems
    choices = ", ".join(str(days) for days in PRESET_DAYS)
    return Window(), [f"The window “{text}” is not one of {choices} days: showing the last {DEFAULT_DAYS} days."]


def iso(moment: datetime | None) -> str | None:
    """A moment as ``changes`` reads it: ``2026-11-01T00:00:00.000Z``."""
    if moment is None:
        return None
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
