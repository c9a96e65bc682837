"""Exact orders the service does not offer, computed over every match without reading every match.

The service orders by relevance only (with no search words: featured first, then last updated). Other orders:

* by a number (price, completion year): the service counts matches at or below a value (``perPage=0``), so a
  bisection finds the value range holding the page's ranks; only that window's keys are read and ordered. Ties keep
  the relevance order; listings without the value come last, in relevance order.
* newest (last updated): without search words the service's own order is newest-first within featured and within
  the others, so the two streams are merged; with search words the last-updated dates of the :data:`NEWEST_LIMIT`
  most relevant matches are read and ordered (``limited`` says so when there are more).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from precon import filters
from precon.client.models import Listing, ListingPage
from precon.filters import Expr

WINDOW = 1000
"""Keys read at once when ordering: the service's largest page."""
FAR = 1e15
"""Beyond any price or year."""
NEWEST_LIMIT = 10_000
"""With search words, "newest" orders this many of the most relevant matches."""
NUMERIC_SORTS: dict[str, tuple[str, bool]] = {
    "price_asc": ("startPrice", False),
    "price_desc": ("startPrice", True),
    "completion": ("completionYear", False),
}


class ListingBackend(Protocol):
    """What ordering and searching need of the service: :class:`precon.client.Client` is one, and the dashboard
    passes one whose answers come through its cache."""

    def search_listings(self, search: str | None = None, **arguments: Any) -> ListingPage: ...

    def multiple_listings(self, ids: Sequence[str], **arguments: Any) -> list[Listing]: ...


def updated_key(listing: Listing) -> float:
    return listing.updatedAt.timestamp() if isinstance(listing.updatedAt, datetime) else float("-inf")


def ids_of(rows: Sequence[Listing]) -> list[str]:
    return [lst.id for lst in rows if lst.id]


def _number(value: float) -> float | int:
    return int(value) if float(value).is_integer() else value


