"""The relevance of a text search on PostgreSQL: the SQLite store's scores, computed the same way in SQL.

The SQLite store ranks listings with its column index's BM25 (:class:`precon.service.columns.TextPostings`: per
query word, the field-weighted count of the word, of its prefix run when it is the last word, and of its typo
variants; ``idf = ln(1 + (N - n + 0.5) / (n + 0.5))``; weighted document lengths; the sum rounded to 6 places),
and profiles, and listings matched in some fields only, with FTS5's ``bm25()`` (per *phrase* of the MATCH
expression: ``idf = ln((N - n + 0.5) / (n + 0.5))``, 1e-6 when not positive; the frequency the sum of the
matched columns' weights over the phrase's instances; the document size every column's words, unweighted).

Both are computed here from the rows of ``listing_words``/``profile_words`` (a record's field-weighted count and
per-field counts of each word, migration 0004) and the records' ``text_length``/``text_tokens``, in the same
floating-point operations in the same order, so that the scores are equal to the last bit: the order of a page
and the scores shown are the SQLite store's. Words compare in code-point order (``COLLATE "C"``), as Python's
sorted vocabulary does, so a prefix's run is the range ``[p, p + U+10FFFF)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from precon.service.columns import TEXT_B, TEXT_K1
from precon.service.search import MIN_PREFIX_LENGTH, TextQuery

FTS5_K1 = 1.2
FTS5_B = 0.75
FTS5_MIN_IDF = 1e-6
LAST_CODE_POINT = "\U0010ffff"
WORD_TABLES = {"listings": ("listing_words", "listing"), "profiles": ("profile_words", "profile")}
"""Per catalogue table: its words table and the column naming the record."""


@dataclass(frozen=True)
class Phrase:
    """One alternative of a query word: the word itself (the last word as a prefix) or one of its typo variants."""

    word: str
    prefix: bool


@dataclass(frozen=True)
class Corpus:
    """The whole catalogue table's text, as both measures see it: every record counts, matched or not."""

    rows: int
    weighted_length: float
    """The sum of the records' field-weighted lengths (``text_length``)."""
    tokens: int
    """The sum of the records' word counts (``text_tokens``)."""


@dataclass(frozen=True)
class Ranking:
    """A text query's relevance as SQL: ``ctes`` (without ``WITH``, holding the parameters ``params``), ``joins``
    (to the catalogue row, whose alias the ranking was made for: only the rows matching the query are kept) and
    ``score`` to select."""

    ctes: str
    joins: str
    score: str
    params: list[Any]
    alone: tuple[str, str] | None = None
    """Where the score needs nothing of the catalogue row: the ``FROM`` of the matches without it, and their id."""


def _float(value: float) -> str:
    """A double as an SQL literal of that exact double (``repr`` round-trips; ``float8in`` rounds correctly)."""
    return f"'{value!r}'::float8"


def query_phrases(text: TextQuery) -> list[list[Phrase]]:
    """Per query word, its alternatives in the order of the FTS5 expression
    (:meth:`~precon.service.search.TextQuery.fts_expression`): the word, then its typo variants sorted."""
    last = len(text.words) - 1
    positions = []
    for position, word in enumerate(text.words):
        alternatives = [Phrase(word, position == last and len(word) >= MIN_PREFIX_LENGTH)]
        alternatives += [Phrase(variant, False) for variant in sorted(text.typo_variants.get(word, ()))]
        positions.append(alternatives)
    return positions


def _rows(table: str, phrase: Phrase, frequency: str, carried: str) -> tuple[str, list[Any]]:
    """The (record, frequency, ``carried``) rows of one phrase's words: one word, or the run of words a prefix
    starts; ``carried``: a column of the record's repeated in its words rows (``length``, ``tokens``)."""
    words, owner = WORD_TABLES[table]
    if phrase.prefix:
        condition, params = "word >= %s AND word < %s", [phrase.word, phrase.word + LAST_CODE_POINT]
    else:
        condition, params = "word = %s", [phrase.word]
    return f"SELECT {owner} AS owner, {frequency} AS f, {carried} FROM {words} WHERE {condition}", params


