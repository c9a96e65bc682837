"""A filter as SQL meets it: the reference evaluator over a stored document, by key, and the names paths go by.

A listing search's filter runs on the column index (:mod:`precon.service.search.columns`) and, for paths it does
not hold, on rows that hold their values (:mod:`precon.service.search.held_values`); a profile search's runs in
SQLite over each profile's document through the ``precon_match`` SQL function, which calls the reference evaluator
(:func:`precon.filters.evaluate`) with the filter of a key (:class:`FilterKeys`): a statement carries a number, never
a filter's text. Nothing else of a filter reaches SQL.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from typing import Any

from precon import filters
from precon.filters import Expr
from precon.filters.plans import number_of
from precon.schema import ATTRIBUTE_ALIASES

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

BOOLEAN_WORDS = {"true": "true", "1": "true", "false": "false", "0": "false"}

PATH_ALIASES = {**ATTRIBUTE_ALIASES, "objectID": "listingId"}


as_number = number_of
"""The numeric reading of a stored value, as the evaluator reads it (numeric text counts, bools do not):
:func:`precon.filters.plans.number_of`, under the name the stores' modules know it by."""


def canonical_path(path: str) -> str:
    return PATH_ALIASES.get(path, path)
