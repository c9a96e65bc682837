"""The values of the column index's attributes that its columns and postings do not hold as the evaluator reads
them, held beside them, so that the index answers every test of its attributes itself.

A column holds a text attribute's value folded, a number attribute's numeric reading, a flag's boolean; a
listing's ``"ceilingHeights": 10``, ``"startPrice": "500000"``, a list where one value is expected, or a unit's
status ``5`` are values the evaluator tests their own way (:mod:`precon.filters`). Writes keep them as rows:
``listing_values`` at the attribute's path (:func:`~precon.service.search.path_values.kept_at_attribute`) and a
unit's status kept whole in ``listing_plan_units`` (``status_value``). The index holds each attribute's (value,
listing) pairs in arrays and tests each distinct value with the evaluator, as
:mod:`~precon.service.search.held_values` does for the paths the index lacks. Most attributes have none; the
generated catalogue writes plans' sizes, positions and counts of floors and units as text, as the production service
does: some 280,000 pairs at 20,000 listings (180,000 of them plans' sizes), read in about 0.15 s. A write's listings
are patched in: their pairs taken out and read again, and an attribute whose pairs they left as they were (a unit
sold leaves its plans' sizes) is kept as it was, arrays and all.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson

from precon.filters import Compare, Match, Range, value_test
from precon.schema import LISTING_ATTRIBUTES, IndexedAttribute
from precon.service.search.plans import ODD_UNITS, joined_numbers, term_codes

UNIT_STATUS = "floorPlans.units.status"
_LISTING_PATHS = [path for path in LISTING_ATTRIBUTES if path != UNIT_STATUS]
_UNIT_STATUSES = (
    "SELECT group_concat(listing), group_concat(status_value, char(31)) FROM listing_plan_units "
    f"WHERE ({ODD_UNITS}) AND status_value IS NOT NULL"
)

Mask = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]
Found = tuple[npt.NDArray[np.int64], list[str]]
"""Rows read: their listings' positions in the index, and their values' JSON texts."""


@dataclass(frozen=True, eq=False)
class AttributeRows:
    """One attribute's kept values: the distinct values' JSON ``texts`` (by code; bytes in one array, which processes
    share as they share the index's other arrays) and the (code, position) pairs."""

    texts: npt.NDArray[np.bytes_]
    codes: npt.NDArray[np.int32]
    owners: npt.NDArray[np.int32]
    _values: list[Any] = field(default_factory=list, compare=False, repr=False)
    """The texts decoded, on the first question in a process (not written with the index)."""

    @classmethod
    def of(cls, found: Found, held: npt.NDArray[np.bytes_] | None = None, distinct: bool = True) -> AttributeRows:
        """The rows ``found`` coded after the ``held`` texts (a patch's); each pair once where they are not
        ``distinct`` already (a unit's status, the same in many units)."""
        positions, texts = found
        lookup = {} if held is None else {text.decode(): code for code, text in enumerate(held.tolist())}
        codes = term_codes(texts, lookup)
        if not distinct:
            keys = np.unique(codes.astype(np.int64) << 32 | positions)
            codes, positions = (keys >> 32).astype(np.int32), keys & 0xFFFFFFFF
        encoded = [text.encode() for text in lookup]
        width = max(map(len, encoded), default=1) or 1
        return cls(np.array(encoded, dtype=f"S{width}"), codes, positions.astype(np.int32))

    def pairs(self) -> list[tuple[int, str]]:
        """(position, value's JSON text) of every pair."""
        texts = [text.decode() for text in self.texts.tolist()]
        return [(position, texts[code]) for position, code in zip(self.owners.tolist(), self.codes.tolist(),
                                                                   strict=True)]  # fmt: skip

    def values(self) -> list[Any]:
        """The values decoded, by code (once per process)."""
        if len(self._values) != len(self.texts):
            self._values[:] = [orjson.loads(text) for text in self.texts.tolist()]
        return self._values

    def passing(self, expr: Match | Compare | Range, size: int, among: Mask | None = None) -> Mask:
        """Per listing (of ``size``), whether it holds a kept value that passes ``expr``; of the listings ``among``
        alone, where given (only their values are tested)."""
        codes, owners = self.codes, self.owners
        if among is not None:
            mine = among[owners]
            codes, owners = codes[mine], owners[mine]
        found = np.zeros(size, dtype=np.bool_)
        if not len(codes):
            return found
        test, values = value_test(expr), self.values()
        asked = np.unique(codes) if among is not None else np.arange(len(values))
        passes = np.zeros(len(values), dtype=np.bool_)
        passes[asked] = np.fromiter((any_passes(test, values[code]) for code in asked.tolist()), np.bool_, len(asked))
        found[owners[passes[codes]]] = True
        return found

    def beside(
        self, found: Mask, attribute: IndexedAttribute, expr: Match | Compare | Range, column: FloatArray | None
    ) -> Mask:
        """The listings passing ``expr`` at ``attribute``, given those its ``column`` or postings find (``found``;
        a single-valued number attribute's column given too)."""
        if attribute.kind == "number" and not isinstance(expr, Match):
            if attribute.multi:
                return found  # number postings hold every value's numeric reading, as a comparison reads it
            # The column reads text as a comparison does: only a list where one value is expected has none.
            assert column is not None
            return found | self.passing(expr, len(found), np.isnan(column))
        if attribute.kind == "number":
            # A listing holding a number as text (the column or postings its numeric reading) has every value of
            # the attribute in rows: matched from them alone (``"12"`` matches as text: not ``12.0``).
            found = found & ~self.holders(len(found))
        return found | self.passing(expr, len(found))

    def holders(self, size: int) -> Mask:
        """Per listing, whether it holds any kept value."""
        found = np.zeros(size, dtype=np.bool_)
        found[self.owners] = True
        return found

    def __getstate__(self) -> dict[str, Any]:
        return {"texts": self.texts, "codes": self.codes, "owners": self.owners, "_values": []}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            object.__setattr__(self, name, value)


def any_passes(test: Callable[[Any], bool], value: Any) -> bool:
    """Whether a held value passes the evaluator's ``test`` of one value: a list (a unit's status or number, kept
    whole) where an element does, as over a record; no value (None) never."""
    if type(value) is list:
        return any(map(test, value))
    return value is not None and test(value)


def read_attribute_rows(
    db: sqlite3.Connection, rowids: npt.NDArray[np.int64], listings: Sequence[int] | None = None
) -> dict[str, Found]:
    """Per attribute path that has any, the kept rows of every listing, or of ``listings`` (row ids); positions are
    in ``rowids`` (the index's, ascending). Each path's rows are read joined in one row: no Python object per row."""
    which = "" if listings is None else f" AND listing IN ({', '.join('?' * len(listings))})"
    arguments = tuple(listings or ())
    marks = ", ".join("?" * len(_LISTING_PATHS))
    codes = dict(db.execute(f"SELECT code, path FROM value_paths WHERE path IN ({marks})", _LISTING_PATHS))
    found: dict[str, Found] = {}
    if codes:
        for code, *row in db.execute(
            "SELECT path, group_concat(listing), group_concat(value, char(31)) FROM listing_values "
            f"WHERE path IN ({', '.join(map(str, codes))}){which} GROUP BY path",
            arguments,
        ):
            found[codes[code]] = _found(rowids, row)
    found[UNIT_STATUS] = _found(rowids, db.execute(_UNIT_STATUSES + which, arguments).fetchone())
    return {path: rows for path, rows in found.items() if len(rows[0])}


def _found(rowids: npt.NDArray[np.int64], row: Sequence[str | None]) -> Found:
    listing = joined_numbers(row[0], np.int64)
    return np.searchsorted(rowids, listing).astype(np.int64), (row[1] or "").split("\x1f") if len(listing) else []


def attribute_rows(found: dict[str, Found]) -> dict[str, AttributeRows]:
    """The rows of each attribute that has any."""
    return {path: AttributeRows.of(rows, distinct=path != UNIT_STATUS) for path, rows in sorted(found.items())}


_NONE: Found = (np.empty(0, np.int64), [])


def patched_rows(held: dict[str, AttributeRows], written: Mask, fresh: dict[str, Found]) -> dict[str, AttributeRows]:
    """``held`` with the ``written`` positions' pairs now ``fresh``: an attribute whose pairs they left as they were
    kept as it is."""
    patched = dict(held)
    for path in sorted(held.keys() | fresh.keys()):
        rows, now = held.get(path), fresh.get(path, _NONE)
        if rows is None:
            patched[path] = AttributeRows.of(now, distinct=path != UNIT_STATUS)
            continue
        mine = written[rows.owners]
        before = set(zip(rows.owners[mine].tolist(), rows.texts[rows.codes[mine]].tolist(), strict=True))
        if before == {(position, text.encode()) for position, text in zip(now[0].tolist(), now[1], strict=True)}:
            continue
        kept = ~mine
        if not kept.any() and not len(now[0]):
            del patched[path]
            continue
        added = AttributeRows.of(now, rows.texts, distinct=path != UNIT_STATUS)
        patched[path] = AttributeRows(added.texts, np.concatenate([rows.codes[kept], added.codes]),
                                      np.concatenate([rows.owners[kept], added.owners]))  # fmt: skip
    return patched
