"""Version and province scoping, in one place: what a call may name and which listings it may see.

Every listing operation reads the attributes a request names through :func:`visible_attribute`: ``filterQuery``
(each attribute path of the expression, see :func:`listing_filter`), ``unitFilter`` (the floor plans it filters,
see :func:`precon.service.api.units.unit_filter`), ``facets`` and ``facet`` (:func:`listing_facets`) and
``retrieveAttributes`` (:func:`listing_shaper`). Under ``v1-lite`` a name whose top-level field is not a lite
field is a 400 that names the parameter and the name: a filter or a facet on a hidden field would reveal it.

Every answer that lists listings by id (a profile's ``listings``, inline or expanded, and the profiles a listing's
``referrences`` expand) is trimmed by :func:`trim_profile_listings` to the listings the call may see: those in the
path's province, and in the provinces the key is granted for the version (:attr:`Call.provinces`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from precon import filters
from precon.filters import Expr
from precon.schema import ATTRIBUTE_ALIASES, DEFAULT_FACETS, LISTING_ATTRIBUTES, SEARCHABLE_LISTING_FIELDS
from precon.service.api.visibility import check_expression, is_visible, visible_attribute
from precon.service.errors import bad_request
from precon.service.search.text import TextQuery

if TYPE_CHECKING:
    from precon.service.api.calls import Call


def names(raw: str | None) -> list[str]:
    """A comma-separated list, blanks dropped, order kept, duplicates once."""
    return list(dict.fromkeys(part.strip() for part in (raw or "").split(",") if part.strip()))


LISTING_PREFIX = "Listings/"
LOOKUP_CHUNK = 900
"""Listing ids per look-up (SQLite's historical limit on bound parameters is 999)."""


def listing_filter(version: str, raw: str | None) -> Expr | None:
    """A ``filterQuery`` over listings, parsed and scoped to what ``version`` may name."""
    try:
        expression = filters.parse(raw)
    except filters.FilterSyntaxError as error:
        raise bad_request(str(error)) from None
    return check_expression(version, expression, "filterQuery")


def filter_or_none(raw: str | None) -> Expr | None:
    """A ``filterQuery`` parsed, for deciding where its search runs; None where there is none or it does not parse
    (it is refused where it is read: :func:`listing_filter`)."""
    try:
        return filters.parse(raw)
    except filters.FilterSyntaxError:
        return None


def text_in_some_fields(version: str) -> bool:
    """Whether ``version`` hides a searchable field, so that its text queries are matched in the others only."""
    return not all(is_visible(version, name) for name in SEARCHABLE_LISTING_FIELDS)


def listing_text(version: str, raw: str | None) -> TextQuery | None:
    """A ``search``, matched only in the searchable fields ``version`` shows: under ``v1-lite`` a word of a hidden
    ``summary`` or ``amenities`` finds nothing, as the field itself is not there to see."""
    text = TextQuery.parse(raw or "")
    if text is None or not text_in_some_fields(version):
        return text
    return replace(text, columns=tuple(name for name in SEARCHABLE_LISTING_FIELDS if is_visible(version, name)))


def listing_facets(version: str, names: Sequence[str], where: str = "facets") -> tuple[str, ...]:
    """The facets asked for, validated and scoped: a hidden name is a 400; ``*`` is every default facet the
    version shows."""

    for name in names:
        if name != "*":
            visible_attribute(version, name, where)
    chosen = facet_names(list(names))
    return tuple(name for name in chosen if is_visible(version, name))


def listing_id_of(path: Any) -> str | None:
    """The id of a ``Listings/<id>`` path, else None."""
    if isinstance(path, str) and path.startswith(LISTING_PREFIX) and len(path) > len(LISTING_PREFIX):
        return path[len(LISTING_PREFIX) :]
    return None


def visible_listings(call: Call, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The stored records of those of ``ids`` the call may see, by id."""
    wanted = sorted(set(ids))
    provinces: Sequence[str | None] = [None] if call.provinces is None else sorted(call.provinces)
    found: dict[str, dict[str, Any]] = {}
    for province in provinces:
        for start in range(0, len(wanted), LOOKUP_CHUNK):
            found.update(call.store.get_listings(wanted[start : start + LOOKUP_CHUNK], province))
    return found


def trim_profile_listings(call: Call, records: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]] | None:
    """Drops from each profile's ``listings`` the paths of listings the call may not see (a path to no stored
    listing too); None, and nothing dropped, when the call sees every listing. Else the records of the
    listings kept, by id."""
    if call.provinces is None:
        return None
    records = [r for r in records if isinstance(r.get("listings"), list)]
    ids = {i for record in records for i in map(listing_id_of, record["listings"]) if i is not None}
    found = visible_listings(call, ids)
    for record in records:
        record["listings"] = [path for path in record["listings"] if listing_id_of(path) in found]
    return found


def trim_listing_facet(call: Call, counts: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """A profile facet's counted values without the paths of listings the call may not see."""
    ids = {i for i in (listing_id_of(value) for value, _ in counts) if i is not None}
    if call.provinces is None or not ids:
        return counts
    kept: set[str | None] = {None, *visible_listings(call, ids)}
    return [(value, count) for value, count in counts if listing_id_of(value) in kept]


def facet_names(names: list[str]) -> tuple[str, ...]:
    """The facets asked for, validated; ``*`` is every facetable attribute."""
    chosen: list[str] = []
    for name in names:
        if name == "*":
            chosen += DEFAULT_FACETS
        elif ATTRIBUTE_ALIASES.get(name, name) in LISTING_ATTRIBUTES:
            chosen.append(name)
        else:
            raise bad_request(
                f"facets: {name!r} is not a facetable attribute; use '*' or any of "
                f"{', '.join(sorted(LISTING_ATTRIBUTES))}"
            )
    return tuple(dict.fromkeys(chosen))
