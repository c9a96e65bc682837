"""A search box over every value of a facet, so a builder outside the 100 most frequent can still be found.

Where the deployment has facet value search (``search_facet_values``, this project's service) it answers. Where it
does not (the production service), reference facets are found by name with ``search_profiles`` and counted with
``facet_counts`` restricted to those profiles; other facets are searched among their 100 most frequent values, and
the page says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from components import api
from components.search_scope import scope_of
from precon import filters
from precon.client.errors import BadRequest, NotFound
from precon.dashboard import listing_search
from precon.dashboard.filter_state import FacetSpec, FilterState
from precon.words import words

MAX_HITS = 20
PROFILE_CANDIDATES = 100


@dataclass(frozen=True)
class FoundValue:
    value: str
    count: int


@dataclass
class FoundValues:
    values: list[FoundValue]
    total: int
    names: dict[str, str] = field(default_factory=dict)
    note: str | None = None

    @property
    def more(self) -> bool:
        return self.total > len(self.values)


def matches_words(query: str, text: str) -> bool:
    """Every word of ``query`` starts some word of ``text`` (case and accents ignored)."""
    wanted, have = words(query), words(text)
    return all(any(word.startswith(w) for word in have) for w in wanted)


def counts_among(facet: FacetSpec, state: FilterState, values: list[str]) -> dict[str, int]:
    """The counts of these values of ``facet`` under the other filters (values outside the top 100 included)."""
    scope = scope_of(state, without=facet.param)
    narrowed = filters.and_(scope.filter, filters.any_of(facet.attr, values))
    _, counts = listing_search.total_and_facets(
        api.backend, scope.text, narrowed, scope.unit_filter, [facet.attr], unit_supported=scope.unit_supported
    )
    return counts.get(facet.attr, {})


def _by_service(facet: FacetSpec, query: str, state: FilterState) -> FoundValues:
    scope = scope_of(state, without=facet.param)
    hits = api.call(
        "search_facet_values",
        facet=facet.attr,
        query=query,
        filter=scope.filter,
        search=scope.text or None,
        unit_filter=scope.unit_filter,
        max_hits=MAX_HITS,
    )
    names = {hit.value: hit.label for hit in hits.hits if hit.label}
    found = [FoundValue(hit.value, hit.count) for hit in hits.hits]
    return FoundValues(found, hits.total if hits.total is not None else len(found), names)


def _by_profiles(facet: FacetSpec, query: str, state: FilterState) -> FoundValues:
    assert facet.collection is not None
    page = api.call(
        "search_profiles",
        search=query,
        collection=facet.collection,
        per_page=PROFILE_CANDIDATES,
        retrieve_attributes=["name", "path"],
    )
    names = {p.path: p.name for p in page.results if p.path and p.name}
    counts = counts_among(facet, state, list(names)) if names else {}
    ranked = sorted(counts.items(), key=lambda item: (-item[1], names.get(item[0], item[0]).casefold()))
    found = [FoundValue(value, count) for value, count in ranked if count > 0]
    return FoundValues(found[:MAX_HITS], len(found), names)


def _among_counts(facet: FacetSpec, query: str, counts: dict[str, int]) -> FoundValues:
    found = [FoundValue(v, c) for v, c in counts.items() if c > 0 and matches_words(query, v)]
    note = None
    if len(counts) >= listing_search.MAX_FACET_VALUES:
        note = (
            f"This deployment lists the {listing_search.MAX_FACET_VALUES} most frequent values: others are not found."
        )
    return FoundValues(found[:MAX_HITS], len(found), note=note)


def find_values(facet: FacetSpec, query: str, state: FilterState, counts: dict[str, int] | None = None) -> FoundValues:
    """Values of ``facet`` matching ``query`` with a count under the other filters, most frequent first."""
    scope = scope_of(state, without=facet.param)
    if not scope.local and api.offers("search_facet_values"):
        try:
            return _by_service(facet, query, state)
        except NotFound:
            api.lacks("search_facet_values")  # a deployment without the operation: not asked again
        except BadRequest:
            pass
    if facet.collection:
        return _by_profiles(facet, query, state)
    if counts is None:
        _, all_counts = listing_search.total_and_facets(
            api.backend, scope.text, scope.filter, scope.unit_filter, [facet.attr], unit_supported=scope.unit_supported
        )
        counts = all_counts.get(facet.attr, {})
    return _among_counts(facet, query, counts)
