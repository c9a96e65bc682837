"""(ours) What a ``market_stats`` request asks of the store: its intervals (calendar months or quarters in UTC,
from the one holding ``since`` to the one holding ``until``) and its groups (the listings that match its filters
now, by their values of ``groupBy``), each checked as the other listing operations check theirs."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any, cast

from fastapi import Query

from precon.filters import And, Compare, Expr, Match
from precon.schema import ATTRIBUTE_ALIASES, LISTING_ATTRIBUTES
from precon.service.api.parameters import Blank, Bounded, UnitFilter
from precon.service.api.requests import ListingReader, ListingRequest, Searching, listing_query, moment
from precon.service.api.visibility import visible_attribute
from precon.service.errors import bad_request
from precon.service.search.facets import ArrayFacet, NestedFacet, NumericFacet, ScalarFacet, facet_for
from precon.service.stores.market_stats import PLAN_GROUPS, MarketGroup
from precon.service.stores.types import ListingQuery

if TYPE_CHECKING:
    from precon.service.api.calls import Call


class MarketInterval(StrEnum):
    month = "month"
    quarter = "quarter"


MAX_GROUPS = 50
DEFAULT_GROUPS = 10


class MarketRequest(ListingReader, Searching):
    """Every parameter of ``market_stats``: the listing family's filters (read as theirs), and the figures'
    intervals and groups, declared here, the only operation that takes them."""

    unitFilter: UnitFilter = None
    groupBy: Annotated[
        str | None,
        Query(
            pattern=r"^[^,*]*$",
            max_length=256,
            description="(ours) One facetable attribute of the listing: a series per value (a listing counts in each "
            "of its values), or `floorPlans.numberOfBedrooms`, `floorPlans.numberOfBathrooms`, "
            "`floorPlans.floorPlanType` or `floorPlans.planCategory`: a series per value over the units of the plans "
            "holding it; one series without it",
        ),
    ] = None
    groupLimit: Annotated[
        Bounded[int, 1, MAX_GROUPS] | None,
        Blank,
        Query(
            description=f"(ours) With `groupBy`: its most frequent values among the matches (default {DEFAULT_GROUPS})"
        ),
    ] = None
    interval: Annotated[
        MarketInterval | None,
        Blank,
        Query(description="(ours) `month` (default) or `quarter`: calendar intervals in UTC"),
    ] = None
    since: Annotated[
        str | None,
        Query(
            max_length=64,
            description="(ours) From the interval holding this time (ISO or Unix seconds); default: 12 months or 8 "
            "quarters up to `until`'s",
        ),
    ] = None
    until: Annotated[
        str | None,
        Query(
            max_length=64,
            description="(ours) To the interval holding this time (ISO or Unix seconds; default now); at most 10 "
            "years after `since`",
        ),
    ] = None


MARKET_STATS = MarketRequest.accepting(
    "market_stats",
    *("product_id", "filterQuery", "unitFilter", "search", "groupBy", "groupLimit", "interval", "since", "until"),
)

MONTHS = {"month": 1, "quarter": 3}
DEFAULT_INTERVALS = {"month": 12, "quarter": 8}
"""Without ``since``: this many intervals, ending with ``until``'s."""
MAX_YEARS = 10


