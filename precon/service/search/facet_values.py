"""``search_facet_values`` (ours): every value of one facet that a few typed letters find, with its count.

Facet counts stop at the 100 most frequent values of a facet; a search box over a facet (282 builders, 388
neighbourhoods) needs the values its words find, however rare. This operation counts every value of the facet
over the same result set facet_counts would (``search``, ``filterQuery``, ``unitFilter``), keeps those whose
words start with every word typed (case and accents ignored; a reference facet is searched by its profile's
name), and answers in the shape of Algolia's searchForFacetValues. The operation is in ``routes/facets.py``;
this module finds and highlights the values.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from precon.facet_keys import by_count
from precon.words import WORD, fold, words

MAX_FACET_QUERY_LENGTH = 512
DEFAULT_FACET_HITS = 10
MAX_FACET_HITS = 1000


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
    hits.sort(key=lambda hit: by_count((hit.value, hit.count)))
    return hits
