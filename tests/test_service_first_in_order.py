"""The first page of a search ordered by relevance, distance or views: a partition and a short sort give what a
whole sort gives."""

from __future__ import annotations

import numpy as np
import pytest

from precon.service.store import _first_in_order


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
