"""Compiles a parsed ``filterQuery`` into an SQLite ``WHERE`` fragment over the listing index.

The semantics are those of :func:`precon.filters.evaluate`, which the tests use as the oracle: strings match
ignoring case, an array (or a nested ``floorPlans.*`` path) holds when any element matches, ``!=`` is
``NOT =``. Indexed attributes (see :mod:`precon.schema`) become column tests or sub-queries on the term
and number tables; any other path is handed to the evaluator over the stored document through the
``precon_match`` SQL function. Every value reaches SQL as a bound parameter.
"""

from __future__ import annotations

import itertools
import math
import threading
import time
from collections.abc import Callable
from typing import Any

from precon import filters
from precon.filters import And, Compare, Expr, Match, Not, Or, Range
from precon.filters.plans import number_of
from precon.schema import ATTRIBUTE_ALIASES, LISTING_ATTRIBUTES, IndexedAttribute

Fragment = tuple[str, list[Any]]
Predicate = Callable[[Any], bool]


class FilterKeys:
    """Filters that SQL applies to stored documents (``precon_match(doc, key)``), by number: a statement carries
    the key of the filter as the request parsed it, compiled once, never its text to parse again. A filter unused
    for :attr:`KEEP_S` is forgotten once more than :attr:`MOST` are held; no statement runs that long."""

    KEEP_S = 600.0
    MOST = 1024

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._keys: dict[Expr, int] = {}
        self._predicates: dict[int, tuple[Expr, Predicate]] = {}
        self._used: dict[int, float] = {}
        self._numbers = itertools.count(1)

    def key(self, expr: Expr) -> int:
        now = time.monotonic()
        with self._lock:
            key = self._keys.get(expr)
            if key is None:
                key = next(self._numbers)
                self._keys[expr] = key
                self._predicates[key] = (expr, filters.compile_predicate(expr))
                if len(self._predicates) > self.MOST:
                    self._forget_unused(now)
            self._used[key] = now
            return key

    def predicate(self, key: int) -> Predicate:
        found = self._predicates.get(key)
        if found is None:
            raise LookupError(f"no filter has the key {key}")
        return found[1]

    def _forget_unused(self, now: float) -> None:
        for key, used in list(self._used.items()):
            if now - used > self.KEEP_S:
                expr, _ = self._predicates.pop(key)
                del self._keys[expr], self._used[key]


FILTER_KEYS = FilterKeys()

FALSE: Fragment = ("0", [])
BOOLEAN_WORDS = {"true": "true", "1": "true", "false": "false", "0": "false"}

PATH_ALIASES = {**ATTRIBUTE_ALIASES, "objectID": "listingId"}


as_number = number_of
"""The numeric reading of a stored value, as the evaluator reads it (numeric text counts, bools do not):
:func:`precon.filters.plans.number_of`, under the name the stores' modules know it by."""


def _literal_number(text: str) -> float | None:
    try:
        number = float(text.strip())
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def canonical_path(path: str) -> str:
    return PATH_ALIASES.get(path, path)


class ListingFilterCompiler:
    """Turns a filter expression into SQL over ``listings l`` and its ``listing_terms``/``listing_numbers``."""

    def __init__(
        self, document_column: str = "(SELECT doc FROM listing_docs WHERE id = l.id)", id_column: str = "l.id"
    ) -> None:
        self.document_column = document_column
        self.id_column = id_column

    def compile(self, expr: Expr) -> Fragment:
        handler: Callable[[Any], Fragment] = getattr(self, "_" + type(expr).__name__.lower())
        return handler(expr)

    def _and(self, expr: And) -> Fragment:
        return self._join(" AND ", expr.items)

    def _or(self, expr: Or) -> Fragment:
        return self._join(" OR ", expr.items)

    def _join(self, operator: str, items: tuple[Expr, ...]) -> Fragment:
        parts, params = [], []
        for item in items:
            sql, item_params = self.compile(item)
            parts.append(f"({sql})")
            params += item_params
        return operator.join(parts), params

    def _not(self, expr: Not) -> Fragment:
        sql, params = self.compile(expr.expr)
        return f"NOT ({sql})", params

    def _match(self, expr: Match) -> Fragment:
        attribute = LISTING_ATTRIBUTES.get(canonical_path(expr.attr))
        if attribute is None:
            return self._fallback(expr)
        if attribute.kind == "text":
            return self._equals(attribute, filters.fold_text(expr.value))
        if attribute.kind == "bool":
            word = BOOLEAN_WORDS.get(expr.value.strip().casefold())
            if word is None:
                return FALSE
            return self._equals(attribute, word if attribute.multi else int(word == "true"))
        number = _literal_number(expr.value)
        return FALSE if number is None else self._numeric(attribute, "=", number)

    def _equals(self, attribute: IndexedAttribute, value: Any) -> Fragment:
        if attribute.multi:
            return (
                f"{self.id_column} IN (SELECT listing FROM listing_terms WHERE attr = ? AND term = ?)",
                [attribute.path, value],
            )
        return f"coalesce({_column(attribute)} = ?, 0)", [value]

    def _compare(self, expr: Compare) -> Fragment:
        if expr.op == "!=":
            sql, params = self._compare(Compare(expr.attr, "=", expr.value))
            return f"NOT ({sql})", params
        attribute = LISTING_ATTRIBUTES.get(canonical_path(expr.attr))
        if attribute is None or attribute.kind == "text":
            return self._fallback(expr)
        if attribute.kind == "bool":
            return FALSE
        return self._numeric(attribute, expr.op, float(expr.value))

    def _range(self, expr: Range) -> Fragment:
        attribute = LISTING_ATTRIBUTES.get(canonical_path(expr.attr))
        if attribute is None or attribute.kind == "text":
            return self._fallback(expr)
        if attribute.kind == "bool":
            return FALSE
        return self._numeric(attribute, "BETWEEN", (float(expr.low), float(expr.high)))

    def _numeric(self, attribute: IndexedAttribute, op: str, value: float | tuple[float, float]) -> Fragment:
        test = "BETWEEN ? AND ?" if op == "BETWEEN" else f"{op} ?"
        bound = list(value) if isinstance(value, tuple) else [value]
        if attribute.multi:
            return (
                f"{self.id_column} IN (SELECT listing FROM listing_numbers WHERE attr = ? AND num {test})",
                [attribute.path, *bound],
            )
        return f"coalesce({_column(attribute)} {test}, 0)", bound

    def _fallback(self, expr: Expr) -> Fragment:
        return f"precon_match({self.document_column}, ?)", [FILTER_KEYS.key(expr)]


def _column(attribute: IndexedAttribute) -> str:
    # Column names come from the fixed schema, never from the request.
    return "l." + attribute.column