def column_postings(table: str, alias: str, text: TextQuery, corpus: Corpus) -> Ranking:
    """The SQLite column index's BM25 (:meth:`precon.service.columns.TextPostings.scores`), rounded as it rounds
    (``numpy.round``: ``rint(x * 1e6) / 1e6``; PostgreSQL's ``round(double precision)`` is ``rint``). The joins
    keep only records holding every query word."""
    average = corpus.weighted_length / corpus.rows if corpus.rows and corpus.weighted_length > 0 else 1.0
    names: dict[tuple[Phrase, ...], str] = {}
    ctes: list[str] = []
    params: list[Any] = []
    for alternatives in query_phrases(text):
        if tuple(alternatives) in names:
            continue
        name = f"t{len(names)}"
        names[tuple(alternatives)] = name
        parts = []
        for phrase in alternatives:
            sql, phrase_params = _rows(table, phrase, "weighted", "length")
            parts.append(sql)
            params += phrase_params
        if len(parts) == 1 and not alternatives[0].prefix:  # one word: one row a record
            ctes.append(f"{name} AS ({parts[0]})")
        else:
            union = " UNION ALL ".join(parts)
            ctes.append(f"{name} AS (SELECT owner, sum(f) AS f, min(length) AS length FROM ({union}) w GROUP BY owner)")
    rows = _float(float(corpus.rows))
    idfs = ", ".join(
        f"ln({_float(1.0)} + ({rows} - h.{n} + {_float(0.5)}) / (h.{n} + {_float(0.5)})) AS {n}" for n in names.values()
    )
    holders = ", ".join(f"(SELECT count(*) FROM {n})::float8 AS {n}" for n in names.values())
    ctes.append(f"idf AS (SELECT {idfs} FROM (SELECT {holders}) h)")
    normaliser = f"({_float(TEXT_K1)} * ({_float(1 - TEXT_B)} + ({_float(TEXT_B)} * t0.length) / {_float(average)}))"
    terms = [
        f"((idf.{n} * {n}.f) * {_float(TEXT_K1 + 1)}) / ({n}.f + {normaliser})"
        for n in (names[tuple(alternatives)] for alternatives in query_phrases(text))
    ]
    joins = " ".join(f"JOIN {n} ON {n}.owner = {alias}.id" for n in names.values()) + " CROSS JOIN idf"
    alone = " ".join(["t0", *(f"JOIN {n} ON {n}.owner = t0.owner" for n in list(names.values())[1:]), "CROSS JOIN idf"])
    score = f"round(({' + '.join(terms)}) * {_float(1e6)}) / {_float(1e6)}"
    return Ranking(", ".join(ctes), joins, score, params, (alone, "t0.owner"))


