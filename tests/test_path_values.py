"""A listing's rows of ``listing_values`` (precon/service/search/path_values.py) hold, per path, exactly the values
the reference evaluator finds there, for records of any shape; and what a rewrite deletes and adds turns the rows
of what a listing was into the rows of what it becomes."""

from __future__ import annotations

import copy
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from precon.filters import Compare, Match, Range, compile_predicate, value_test
from precon.filters.evaluation import _make_getter
from precon.service.search.path_values import changed_value_pairs, kept_as_values, value_pairs

KEYS = st.sampled_from(["name", "tags", "units", "code", "a.b", "floorPlans", "unitNumber", "photos", "x"])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(-2, 2), st.sampled_from(["", "1", "A"]))
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=12,
)
RECORDS = st.dictionaries(KEYS, VALUES, max_size=4)


def paths_of(record: dict[str, Any], prefix: str = "") -> set[str]:
    """Every dotted path a record's objects reach (walking lists), whatever is there."""
    found: set[str] = set()

    def walk(value: Any, path: str) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                child = f"{path}.{key}" if path else key
                found.add(child)
                walk(inner, child)
        elif isinstance(value, list):
            for element in value:
                walk(element, path)

    walk(record, prefix)
    return found


def evaluators_values(record: dict[str, Any], path: str) -> set[str]:
    """The scalars the evaluator finds at ``path``, as JSON (no other value passes any of its tests)."""
    values = _make_getter(path)(record)
    return {orjson.dumps(v).decode() for v in values if isinstance(v, str | int | float | bool)}


@settings(max_examples=300, deadline=None)
@given(RECORDS)
def test_each_paths_rows_are_the_values_the_evaluator_finds_there(record: dict[str, Any]) -> None:
    pairs = value_pairs(record)
    for path in paths_of(record) | {"floorPlans.units.unitNumber", "tags.code"}:
        if not kept_as_values(path):
            continue
        # A key holding a dot ("a.b") is reached by neither: the evaluator splits the path at it.
        assert {value for at, value in pairs if at == path} == evaluators_values(record, path), path


@settings(max_examples=300, deadline=None)
@given(RECORDS, RECORDS)
def test_what_a_rewrite_deletes_and_adds_makes_the_new_records_rows(old: dict[str, Any], new: dict[str, Any]) -> None:
    lost, gained = changed_value_pairs(old, new)
    assert (value_pairs(old) - lost) | gained == value_pairs(new)
    assert not lost & value_pairs(new) and not gained & value_pairs(old)


@settings(max_examples=300, deadline=None)
@given(RECORDS, st.integers(0, 3), st.sampled_from([("name",), ("image", "name"), ("units", "code")]), VALUES)
def test_a_change_in_one_element_of_a_list_is_found_beside_the_others(
    old: dict[str, Any], position: int, at: tuple[str, ...], value: Any
) -> None:
    elements = [
        {"name": "A", "image": {"name": "a.svg"}, "tags": ["x"]},
        {"name": "B", "image": [{"name": "b.svg"}, {"name": "a.svg"}]},
        {"name": "A", "code": 1, "units": [{"code": 2, "unitNumber": "1"}]},
        {"units": [{"code": 2}, {"code": 3}], "image": {"name": "b.svg"}},
    ]
    before = {**old, "floorPlans": elements}
    changed = copy.deepcopy(elements[position])
    inner = changed
    for key in at[:-1]:
        inner = inner.setdefault(key, {})
        inner = inner[0] if isinstance(inner, list) else inner
    inner[at[-1]] = value
    after = {**old, "floorPlans": [*elements[:position], changed, *elements[position + 1 :]]}
    lost, gained = changed_value_pairs(before, after)
    assert (value_pairs(before) - lost) | gained == value_pairs(after)


TESTS = st.one_of(
    st.builds(Match, st.just("a"), st.sampled_from(["1", "A", "a", "true", "0", "1.0", "", " x-y ", "-5"])),
    st.builds(Compare, st.just("a"), st.sampled_from(["=", "<", "<=", ">", ">="]), st.integers(-3, 3)),
    st.builds(Range, st.just("a"), st.integers(-3, 0), st.integers(0, 3)),
)


@settings(max_examples=500, deadline=None)
@given(TESTS, st.one_of(SCALARS, st.sampled_from(["x_y", "X Y", "-5", " 1 ", "1e0", "nan", "inf"])))
def test_one_values_test_is_the_evaluators_over_a_record_holding_it(test: Any, value: Any) -> None:
    assert value_test(test)(value) == compile_predicate(test)({"a": value})
