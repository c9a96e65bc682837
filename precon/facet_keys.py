"""The key a facet counts a value under, and the order facet values come in: one copy for both sides of precon.

The service counts facets over its index (:mod:`precon.service.search.facets`); the client counts them itself over
the listings it holds when a deployment cannot filter floor plans
(:func:`precon.dashboard.listing_search.count_facets`), and counts profile documents the same way. A page's counts must
not change with the way it was answered, so both name a value alike (``true``, ``450000`` rather than ``450000.0``) and
rank alike, from here. Nothing here imports the service: the client side may not.
"""

from __future__ import annotations

from collections.abc import Iterable

MAX_FACET_VALUES = 100
"""At most this many values per facet, the most frequent first, ties by value."""


def bool_key(value: object) -> str:
    """A boolean (or a stored 0 or 1) as JSON writes it, the way a filter names it."""
    return "true" if value else "false"


def number_key(value: float) -> str:
    """A number as its key: integral numbers without a decimal point (``450000``), others as Python writes them
    (``1.5``). An ``int`` is written whole, however large: a float would round it."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def facet_key(value: object) -> str | None:
    """The key one value of a record counts under; a reference to a profile counts under the profile's path. None
    for what no facet counts (a record, a list)."""
    if isinstance(value, bool):
        return bool_key(value)
    if isinstance(value, int | float):
        return number_key(value)
    if isinstance(value, str):
        return str(value)
    path = getattr(value, "path", None)
    return path if isinstance(path, str) else None


def by_count(item: tuple[str, int]) -> tuple[int, str]:
    """The sort key of a counted value: the highest count first, ties by value, so that every engine agrees."""
    return -item[1], item[0]


def top(counted: Iterable[tuple[str, int]], limit: int | None = MAX_FACET_VALUES) -> list[tuple[str, int]]:
    """Counted (key, count) pairs ranked by :func:`by_count`, the first ``limit`` of them (None: all)."""
    ranked = sorted(counted, key=by_count)
    return ranked if limit is None else ranked[:limit]
