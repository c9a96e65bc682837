"""The first page of a search ordered by relevance, distance or views: a partition and a short sort give what a
whole sort gives."""

from __future__ import annotations

import numpy as np
import pytest

from precon.service.search.columns import ColumnIndex
from precon.service.stores.sqlite.reads import _first_in_order


@pytest.mark.parametrize("seed", range(40))
def test_the_first_of_a_partial_order_are_those_of_a_whole_sort(seed: int) -> None:
    rng = np.random.default_rng(seed)
    size = int(rng.integers(1, 400))
    matched = np.sort(rng.choice(10_000, size=size, replace=False)).astype(np.int64)
    primary = rng.integers(0, 6, size=size).astype(np.float64)  # many ties
    special = rng.random(size)
    primary[special < 0.1] = np.inf
    primary[special > 0.95] = -np.inf
    if seed % 3 == 0:
        primary[rng.random(size) < 0.3] = np.nan
    rank = rng.permutation(size).astype(np.int64)
    whole = matched[np.lexsort((rank, primary))]
    for count in (1, 5, 20, size - 1, size, size + 3):
        if count < 1:
            continue
        assert list(_first_in_order(matched, primary, rank, count)[:count]) == list(whole[:count])


class DefaultOrder(ColumnIndex):
    """Only what :meth:`ColumnIndex.in_default_order` reads: the order and the size."""

    def __init__(self, order: np.ndarray) -> None:  # no catalogue to read
        self.default_order = order
        self.size = len(order)


@pytest.mark.parametrize("seed", range(30))
def test_the_first_in_the_default_order_are_those_of_the_whole_order(seed: int) -> None:
    rng = np.random.default_rng(seed)
    size = int(rng.integers(1, 5_000))
    index = DefaultOrder(rng.permutation(size).astype(np.int64))
    mask = rng.random(size) < rng.choice([0.0005, 0.01, 0.2, 0.9, 1.0])
    whole = index.in_default_order(mask)
    assert list(whole) == [p for p in index.default_order if mask[p]]
    for count in (1, 20, 21, 100, 2_000, size, size + 1):
        assert list(index.in_default_order(mask, count)) == list(whole[:count])