def fts5_bm25(
    table: str,
    alias: str,
    text: TextQuery,
    corpus: Corpus,
    fields: Sequence[str],
    weights: Sequence[float],
) -> Ranking:
    """FTS5's ``bm25()`` with the fields' ``weights`` over the query's MATCH expression, in the fields the query
    names when it names some (FTS5's column filter), not rounded (the SQLite store orders by the exact value).

    The joins keep the records matching (every word in one of its phrases), each with its phrases' frequencies
    (outer joins: 0 for those it does not hold)."""
    named = [i for i, name in enumerate(fields) if not text.columns or name in text.columns]
    if text.columns:  # none of them searchable: no instance anywhere, nothing matches
        frequency = "(" + " + ".join([f"{_float(weights[i])} * counts[{i + 1}]" for i in named] or ["0"]) + ")"
    else:
        frequency = "weighted"
    average = float(corpus.tokens) / float(corpus.rows) if corpus.rows else 1.0
    names: dict[Phrase, str] = {}
    ctes: list[str] = []
    params: list[Any] = []
    phrases = [phrase for alternatives in query_phrases(text) for phrase in alternatives]
    for phrase in phrases:
        if phrase in names:
            continue
        name = f"q{len(names)}"
        names[phrase] = name
        sql, phrase_params = _rows(table, phrase, frequency, "tokens")
        params += phrase_params
        ctes.append(
            f"{name} AS (SELECT owner, sum(f) AS f, min(tokens) AS tokens FROM ({sql}) w WHERE f > 0 GROUP BY owner)"
        )
    rows = _float(float(corpus.rows))
    raw = ", ".join(f"ln(({rows} - h.{n} + {_float(0.5)}) / (h.{n} + {_float(0.5)})) AS {n}" for n in names.values())
    holders = ", ".join(f"(SELECT count(*) FROM {n})::float8 AS {n}" for n in names.values())
    clamped = ", ".join(
        f"CASE WHEN r.{n} <= 0 THEN {_float(FTS5_MIN_IDF)} ELSE r.{n} END AS {n}" for n in names.values()
    )
    ctes.append(f"idf AS (SELECT {clamped} FROM (SELECT {raw} FROM (SELECT {holders}) h) r)")
    normaliser = f"({_float(FTS5_K1)} * ({_float(1 - FTS5_B)} + ({_float(FTS5_B)} * hit.tokens) / {_float(average)}))"
    terms = []
    for phrase in phrases:
        n = names[phrase]
        f = f"coalesce({n}.f, {_float(0.0)})"
        terms.append(f"idf.{n} * (({f} * {_float(FTS5_K1 + 1.0)}) / ({f} + {normaliser}))")
    # The records matching: every word in one of its phrases (a join, not a test of each record).
    ctes.append(
        "hit AS ("
        + " INTERSECT ".join(
            "(" + " UNION ".join(f"SELECT owner, tokens FROM {names[phrase]}" for phrase in alternatives) + ")"
            for alternatives in query_phrases(text)
        )
        + ")"
    )
    outer = " ".join(f"LEFT JOIN {n} ON {n}.owner = hit.owner" for n in names.values()) + " CROSS JOIN idf"
    joins = f"JOIN hit ON hit.owner = {alias}.id {outer}"
    return Ranking(", ".join(ctes), joins, "(" + " + ".join(terms) + ")", params, (f"hit {outer}", "hit.owner"))


def ranked_page(ranking: Ranking, table: str, alias: str, where: str, order: str, by_score: bool) -> str:
    """One statement answering a text search: a row of the number of matches and, in the page's order, each
    record of the page's ``id`` and ``score`` (None of them when the page is empty).

    ``where``: the search's other conditions on ``alias`` (``true``: none); ``order``: the page's, of the matches
    ``m`` (``m.score``) and of their rows (``alias``). ``by_score``: the order is first by score, so the page is
    among the matches scoring as high as the page's last at least (``FETCH FIRST ... WITH TIES``): only those
    rows are read again for the rest of the order. The documents are not read here: only the page's are,
    afterwards. Parameters: the ranking's, the condition's, with ``by_score`` the page's offset plus limit, the
    order's, then the page's limit and offset."""
    if where == "true" and ranking.alone is not None:
        source, owner = ranking.alone
        matches = f"SELECT {owner} AS id, {ranking.score} AS score FROM {source}"
    else:
        matches = f"SELECT {alias}.id, {ranking.score} AS score FROM {table} {alias} {ranking.joins} WHERE {where}"
    best = "(SELECT id, score FROM m ORDER BY score DESC FETCH FIRST %s ROWS WITH TIES) m" if by_score else "m"
    return (
        f"WITH {ranking.ctes}, m AS MATERIALIZED ({matches}) "
        "SELECT c.total, p.id, p.score FROM (SELECT count(*) AS total FROM m) c LEFT JOIN LATERAL ("
        "SELECT s.id, s.score, row_number() OVER () AS n FROM ("
        f"SELECT m.id, m.score FROM {best} JOIN {table} {alias} ON {alias}.id = m.id "
        f"ORDER BY {order} LIMIT %s OFFSET %s) s) p ON true ORDER BY p.n"
    )
