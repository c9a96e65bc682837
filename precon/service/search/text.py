"""Text matching: the words of a query, their FTS5 expression, one-typo expansion and safe highlighting.

Words are folded as :mod:`precon.words` folds them (the FTS5 ``unicode61 remove_diacritics 2`` tokenizer's way),
so what the index matched and what the highlighter marks are the same words.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from precon.words import WORD, fold, words

MIN_TYPO_WORD_LENGTH = 4
MIN_PREFIX_LENGTH = 2
"""A last word of one letter matches only itself: as a prefix it would match a good part of the language."""
"""Shorter words must match exactly: one typo in a three-letter word matches too much."""


@dataclass
class TextQuery:
    """The folded words of a search string; the last also matches as a prefix (search-as-you-type)."""

    words: list[str]
    typo_variants: dict[str, frozenset[str]] = field(default_factory=dict)
    """Per query word, indexed words one typo away from it (filled only for the typo-tolerant pass)."""
    columns: tuple[str, ...] = ()
    """The searchable fields to match in; all of them when empty (``v1-lite`` matches only the fields it shows,
    so a search cannot test the value of a hidden one)."""

    @classmethod
    def parse(cls, text: str | None) -> TextQuery | None:
        found = words(text or "")
        return cls(found) if found else None

    def fts_expression(self) -> str:
        """An FTS5 MATCH expression: every word required, the last as a prefix, typo variants as ORs.

        Words are alphanumeric by construction and each is double-quoted, so no user text can change the
        expression's structure.
        """
        terms = []
        last = len(self.words) - 1
        for position, word in enumerate(self.words):
            prefix = position == last and len(word) >= MIN_PREFIX_LENGTH
            alternatives = [f'"{word}"*' if prefix else f'"{word}"']
            alternatives += [f'"{variant}"' for variant in sorted(self.typo_variants.get(word, ()))]
            terms.append(alternatives[0] if len(alternatives) == 1 else "(" + " OR ".join(alternatives) + ")")
        expression = " AND ".join(terms)
        return "{" + " ".join(self.columns) + "} : (" + expression + ")" if self.columns else expression

    def matches(self, word: str) -> str | None:
        """The query word that an indexed word matches, if any."""
        last = len(self.words) - 1
        for position, query_word in enumerate(self.words):
            prefix = position == last and len(query_word) >= MIN_PREFIX_LENGTH
            if word == query_word or (prefix and word.startswith(query_word)):
                return query_word
            if word in self.typo_variants.get(query_word, ()):
                return query_word
        return None


def _deletions(word: str) -> set[str]:
    return {word[:i] + word[i + 1 :] for i in range(len(word))}


def within_one_typo(a: str, b: str) -> bool:
    """True when ``b`` is ``a`` with one letter inserted, deleted, replaced, or two neighbours swapped."""
    if a == b:
        return True
    la, lb = len(a), len(b)
    if abs(la - lb) > 1:
        return False
    if la == lb:
        diffs = [i for i in range(la) if a[i] != b[i]]
        if len(diffs) == 1:
            return True
        return (
            len(diffs) == 2 and diffs[1] == diffs[0] + 1 and a[diffs[0]] == b[diffs[1]] and a[diffs[1]] == b[diffs[0]]
        )
    shorter, longer = (a, b) if la < lb else (b, a)
    return any(longer[:i] + longer[i + 1 :] == shorter for i in range(len(longer)))


class TypoIndex:
    """Finds the indexed words one typo away from a word, through a deletion-neighbourhood table."""

    def __init__(self, vocabulary: Iterable[str]) -> None:
        self.words = tuple(vocabulary)
        """The vocabulary it was built from, as given."""
        self._by_deletion: dict[str, list[str]] = {}
        self._vocabulary: set[str] = set()
        for word in self.words:
            if len(word) < MIN_TYPO_WORD_LENGTH - 1:
                continue
            self._vocabulary.add(word)
            for key in (word, *_deletions(word)):
                self._by_deletion.setdefault(key, []).append(word)

    @classmethod
    def kept_or_built(cls, vocabulary: Iterable[str], held: TypoIndex | None) -> TypoIndex:
        """``held`` where it was built from the same words (a write that brings no new word, and takes none away,
        keeps it: building one is most of the time it takes), else a new one."""
        words = tuple(vocabulary)
        return held if held is not None and held.words == words else cls(words)

    def variants(self, word: str) -> frozenset[str]:
        if len(word) < MIN_TYPO_WORD_LENGTH:
            return frozenset()
        found: set[str] = set()
        for key in (word, *_deletions(word)):
            for candidate in self._by_deletion.get(key, ()):
                if candidate != word and within_one_typo(word, candidate):
                    found.add(candidate)
        return frozenset(found)

    def expand(self, query: TextQuery) -> TextQuery:
        return replace(query, typo_variants={word: self.variants(word) for word in query.words})


def highlight_text(text: str, query: TextQuery | None) -> dict[str, Any]:
    """One attribute's highlight: matched words wrapped in ``<em>``, everything else HTML-escaped."""
    parts: list[str] = []
    matched: list[str] = []
    cursor = 0
    if query is not None:
        for match in WORD.finditer(text):
            query_word = query.matches(fold(match.group()))
            if query_word is None:
                continue
            parts.append(html.escape(text[cursor : match.start()], quote=True))
            parts.append("<em>" + html.escape(match.group(), quote=True) + "</em>")
            cursor = match.end()
            if query_word not in matched:
                matched.append(query_word)
    parts.append(html.escape(text[cursor:], quote=True))
    if not matched:
        level = "none"
    elif query is not None and len(matched) == len(set(query.words)):
        level = "full"
    else:
        level = "partial"
    ordered = [w for w in dict.fromkeys(query.words) if w in matched] if query is not None else []
    return {"value": "".join(parts), "matchLevel": level, "matchedWords": ordered}


def highlight_record(record: dict[str, Any], attributes: Sequence[str], query: TextQuery | None) -> dict[str, Any]:
    """``_highlightResult`` for each searchable attribute present in the record."""
    result: dict[str, Any] = {}
    for name in attributes:
        value = record.get(name)
        if isinstance(value, str):
            result[name] = highlight_text(value, query)
        elif isinstance(value, list):
            result[name] = [highlight_text(item, query) for item in value if isinstance(item, str)]
    return result


def searchable_text(record: dict[str, Any], attributes: Sequence[str]) -> list[str]:
    """Each searchable attribute as one text column for the FTS5 table (array elements on their own lines)."""
    columns = []
    for name in attributes:
        value = record.get(name)
        if isinstance(value, list):
            columns.append("\n".join(str(item) for item in value if isinstance(item, (str, int, float))))
        elif value is None:
            columns.append("")
        else:
            columns.append(str(value))
    return columns


FTS_OPTIONS = "tokenize='unicode61 remove_diacritics 2', prefix='2 3'"
"""How FTS5 splits and indexes the listings' and profiles' text (a table made to tokenize some of it the same way
takes these too)."""


def bm25_join(table: str, weights: Sequence[float], alias: str) -> str:
    """Joins the rows of ``alias`` to their matches in the FTS5 ``table`` (one ``?``: the match expression), each
    with its field-weighted BM25 rank as ``f.rank`` (lower is better)."""
    return (
        f"JOIN (SELECT rowid AS fts_id, bm25({table}, {', '.join(str(w) for w in weights)}) AS rank FROM {table} "
        f"WHERE {table} MATCH ?) f ON f.fts_id = {alias}.id"
    )
