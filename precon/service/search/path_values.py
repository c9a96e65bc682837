"""Every value of a listing that the column index cannot answer a filter on, kept as rows: ``listing_values``.

The column index holds the attributes listings are searched, sorted and counted by, and the floor plans' rows a
unit's status, price, number and floor; but a ``filterQuery`` may name any path of a document (a plan's
``name``, ``photos.tags``, ``incentives.title``). So each listing's values at every other path are stored
beside its document, one row per distinct (path, value) of the listing, the value as JSON (``"12"`` is text,
``12`` a number: the evaluator compares each its own way), the path by a code of ``value_paths``. A filter on such
a path reads that path's rows, never a document (:mod:`~precon.service.search.held_values`).

The attributes the column index holds keep here the values it does not hold as the evaluator reads them
(:func:`kept_at_attribute`): a value not of the attribute's kind (``"ceilingHeights": 10``, ``"startPrice":
"500000"``), every element of a list where one value is expected, and a text value that reads as a number (the
index holds text folded, which drops a ``-``, and a comparison tests its numeric reading). The index holds these rows
beside its columns (:mod:`~precon.service.search.attribute_rows`).

The values of a path are what the reference evaluator (:mod:`precon.filters`) finds there: a dotted path walks into
objects and, element by element, into lists of objects; a list at the end gives its elements; ``null`` gives
nothing. Only scalars are stored (text, numbers, booleans): no test of the evaluator passes an object or a list.
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable, Iterable
from typing import Any

import orjson

from precon.filters.plans import number_of
from precon.service.search.columns import LISTING_ATTRIBUTES

VALUE_SCHEMA = """
CREATE TABLE IF NOT EXISTS value_paths(code INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS listing_values(path INTEGER NOT NULL, listing INTEGER NOT NULL, value TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS listing_values_by_path ON listing_values(path, listing, value);
"""
VALUE_TABLES = ("listing_values", "value_paths")

UNIT_ROW_PATHS = frozenset(
    {
        "floorPlans.units.unitNumber",
        "floorPlans.units.floor",
        "floorPlans.units.price",
        "floorPlans.units.status",
    }
)
"""The paths of a unit that ``listing_plan_units`` holds: a listing's hundreds of units are not repeated here."""

ValuePair = tuple[str, str]
"""(path, the value's JSON text)."""

DELETE_LISTING_VALUES = "DELETE FROM listing_values WHERE path IN (SELECT code FROM value_paths) AND listing = ?"
"""A listing's rows, given its row id (each path's found by the index: no scan)."""
DELETE_VALUE = (
    "DELETE FROM listing_values WHERE path = (SELECT code FROM value_paths WHERE path = ?) AND listing = ? "
    "AND value = ?"
)
"""One row, given its path, listing row id and value."""


@functools.lru_cache(maxsize=4096)
def kept_as_values(path: str) -> bool:
    """Whether ``path``'s values are rows of ``listing_values``: the paths the column index does not hold, save a
    unit's fields that ``listing_plan_units`` holds."""
    return path not in UNIT_ROW_PATHS and path not in LISTING_ATTRIBUTES


def _not_text(value: Any) -> bool:
    return type(value) is not str or number_of(value) is not None


def _not_number(value: Any) -> bool:
    return type(value) is not int and type(value) is not float


def _not_bool(value: Any) -> bool:
    return type(value) is not bool


_KEPT_OF_KIND: dict[str, Callable[[Any], bool]] = {"text": _not_text, "number": _not_number, "bool": _not_bool}


@functools.lru_cache(maxsize=4096)
def kept_at_attribute(path: str) -> Callable[[Any], bool] | None:
    """Which scalar values at ``path`` are rows of ``listing_values`` where it is an attribute of the column index
    (else None): those the index does not hold as the evaluator reads them. A text attribute keeps what is not text
    (``10``, ``true``) and text that reads as a number (``"9.5"``; not ``"9'"``); a number attribute what is not a
    number (``"500000"``, ``true``); a flag what is not a boolean. A single-valued attribute holding a list keeps
    all its elements besides (:func:`value_pairs`): the index holds no value of it. A number attribute of many
    values (a plan's size) is kept whole or not at all (:func:`_numbers_kept_whole`): not here."""
    attribute = LISTING_ATTRIBUTES.get(path)
    if attribute is None or path in UNIT_ROW_PATHS or path in MANY_NUMBERS:
        return None
    return _KEPT_OF_KIND[attribute.kind]


MANY_NUMBERS = frozenset(path for path, a in LISTING_ATTRIBUTES.items() if a.kind == "number" and a.multi)
"""The number attributes of many values a listing (its plans' sizes, prices, bedrooms; its deposits)."""
_MANY_NUMBERS_UNDER = {name: sorted(p for p in MANY_NUMBERS if p.split(".")[0] == name)
                       for name in {path.split(".")[0] for path in MANY_NUMBERS}}  # fmt: skip


def _numbers_kept_whole(record: dict[str, Any], names: Iterable[str], pairs: set[ValuePair]) -> None:
    """The pairs of :data:`MANY_NUMBERS` under the top-level ``names`` of ``record`` added to ``pairs``: every
    value of a listing at such a path where one of them is not a number (``"750"``, ``true``), none where all are.
    The index holds each value's numeric reading, ``"750"`` as 750; a ``Match`` compares text as text
    (``floorPlans.squareFeet:750.0`` does not match ``"750"``), so such a listing's values are tested from its rows
    alone."""
    for name in names:
        for path in _MANY_NUMBERS_UNDER.get(name, ()):
            values = [value for value in values_at(record, path) if type(value) in _SCALARS]
            if any(type(value) is not int and type(value) is not float for value in values):
                pairs.update((path, orjson.dumps(value).decode()) for value in values)


def values_at(record: Any, path: str) -> list[Any]:
    """Every value the evaluator finds at a dotted ``path`` of ``record``: objects walked, lists element by element,
    ``null`` dropped (the stores index nested attributes and count facets with it too)."""
    values = [record]
    for part in path.split("."):
        found = [value[part] for value in values if isinstance(value, dict) and part in value]
        if any(issubclass(kind, list) for kind in set(map(type, found))):  # hundreds of units: looked at in C
            values = []
            for value in found:
                if isinstance(value, list):
                    values.extend(value)
                else:
                    values.append(value)
        else:
            values = found
    return [v for v in values if v is not None]


SINGLE_VALUED = frozenset(path for path, attribute in LISTING_ATTRIBUTES.items() if not attribute.multi)
"""The attributes the column index holds one value of per listing (each a top-level name)."""


def value_pairs(record: dict[str, Any]) -> set[ValuePair]:
    """The distinct (path, value) pairs of ``record`` that :func:`kept_as_values` and :func:`kept_at_attribute`
    keep."""
    pairs: set[ValuePair] = set()
    for name in record:
        path = _child("", name)
        value = record.get(name)
        if path is not None and value is not None:
            _named_pairs(path, value, pairs)
    _numbers_kept_whole(record, _MANY_NUMBERS_UNDER, pairs)
    return pairs


def _named_pairs(path: str, value: Any, pairs: set[ValuePair]) -> set[ValuePair]:
    """The pairs of a record's top-level ``value`` at ``path`` (its name) added to ``pairs``."""
    if type(value) is list:
        if path in SINGLE_VALUED:
            pairs.update((path, orjson.dumps(element).decode()) for element in value if type(element) in _SCALARS)
        _walk(path, value, pairs)
    elif value is not None:
        _walk(path, [value], pairs)
    return pairs


def changed_value_pairs(old: dict[str, Any], new: dict[str, Any]) -> tuple[set[ValuePair], set[ValuePair]]:
    """The pairs a listing loses and gains from ``old`` to ``new``. A list of objects that kept its length is
    compared element by element: a unit sold changes one plan, whose pairs (its units' fields being rows of their
    own) are most often the same before and after, and then no other plan is read."""
    lost: set[ValuePair] = set()
    gained: set[ValuePair] = set()
    for name in old.keys() | new.keys():
        was, now = old.get(name), new.get(name)
        path = _child("", name)
        if was is now or path is None or same_json(was, now):
            continue
        if name in _MANY_NUMBERS_UNDER:
            numbers_before, numbers_after = set[ValuePair](), set[ValuePair]()
            _numbers_kept_whole(old, [name], numbers_before)
            _numbers_kept_whole(new, [name], numbers_after)
            lost |= numbers_before - numbers_after
            gained |= numbers_after - numbers_before
        if path in SINGLE_VALUED:  # one value, or a list of them: no objects to compare element by element
            pairs_before, pairs_after = _named_pairs(path, was, set()), _named_pairs(path, now, set())
            lost |= pairs_before - pairs_after
            gained |= pairs_after - pairs_before
            continue
        before, after = _nodes(was), _nodes(now)
        kept: list[Any] = []
        if len(before) == len(after):
            same = [same_json(b, a) for b, a in zip(before, after, strict=True)]
            kept = [b for b, unchanged in zip(before, same, strict=True) if unchanged]
            before = [b for b, unchanged in zip(before, same, strict=True) if not unchanged]
            after = [a for a, unchanged in zip(after, same, strict=True) if not unchanged]
        pairs_before, pairs_after = _pairs_at(path, before), _pairs_at(path, after)
        if pairs_before == pairs_after:
            continue
        # The elements left as they were, read only at the paths whose values differ (a plan's lastUpdated).
        differing = {at for at, _ in pairs_before ^ pairs_after}
        unchanged = _pairs_at(path, kept, (differing, {prefix for at in differing for prefix in _prefixes(at)}))
        lost |= pairs_before - pairs_after - unchanged
        gained |= pairs_after - pairs_before - unchanged
    return lost, gained


def _nodes(value: Any) -> list[Any]:
    return [] if value is None else value if type(value) is list else [value]


def _pairs_at(path: str, nodes: list[Any], only: _Only | None = None) -> set[ValuePair]:
    pairs: set[ValuePair] = set()
    if nodes:
        _walk(path, nodes, pairs, only)
    return pairs


def _prefixes(path: str) -> list[str]:
    parts = path.split(".")
    return [".".join(parts[: k + 1]) for k in range(len(parts))]


def same_json(before: Any, after: Any) -> bool:
    """Whether two values are the same JSON (``True == 1`` and ``1 == 1.0`` in Python, not in what is stored)."""
    if before is after:
        return True
    if type(before) is not type(after) or before != after:
        return False
    return not isinstance(before, list | dict) or orjson.dumps(before) == orjson.dumps(after)


_SCALARS = (str, int, float, bool)


_Only = tuple[set[str], set[str]]
"""The paths whose values are wanted, and the paths that lead to them (theirs and their prefixes)."""


def _walk(path: str, nodes: list[Any], pairs: set[ValuePair], only: _Only | None = None) -> None:
    """The scalar values the evaluator finds at ``path`` and below it, where ``nodes`` are what it finds at
    ``path`` (a list's elements in its place); of the paths ``only`` names, where given. Objects are walked key by
    key over all of them at once: a plan's hundreds of units, whose fields are all :data:`UNIT_ROW_PATHS`, are
    passed over by their keys alone."""
    objects: list[dict[str, Any]] = []
    scalars: list[Any] = []
    for node in nodes:
        if type(node) is dict:
            objects.append(node)
        elif isinstance(node, _SCALARS):
            scalars.append(node)
    if scalars and (only is None or path in only[0]):
        if kept_as_values(path):
            pairs.update((path, orjson.dumps(value).decode()) for value in scalars)
        elif (kept := kept_at_attribute(path)) is not None:
            pairs.update((path, orjson.dumps(value).decode()) for value in scalars if kept(value))
    if not objects:
        return
    for key in set().union(*objects) if len(objects) > 1 else objects[0]:
        child = _child(path, key)
        if child is None or (only is not None and child not in only[1]):
            continue
        following: list[Any] = []
        for node in objects:
            value = node.get(key)
            if type(value) is list:
                following.extend(value)
            elif value is not None:
                following.append(value)
        if following:
            _walk(child, following, pairs, only)


@functools.lru_cache(maxsize=4096)
def _child(path: str, key: str) -> str | None:
    """The path of ``key`` below ``path``; None where nothing below it is kept: a unit's fields that rows hold, and
    a key holding a dot (a dotted path never reaches it)."""
    if "." in key:
        return None
    child = f"{path}.{key}" if path else key
    return None if child in UNIT_ROW_PATHS else child


def insert_values(db: sqlite3.Connection, rows: list[tuple[str, int, str]]) -> None:
    """Rows of ``listing_values`` added, (path, listing row id, value's JSON) each: the paths met for the first time
    given their codes."""
    if not rows:
        return
    paths = {row[0] for row in rows}
    db.executemany("INSERT OR IGNORE INTO value_paths(path) VALUES (?)", [(path,) for path in sorted(paths)])
    codes = dict(db.execute("SELECT path, code FROM value_paths"))
    db.executemany("INSERT INTO listing_values VALUES (?, ?, ?)", [(codes[p], listing, v) for p, listing, v in rows])
