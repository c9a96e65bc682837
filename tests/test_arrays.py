"""The numpy helpers the indexes' patches stand on (precon/service/search/arrays.py), against numpy's own."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from precon.service.search.arrays import Splice, ranges


@given(st.lists(st.tuples(st.integers(0, 50), st.integers(0, 20)), max_size=12))
def test_ranges_are_the_concatenated_ranges(pairs: list[tuple[int, int]]) -> None:
    starts = np.array([a for a, _ in pairs], dtype=np.int64)
    ends = starts + np.array([n for _, n in pairs], dtype=np.int64)
    expected = [i for a, b in zip(starts.tolist(), ends.tolist(), strict=True) for i in range(a, b)]
    assert ranges(starts, ends).tolist() == expected


@given(
    held=st.lists(st.floats(allow_nan=False), max_size=60),
    taken_out=st.lists(st.booleans(), max_size=60),
    new=st.lists(st.integers(-(2**40), 2**40), max_size=20),
    data=st.data(),
)
def test_a_splice_is_numpys_insert_into_the_rows_kept(
    held: list[float], taken_out: list[bool], new: list[int], data: st.DataObject
) -> None:
    column = np.array(held, dtype=np.float64)
    kept = ~np.array((taken_out + [False] * len(held))[: len(held)], dtype=np.bool_)
    places = data.draw(st.lists(st.integers(0, int(kept.sum())), min_size=len(new), max_size=len(new)))
    at = np.array(sorted(places), dtype=np.int64)
    added = np.array(new, dtype=np.int64)
    spliced = Splice(kept, at)
    expected = np.insert(column[kept], at, added)
    for _ in range(2):  # found once, applied to every column alike
        found = spliced(column, added)
        assert found.dtype == expected.dtype and np.array_equal(found, expected)
    codes = np.arange(len(held), dtype=np.int32)
    assert np.array_equal(spliced(codes, added.astype(np.int32)), np.insert(codes[kept], at, added.astype(np.int32)))
