"""How stored values are read as numbers when they are indexed (``as_number``, ``number_of``), and a unit's status
as ``listing_plan_units`` keeps it: the fast paths answer what reading the text with ``float`` answers."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from precon.filters import fold_text
from precon.filters.plans import number_of
from precon.service.search.plans import status_reading
from precon.service.search.sql_filter import as_number
from tests.test_service_unit_filter import float_reading

NUMBER_LIKE_TEXT = st.from_regex(r"\A[\s\u00a0\u2003]*[-+]?[0-9\u0660-\u0669\uff10-\uff19_.eE]{0,8}[\s]*\Z")
TRICKY = [
    "", " ", "7", " 7", "\u00a07", "\u20037.5", "+1", "-0", ".5", "5.", "1e3", "1_000", "_1", "inf", "-inf",
    "nan", "Infinity", "\u0663", "\uff17\uff10", "Available", "sold", "e5", "1e400", "N", "i", "\t\n12\n",
]  # fmt: skip


@settings(max_examples=400)
@given(st.one_of(st.text(), NUMBER_LIKE_TEXT, st.sampled_from(TRICKY), st.floats(), st.integers(-(10**15), 10**15)))
def test_text_and_numbers_read_as_float_reads_them(value: Any) -> None:
    expected = float_reading(value)
    for reading in (as_number(value), number_of(value)):
        assert reading == expected or (reading is None and expected is None)
        assert type(reading) is type(expected)


@given(st.one_of(st.text(max_size=80), st.sampled_from(TRICKY)))
def test_a_status_is_read_as_folded_text_and_its_number_whatever_its_length(status: str) -> None:
    assert status_reading(status) == (fold_text(status), as_number(status))
    assert status_reading(status) == (fold_text(status), as_number(status))  # the second time from the cache


def test_booleans_and_containers_are_not_numbers() -> None:
    for value in (True, False, None, [1], {"a": 1}, b"1"):
        assert as_number(value) is None
        assert number_of(value) is None
