"""The values of the column index's attributes that its columns and postings do not hold as the evaluator reads
them, held beside them, so that the index answers every test of its attributes itself.

A column holds a text attribute's value folded, a number attribute's numeric reading, a flag's boolean; a
listing's ``"ceilingHeights": 10``, ``"startPrice": "500000"``, a list where one value is expected, or a unit's
status ``5`` are values the evaluator tests their own way (:mod:`precon.filters`). Writes keep them as rows:
``listing_values`` at the attribute's path (:func:`~precon.service.search.path_values.kept_at_attribute`) and a
unit's status kept whole in ``listing_plan_units`` (``status_value``). They are few (none in most catalogues; a
few thousand years written as text in the generated one), so the index holds each attribute's (value, listing)
pairs and tests each distinct value with the evaluator, as :mod:`~precon.service.search.held_values` does for the
paths the index lacks.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson

from precon.filters import Compare, Match, Range, value_test
from precon.schema import LISTING_ATTRIBUTES
from precon.service.search.plans import ODD_UNITS

UNIT_STATUS = "floorPlans.units.status"
_LISTING_PATHS = [path for path in LISTING_ATTRIBUTES if path != UNIT_STATUS]

Pair = tuple[int, str]
"""(the listing's position in the index, the value's JSON text)."""


@dataclass(frozen=True)
class AttributeRows:
    """One attribute's kept values: the distinct values (their JSON ``texts``, sorted, and decoded ``values``) and
    the (code, position) pairs, sorted by position, then code: one canonical form, whether read whole or patched."""

    texts: list[str]
    values: list[Any]
    codes: npt.NDArray[np.int32]
    owners: npt.NDArray[np.int32]

    @classmethod
    def of(cls, pairs: Iterable[Pair]) -> AttributeRows:
        distinct = sorted(set(pairs))
        texts = sorted({text for _, text in distinct})
        lookup = {text: code for code, text in enumerate(texts)}
        return cls(
            texts,
            [orjson.loads(text) for text in texts],
            np.array([lookup[text] for _, text in distinct], dtype=np.int32),
            np.array([position for position, _ in distinct], dtype=np.int32),
        )

    def pairs(self) -> list[Pair]:
        return [(position, self.texts[code]) for position, code in zip(self.owners.tolist(), self.codes.tolist(),
                                                                        strict=True)]  # fmt: skip

    def passing(self, expr: Match | Compare | Range, size: int) -> npt.NDArray[np.bool_]:
        """Per listing (of ``size``), whether it holds a kept value that passes ``expr``."""
        test = value_test(expr)
        passes = np.fromiter((_any_passes(test, value) for value in self.values), np.bool_, len(self.values))
        found = np.zeros(size, dtype=np.bool_)
        found[self.owners[passes[self.codes]]] = True
        return found

    def holders(self, size: int) -> npt.NDArray[np.bool_]:
        """Per listing, whether it holds any kept value."""
        found = np.zeros(size, dtype=np.bool_)
        found[self.owners] = True
        return found

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, AttributeRows)
            and self.texts == other.texts
            and np.array_equal(self.codes, other.codes)
            and np.array_equal(self.owners, other.owners)
        )

    __hash__ = None  # type: ignore[assignment]


def _any_passes(test: Callable[[Any], bool], value: Any) -> bool:
    """Whether ``value`` passes, or an element of it where it is a list (a unit's status is kept whole)."""
    return any(map(test, value)) if type(value) is list else test(value)


def read_attribute_rows(
    db: sqlite3.Connection, position: dict[int, int], listings: Sequence[int] | None = None
) -> dict[str, list[Pair]]:
    """Per attribute path, the kept (position, value) pairs of every listing, or of ``listings`` (row ids)."""
    marks = "" if listings is None else f" AND listing IN ({', '.join('?' * len(listings))})"
    arguments = tuple(listings or ())
    found: dict[str, list[Pair]] = defaultdict(list)
    paths = ", ".join("?" * len(_LISTING_PATHS))
    for path, listing, value in db.execute(
        "SELECT p.path, v.listing, v.value FROM value_paths p JOIN listing_values v ON v.path = p.code "
        f"WHERE p.path IN ({paths}){marks}",
        (*_LISTING_PATHS, *arguments),
    ):
        found[path].append((position[listing], value))
    for listing, value in db.execute(
        f"SELECT listing, status_value FROM listing_plan_units WHERE ({ODD_UNITS}) AND status_value IS NOT NULL{marks}",
        arguments,
    ):
        found[UNIT_STATUS].append((position[listing], value))
    return found


def attribute_rows(found: dict[str, list[Pair]]) -> dict[str, AttributeRows]:
    """The rows of each attribute that has any."""
    return {path: AttributeRows.of(pairs) for path, pairs in sorted(found.items()) if pairs}


def patched_rows(
    held: dict[str, AttributeRows], written: npt.NDArray[np.bool_], fresh: dict[str, list[Pair]]
) -> dict[str, AttributeRows]:
    """``held`` with the ``written`` positions' pairs now ``fresh``: what reading them all again would give."""
    patched = dict(held)
    for path in sorted(held.keys() | fresh.keys()):
        rows, added = held.get(path), fresh.get(path, [])
        kept: list[Pair] = []
        if rows is not None:
            gone = written[rows.owners]
            if not gone.any() and not added:
                continue
            kept = [pair for pair, out in zip(rows.pairs(), gone.tolist(), strict=True) if not out]
        if kept or added:
            patched[path] = AttributeRows.of(kept + added)
        else:
            patched.pop(path, None)
    return patched