@dataclass
class ServiceOrdering:
    """Ranks of the matches of ``text`` + a filter (+ ``unit_filter``, ANDed by the service) in an exact order."""

    backend: ListingBackend
    text: str
    unit_filter: Expr | None = None

    def _search(self, **arguments: Any) -> ListingPage:
        if self.unit_filter is not None:
            arguments["unit_filter"] = self.unit_filter
        return self.backend.search_listings(self.text or None, **arguments)

    def count(self, expression: Expr | None) -> int:
        return self._search(per_page=0, filter=expression).total

    def slice(self, expression: Expr | None, offset: int, count: int, attrs: Sequence[str]) -> list[Listing]:
        """Matches at ranks ``[offset, offset + count)`` of the service's own order, with only ``attrs``."""
        if count <= 0:
            return []
        per_page = min(WINDOW, count)
        found: list[Listing] = []
        for number in range(offset // per_page, (offset + count - 1) // per_page + 1):
            page = self._search(page=number, per_page=per_page, filter=expression, retrieve_attributes=list(attrs))
            start = number * per_page
            found += [lst for i, lst in enumerate(page.results, start) if offset <= i < offset + count]
            if len(page.results) < per_page:
                break
        return found

    # -- by a number ---------------------------------------------------------------------------------------------

    def numeric_page(
        self, base: Expr | None, attr: str, descending: bool, first: int, last: int, high_value: float = FAR
    ) -> list[str]:
        """Ids at ranks ``[first, last)`` ordered by ``attr`` (ties and the rest in relevance order).

        A value counts when it is above zero (a price of 0 means "contact for pricing"); the others come last.
        ``high_value`` is the data's largest value if known (it is checked; a wrong one costs a wider search).
        """
        keyed = filters.compare(attr, ">", 0)
        with_key = filters.and_(base, keyed)
        keyed_total = self.count(with_key)
        ids: list[str] = []
        if first < keyed_total:
            ids += self._keyed_slice(with_key, attr, descending, first, min(last, keyed_total), keyed_total, high_value)
        if last > keyed_total:
            start = max(first, keyed_total)
            without_key = filters.and_(base, filters.not_(keyed))
            ids += ids_of(self.slice(without_key, start - keyed_total, last - start, ["listingId"]))
        return ids

    def _keyed_slice(
        self,
        with_key: Expr | None,
        attr: str,
        descending: bool,
        first: int,
        last: int,
        keyed_total: int,
        high_value: float,
    ) -> list[str]:
        # Positions u along the order: u = value ascending, u = -value descending. prefix(u) holds the first C(u).
        def prefix(u: float) -> Expr:
            return filters.compare(attr, ">=", _number(-u)) if descending else filters.compare(attr, "<=", _number(u))

        counted: dict[float, int] = {}

        def at_or_before(u: float) -> int:
            if u not in counted:
                counted[u] = self.count(filters.and_(with_key, prefix(u)))
            return counted[u]

        # The ends of the line: nothing is before the first, everything keyed is before the last.
        if descending:
            low_u, high_u = float(-math.floor(high_value) - 1), 0.0
            counted[high_u] = keyed_total
            if at_or_before(low_u) != 0:
                low_u = -FAR
                counted[low_u] = 0
        else:
            low_u, high_u = 0.0, float(math.ceil(high_value))
            counted[low_u] = 0
            if at_or_before(high_u) < keyed_total:
                high_u = FAR
                counted[high_u] = keyed_total
        # The last position with at most `first` before it, and the first with at least `last`: bisection on counts.
        left, right = low_u, high_u
        while at_or_before(right) - at_or_before(left) > WINDOW // 2 and right - left > 1:
            middle = math.floor((left + right) / 2)
            if at_or_before(middle) <= first:
                left = middle
            else:
                right = middle
        lower = left
        left = max((u for u, c in counted.items() if c < last), default=lower)
        right = min((u for u, c in counted.items() if c >= last), default=high_u)
        while at_or_before(right) - at_or_before(left) > WINDOW // 2 and right - left > 1:
            middle = math.floor((left + right) / 2)
            if at_or_before(middle) >= last:
                right = middle
            else:
                left = middle
        upper = right
        before = at_or_before(lower)
        window = filters.and_(with_key, filters.not_(prefix(lower)), prefix(upper))
        rows = self.slice(window, 0, at_or_before(upper) - before, ["listingId", attr])
        rows.sort(key=lambda lst: getattr(lst, attr) or 0, reverse=descending)  # stable: ties keep relevance order
        return ids_of(rows[first - before : last - before])

    # -- newest first --------------------------------------------------------------------------------------------

    def newest_page(self, base: Expr | None, total: int, first: int, last: int) -> tuple[list[str], bool]:
        """Ids at ranks ``[first, last)`` by last update, newest first; and whether only the best matches were
        ordered (with search words, past :data:`NEWEST_LIMIT`)."""
        if self.text:
            limit = min(total, NEWEST_LIMIT)
            ordered: list[str] = []
            if first < limit:
                rows = self.slice(base, 0, limit, ["listingId", "updatedAt"])
                rows.sort(key=updated_key, reverse=True)
                ordered = ids_of(rows[first : min(last, limit)])
            if last > limit:  # past the best NEWEST_LIMIT matches: the rest in relevance order
                start = max(first, limit)
                ordered += ids_of(self.slice(base, start, last - start, ["listingId"]))
            return ordered, total > limit
        featured = filters.and_(base, filters.eq("isFeatured", True))
        others = filters.and_(base, filters.not_(filters.eq("isFeatured", True)))
        featured_total = self.count(featured)
        if featured_total in (0, total):
            return ids_of(self.slice(base, first, last - first, ["listingId"])), False
        # Both streams come newest first: find how many featured ones are among the newest `first` (a binary search
        # reading single entries), then merge the two runs that follow.
        others_total = total - featured_total

        def when(stream: Expr | None, rank: int) -> float:
            return updated_key(self.slice(stream, rank, 1, ["listingId", "updatedAt"])[0])

        low, high = max(0, first - others_total), min(first, featured_total)
        while low < high:
            taken = (low + high + 1) // 2  # featured among the first `first`
            if first - taken < others_total and when(featured, taken - 1) < when(others, first - taken):
                high = taken - 1
            else:
                low = taken
        taken, size, attrs = low, last - first, ["listingId", "updatedAt"]
        rows = self.slice(featured, taken, min(size, featured_total - taken), attrs)
        rows += self.slice(others, first - taken, min(size, others_total - first + taken), attrs)
        rows.sort(key=updated_key, reverse=True)
        return ids_of(rows[:size]), False


def sort_rows(listings: Sequence[Listing], sort: str) -> list[Listing]:
    """Listings already in the service's order, put in ``sort``'s order the way :class:`ServiceOrdering` does."""
    if sort == "newest":
        return sorted(listings, key=updated_key, reverse=True)
    if sort in NUMERIC_SORTS:
        attr, descending = NUMERIC_SORTS[sort]
        keyed = [lst for lst in listings if (getattr(lst, attr) or 0) > 0]
        rest = [lst for lst in listings if (getattr(lst, attr) or 0) <= 0]
        return sorted(keyed, key=lambda lst: getattr(lst, attr), reverse=descending) + rest
    return list(listings)