def _shifted(start: datetime, months: int) -> datetime:
    """The first of the month ``months`` after ``start``'s (before it, when negative)."""
    index = start.year * 12 + start.month - 1 + months
    return datetime(index // 12, index % 12 + 1, 1, tzinfo=UTC)


def _interval_start(at: datetime, months: int) -> datetime:
    return datetime(at.year, (at.month - 1) // months * months + 1, 1, tzinfo=UTC)


def _time(raw: str | None, name: str) -> datetime | None:
    written = moment(raw, name)
    return None if written is None else datetime.fromisoformat(written.replace("Z", "+00:00"))


def boundaries(interval: str, since_raw: str | None, until_raw: str | None, now: datetime | None = None) -> list[int]:
    """The intervals' starts and the last one's end, in Unix milliseconds; a 400 for ``since`` after ``until``
    or more than :data:`MAX_YEARS` apart."""
    months = MONTHS[interval]
    since, until = _time(since_raw, "since"), _time(until_raw, "until")
    until = until or now or datetime.now(UTC)
    if since is None:
        since = _shifted(_interval_start(until, months), -months * (DEFAULT_INTERVALS[interval] - 1))
    if since > until:
        raise bad_request(f"since ({since_raw}) is after until ({until_raw or 'now'})")
    if until > _years_after(since, MAX_YEARS):
        raise bad_request(
            f"until ({until_raw or 'now'}) is more than {MAX_YEARS} years after since ({since_raw}): ask for at most "
            f"{MAX_YEARS} years"
        )
    starts = [_interval_start(since, months)]
    while starts[-1] <= until:
        starts.append(_shifted(starts[-1], months))
    return [int(start.timestamp() * 1000) for start in starts]


def _years_after(at: datetime, years: int) -> datetime:
    try:
        return at.replace(year=at.year + years)
    except ValueError:  # 29 February
        return at.replace(year=at.year + years, day=28)


def group_attribute(version: str, raw: str | None) -> str | None:
    """``groupBy``, checked: a facetable attribute of the listing itself, or one of its floor plans' in
    :data:`PLAN_GROUPS`, visible under ``version``; None when not given."""
    name = (raw or "").strip()
    if not name:
        return None
    if ATTRIBUTE_ALIASES.get(name, name) not in LISTING_ATTRIBUTES:
        raise bad_request(f"groupBy: {name!r} is not a facetable attribute")
    visible_attribute(version, name, "groupBy")
    if ATTRIBUTE_ALIASES.get(name, name) in PLAN_GROUPS:
        return ATTRIBUTE_ALIASES.get(name, name)
    if isinstance(facet_for(name), NestedFacet) or "." in ATTRIBUTE_ALIASES.get(name, name):
        raise bad_request(
            f"groupBy: {name!r} is an attribute of floor plans; group by an attribute of the listing or by one of "
            + ", ".join(PLAN_GROUPS)
        )
    if not isinstance(facet_for(name), ScalarFacet | ArrayFacet | NumericFacet):
        raise bad_request(f"groupBy: {name!r} cannot group listings")
    return name


def _value_test(name: str, value: str) -> Expr:
    """The filter that keeps the listings holding ``value`` (a facet's key) of the attribute ``name``."""
    if isinstance(facet_for(name), NumericFacet) and value not in ("true", "false"):
        return Compare(name, "=", float(value))
    return Match(name, value)


def _listing_ids(call: Call[Any], query: ListingQuery) -> tuple[str, ...]:
    """The listings the query matches now, and the deleted ones whose last document matched."""
    return (*call.store.matching_listing_ids(query), *call.store.deleted_matching(query))


def market_groups(call: Call[MarketRequest]) -> tuple[str | None, list[MarketGroup], Expr | None]:
    """The attribute grouped by, each group with the listings it holds (one group, ``None``, without one), and the
    ``unitFilter``: ``filterQuery`` and ``search`` choose listings, a ``unitFilter`` their units (so it does not
    narrow the listings to those with a plan that meets it now)."""
    asked = call.params
    name = group_attribute(call.version, asked.groupBy)
    checked = listing_query(cast("Call[ListingRequest]", call), facets=(), limit=0)
    unit_filter, query = checked.unit_filter, replace(checked, unit_filter=None)
    if name is None:
        return None, [MarketGroup(None, _listing_ids(call, query))], unit_filter
    limit = DEFAULT_GROUPS if asked.groupLimit is None else asked.groupLimit
    counted = call.store.search_listings(replace(query, facets=(name,), max_facet_values=limit))
    groups = []
    for value, _ in counted.facets.get(name, []):
        test = _value_test(name, value)
        narrowed = replace(query, filter=test if query.filter is None else And((query.filter, test)))
        plan = (name, value) if name in PLAN_GROUPS else None
        groups.append(MarketGroup(value, _listing_ids(call, narrowed), plan))
    return name, groups, unit_filter
