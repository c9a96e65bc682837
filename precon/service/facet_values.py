"""``search_facet_values`` (ours): every value of one facet that a few typed letters find, with its count.

Facet counts stop at the 100 most frequent values of a facet; a search box over a facet (282 builders, 388
neighbourhoods) needs the values its words find, however rare. This operation counts every value of the facet
over the same result set facet_counts would (``search``, ``filterQuery``, ``unitFilter``), keeps those whose
words start with every word typed (case and accents ignored; a reference facet is searched by its profile's
name), and answers in the shape of Algolia's searchForFacetValues.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Query, Request
from starlette.responses import Response

from precon.service.errors import bad_request
from precon.service.schema import ATTRIBUTE_ALIASES, LISTING_REFERENCE_FIELDS, LITE_FIELDS
from precon.service.search import WORD, fold, words
from precon.service.store import ListingQuery
from precon.service.units import LITE_VERSION, unit_filter

if TYPE_CHECKING:
    from precon.service.app import Call, Service

MAX_FACET_QUERY_LENGTH = 512
DEFAULT_FACET_HITS = 10
MAX_FACET_HITS = 1000
REFERENCE_FACETS = frozenset(LISTING_REFERENCE_FIELDS.values())
"""Facets whose values are profile paths (``Builders/<id>``): searched by the profile's name."""


@dataclass(frozen=True)
class FacetHit:
    value: str
    count: int
    label: str | None
    highlighted: str

    def payload(self, with_label: bool) -> dict[str, Any]:
        out: dict[str, Any] = {"value": self.value, "count": self.count}
        if with_label:
            out["label"] = self.label
        out["highlighted"] = self.highlighted
        return out


def _prefix_length(word: str, folded_prefix: str) -> int:
    """How many characters of ``word`` fold to (at least) ``folded_prefix``: what to wrap in ``<em>``."""
    for end in range(1, len(word) + 1):
        if len(fold(word[:end])) >= len(folded_prefix):
            return end
    return len(word)


def highlight_prefixes(text: str, query: Sequence[str]) -> str | None:
    """``text`` with the start of each word that a query word begins wrapped in ``<em>``, the rest escaped;
    None unless every query word begins some word of the text."""
    found: set[str] = set()
    parts: list[str] = []
    cursor = 0
    for match in WORD.finditer(text):
        folded = fold(match.group())
        matching = [q for q in query if folded.startswith(q)]
        if not matching:
            continue
        found.update(matching)
        end = match.start() + _prefix_length(match.group(), max(matching, key=len))
        parts.append(html.escape(text[cursor : match.start()], quote=True))
        parts.append("<em>" + html.escape(text[match.start() : end], quote=True) + "</em>")
        cursor = end
    if len(found) < len(set(query)):
        return None
    parts.append(html.escape(text[cursor:], quote=True))
    return "".join(parts)


def facet_hits(
    counts: Sequence[tuple[str, int]], labels: dict[str, str | None] | None, facet_query: str
) -> list[FacetHit]:
    """The counted values whose text (the label, for a reference facet) the query finds, best first."""
    query = words(facet_query)
    hits = []
    for value, count in counts:
        if count <= 0:
            continue
        label = labels.get(value) if labels is not None else None
        text = label if label is not None else value
        highlighted = highlight_prefixes(text, query)
        if highlighted is not None:
            hits.append(FacetHit(value, count, label, highlighted))
    hits.sort(key=lambda hit: (-hit.count, hit.value))
    return hits


def _facet_param(call: Call) -> str:
    from precon.service.app import facet_names

    name = call.params.required("facet")
    if name == "*" or "," in name:
        raise bad_request(f"facet: name one facetable attribute, got {name!r}")
    (name,) = facet_names(call, [name])
    if call.version == LITE_VERSION and ATTRIBUTE_ALIASES.get(name, name).split(".", 1)[0] not in LITE_FIELDS:
        raise bad_request(f"facet: {name!r} is not an attribute of a v1-lite listing")
    return name


def add_facet_value_routes(app: FastAPI, service: Service) -> None:
    """Registers ``search_facet_values`` under every version and province, as the other reads are."""
    from precon.service.app import answer, operation

    @operation(app, "search_facet_values", "GET")
    def search_facet_values(
        request: Request,
        version: str,
        province: str,
        product_id: str | None = Query(None),
        facet: str | None = Query(None, description="One facetable attribute (required)"),
        facetQuery: str | None = Query(None, description="Words that start words of the values; empty for all"),
        search: str | None = Query(None),
        filterQuery: str | None = Query(None),
        unitFilter: str | None = Query(None),
        maxFacetHits: str | None = Query(None, description="At most this many hits (default 10, max 1000)"),
    ) -> Response:
        call = service.call(request, version, province)
        p = call.params
        name = _facet_param(call)
        facet_query = p.text("facetQuery") or ""
        if len(facet_query) > MAX_FACET_QUERY_LENGTH:
            raise bad_request(
                f"facetQuery is {len(facet_query)} characters long; at most {MAX_FACET_QUERY_LENGTH} are allowed"
            )
        limit = p.integer("maxFacetHits", DEFAULT_FACET_HITS, 1, MAX_FACET_HITS)
        found = call.store.search_listings(
            ListingQuery(
                province=call.province,
                text=p.search(),
                filter=p.filter_query(),
                unit_filter=unit_filter(p, call.version),
                facets=(name,),
                max_facet_values=None,
                limit=0,
            )
        )
        counts = found.facets[name]
        labels = None
        reference = ATTRIBUTE_ALIASES.get(name, name) in REFERENCE_FACETS
        if reference:
            profiles = call.store.get_profiles([value for value, _ in counts])
            labels = {}
            for value, _ in counts:
                profile_name = profiles.get(value, {}).get("name")
                labels[value] = profile_name if isinstance(profile_name, str) else None
        hits = facet_hits(counts, labels, facet_query)
        return answer(
            request,
            {
                "facetHits": [hit.payload(reference) for hit in hits[:limit]],
                "exhaustiveFacetsCount": True,
                "total": len(hits),
            },
        )
