"""The PostgreSQL store's full-text search: the ``tsvector`` each record's words are stored as, the ``tsquery``
a text query becomes, and the field-weighted rank of a match.

Words are folded as the SQLite store's FTS5 tokenizer folds them (:func:`precon.service.search.words`) and
written as quoted lexemes, never parsed or stemmed by PostgreSQL: the same words match in both stores.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from precon.service.search import MIN_PREFIX_LENGTH, TextQuery, searchable_text, words


def _lexeme(word: str, prefix: bool = False) -> str:
    quoted = "'" + word.replace("\\", "\\\\").replace("'", "''") + "'"
    return quoted + ":*" if prefix else quoted


def tsquery(text: TextQuery) -> str:
    """The ``tsquery`` of a text query: every word required, the last also as a prefix, typo variants as ORs.

    Each word is a quoted lexeme, so no user text can change the query's structure."""
    terms = []
    last = len(text.words) - 1
    for position, word in enumerate(text.words):
        alternatives = [_lexeme(word, position == last and len(word) >= MIN_PREFIX_LENGTH)]
        alternatives += [_lexeme(variant) for variant in sorted(text.typo_variants.get(word, ()))]
        terms.append(alternatives[0] if len(alternatives) == 1 else "(" + " | ".join(alternatives) + ")")
    return " & ".join(terms)


def tsvector(lexemes: Iterable[str]) -> str:
    """A ``tsvector``'s text of words taken as they are (no parser, no stemming): each one a quoted lexeme."""
    return " ".join(_lexeme(word) for word in dict.fromkeys(lexemes))


def _field_words(record: dict[str, Any], fields: Sequence[str]) -> list[list[str]]:
    return [words(text) for text in searchable_text(record, fields)]


def _text_match(text: TextQuery, alias: str, fields: Sequence[str]) -> tuple[str, list[Any]]:
    """The test of a row's text against the query: in all fields, or in those the query names (none of them a
    searchable field: no row)."""
    if not text.columns:
        return f"{alias}.s_all @@ %s::tsquery", [tsquery(text)]
    named = [f'{alias}."s_{name}"' for name in text.columns if name in fields]
    if not named:
        return "false", []
    return f"({' || '.join(named)}) @@ %s::tsquery", [tsquery(text)]


@dataclass
class WordCounts:
    """A record's words as the rows the relevance is computed from (see :mod:`.relevance`)."""

    words: dict[str, tuple[float, list[int]]]
    """Per word: its field-weighted count (the sum of its fields' weights over its instances) and its number of
    instances in each field."""
    weighted_length: float
    """The sum of the fields' weights over all the record's words (the SQLite column index's document length)."""
    tokens: int
    """The number of words in all the fields, unweighted (FTS5's document size)."""


def word_counts(field_words: Sequence[Sequence[str]], weights: Sequence[float]) -> WordCounts:
    """The :class:`WordCounts` of a record from its fields' words (:func:`_field_words`) and the fields' weights."""
    counts: dict[str, list[int]] = {}
    for field, found in enumerate(field_words):
        for word in found:
            counts.setdefault(word, [0] * len(field_words))[field] += 1
    weighted = {
        word: (sum(w * c for w, c in zip(weights, per_field, strict=True)), per_field)
        for word, per_field in counts.items()
    }
    length = sum(w * len(found) for w, found in zip(weights, field_words, strict=True))
    return WordCounts(weighted, float(length), sum(len(found) for found in field_words))


def _copy_text(word: str) -> str:
    """A word as a field of ``COPY``'s text format (backslash, tab and line breaks escaped, should folding ever
    make one)."""
    if "\\" in word or "\t" in word or "\n" in word or "\r" in word:
        word = word.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")
    return word


def words_copy_lines(counts: WordCounts, rowid: int, length: bool) -> str:
    """A record's rows of ``listing_words`` (``length``: with the record's weighted length) or ``profile_words``,
    each with the record's number of words, as ``COPY`` text: formatted here at once, not value by value (a
    catalogue has millions of them)."""
    middle = f"\t{counts.weighted_length!r}\t{counts.tokens}\t" if length else f"\t{counts.tokens}\t"
    return "".join(
        f"{_copy_text(word)}\t{rowid}\t{weighted!r}{middle}{{{','.join(map(str, per_field))}}}\n"
        for word, (weighted, per_field) in counts.words.items()
    )
