"""What the Market page asks for, read from its address and written back: the interval (months or quarters), the
period (first and last month) and the grouping; and what the page shows of an answer, computed from its points
(launches gathered by quarter, a series' totals, the groups kept for the charts).

No Streamlit here: the page (``views/market.py``) and its pieces (``components/market_stats.py``) stand on it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

MONTH, QUARTER = "month", "quarter"
INTERVALS = (MONTH, QUARTER)
DEFAULT_MONTHS = 24
"""The default period: the last two years, month by month."""
MAX_YEARS = 10
"""The service answers at most ten years at once (contract.md, "Market statistics")."""

GROUPS: dict[str, tuple[str, str]] = {
    "city": ("cityOrDistrict", "City"),
    "builder": ("builders", "Builder"),
    "type": ("type", "Building type"),
    "bedrooms": ("floorPlans.numberOfBedrooms", "Bedrooms"),
}
"""The page's groupings: the address's name, the attribute the service groups by, the label."""
PARAMS = ("interval", "since", "until", "groupBy")


def _month(text: str) -> date | None:
    """``2025-03`` or ``2025-03-14`` as the first day of its month; None when it is neither."""
    for layout in ("%Y-%m", "%Y-%m-%d"):
        try:
            return datetime.strptime(text, layout).date().replace(day=1)
        except ValueError:
            continue
    return None


def add_months(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 + months
    return date(index // 12, index % 12 + 1, 1)


def month_end(day: date) -> datetime:
    """The last moment of ``day``'s month (UTC)."""
    following = add_months(day.replace(day=1), 1)
    return datetime(following.year, following.month, 1, tzinfo=UTC) - timedelta(seconds=1)


@dataclass(frozen=True)
class MarketRequest:
    """The page's question: ``first`` and ``last`` are the first days of the period's first and last months."""

    interval: str
    first: date
    last: date
    group: str | None = None

    @property
    def group_by(self) -> str | None:
        """The attribute the service groups by."""
        return GROUPS[self.group][0] if self.group else None

    @property
    def group_label(self) -> str | None:
        return GROUPS[self.group][1] if self.group else None

    def since(self) -> str:
        return f"{self.first.isoformat()}T00:00:00Z"

    def until(self) -> str:
        return month_end(self.last).strftime("%Y-%m-%dT%H:%M:%SZ")

    def describe(self) -> str:
        span = f"{self.first:%b %Y} to {self.last:%b %Y}"
        return f"{span}, by {self.interval}" + (f", by {self.group_label.lower()}" if self.group_label else "")

    def to_params(self, today: date) -> dict[str, str]:
        """The address parameters that differ from the default."""
        params: dict[str, str] = {}
        if self.interval != MONTH:
            params["interval"] = self.interval
        default = default_request(today)
        if (self.first, self.last) != (default.first, default.last):
            params["since"], params["until"] = f"{self.first:%Y-%m}", f"{self.last:%Y-%m}"
        if self.group:
            params["groupBy"] = self.group
        return params


def default_request(today: date) -> MarketRequest:
    last = today.replace(day=1)
    return MarketRequest(MONTH, add_months(last, 1 - DEFAULT_MONTHS), last)


def request_from_params(params: Mapping[str, str], today: date) -> tuple[MarketRequest, list[str]]:
    """The request an address asks for, and a sentence for each value that could not be used (the default is used
    in its place)."""
    default = default_request(today)
    problems: list[str] = []
    interval = params.get("interval") or MONTH
    if interval not in INTERVALS:
        problems.append(f"The interval “{interval}” is not one of month or quarter; showing months.")
        interval = MONTH
    group = params.get("groupBy") or None
    if group is not None and group not in GROUPS:
        problems.append(
            f"“{group}” is not a grouping this page offers ({', '.join(GROUPS)}); showing the market whole."
        )
        group = None
    first, last = default.first, default.last
    since, until = params.get("since"), params.get("until")
    if since or until:
        asked_first = _month(since) if since else default.first
        asked_last = _month(until) if until else default.last
        if asked_first is None or asked_last is None:
            problems.append("The period's months are written as 2025-03; showing the last two years.")
        elif asked_first > asked_last:
            problems.append("The period starts after it ends; showing the last two years.")
        elif add_months(asked_first, 12 * MAX_YEARS) <= asked_last:
            problems.append(f"The period is longer than {MAX_YEARS} years; showing the last two years.")
        else:
            first, last = asked_first, asked_last
    return MarketRequest(interval, first, last, group), problems


def quarter_of(day: date) -> date:
    return date(day.year, (day.month - 1) // 3 * 3 + 1, 1)


def quarter_label(day: date) -> str:
    return f"Q{(day.month - 1) // 3 + 1} {day.year}"


def interval_label(day: date, interval: str) -> str:
    return quarter_label(day) if interval == QUARTER else f"{day:%b %Y}"


SO_FAR = " (so far)"
"""What a chart adds to the label of the interval in progress: ``Dec 2026 (so far)``."""


def interval_end(start: date, interval: str) -> date:
    """The first day after the interval starting on ``start``."""
    return add_months(start, 3 if interval == QUARTER else 1)


def in_progress(start: date, interval: str, today: date) -> bool:
    """Whether the interval starting on ``start`` holds ``today``: its figures are partial, to today."""
    return start <= today < interval_end(start, interval)
