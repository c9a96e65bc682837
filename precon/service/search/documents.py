"""One listing's document against a search's conditions, in Python: what a filtered webhook subscription judges a
listing on before and after a write, and what a ``changes`` feed judges a deleted listing on (its last document,
which no index holds any more).

The conditions mean what they mean in a search: ``filterQuery`` as the reference evaluator reads it (with the
service's aliases), ``unitFilter`` held by one unit of one plan, and the search words found in the listing's
searchable text (the last word as a prefix, no typo tolerance: a document is judged, not ranked).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from precon import filters
from precon.filters import Expr
from precon.schema import SEARCHABLE_LISTING_FIELDS
from precon.service.search.plans import floor_plans
from precon.service.search.sql_filter import PATH_ALIASES
from precon.service.search.text import MIN_PREFIX_LENGTH, searchable_text, words


@dataclass(frozen=True)
class DocumentFilter:
    """The conditions a listing document is judged on (each None for none)."""

    expression: Expr | None = None
    units: Expr | None = None
    words: tuple[str, ...] = ()
    text_fields: Sequence[str] = SEARCHABLE_LISTING_FIELDS

    def matches(self, document: Mapping[str, Any] | None) -> bool:
        if document is None:
            return False
        if self.expression is not None:
            aliased = {**document, **{a: document.get(p) for a, p in PATH_ALIASES.items() if a not in document}}
            if not filters.evaluate(self.expression, aliased):
                return False
        if self.units is not None and not any(
            filters.plan_matches(self.units, plan) for plan in floor_plans(dict(document))
        ):
            return False
        return not self.words or self._has_words(document)

    def _has_words(self, document: Mapping[str, Any]) -> bool:
        found = set(words(" ".join(searchable_text(dict(document), self.text_fields))))
        *whole, last = self.words
        if not all(word in found for word in whole):
            return False
        if len(last) >= MIN_PREFIX_LENGTH:
            return any(word.startswith(last) for word in found)
        return last in found
