"""The medians of ``market_stats`` (``market_grid.medians``) against a brute force over the same runs, on every way
it has of finding them: the market whole, a few listings' runs gathered, many listings in one group each (one
pass), and listings in several groups."""

from __future__ import annotations

import numpy as np
import pytest

from precon.service.stores.market_grid import BLOCK, Runs, medians

WIDTH = 14


def random_runs(rng: np.random.Generator, count: int, listings: int) -> Runs:
    listing = rng.integers(0, listings, count)
    first = rng.integers(0, WIDTH, count)
    last = np.minimum(first + rng.integers(1, WIDTH, count), WIDTH)
    value = rng.integers(100, 400, count).astype(np.float64) * 1000  # ties across blocks
    value[rng.random(count) < 0.02] = np.nan  # no price: not a run
    return Runs.ordered(listing, first, last, value, listings, WIDTH)


def brute_force(runs: Runs, members: list[set[int]], columns: np.ndarray) -> np.ndarray:
    found = np.full((len(members), len(columns)), np.nan)
    for g, held in enumerate(members):
        mine = np.isin(runs.listing, list(held))
        for k, column in enumerate(columns.tolist()):
            holding = mine & (runs.first <= column) & (column < runs.last)
            if holding.any():
                found[g, k] = float(np.median(runs.value[holding]))
    return found


CASES = {
    "the market whole": (1, 1.0, False),
    "a few listings, three groups": (3, 0.02, False),
    "every listing in one of ten groups": (10, 1.0, False),
    "half the listings in four groups": (4, 0.5, False),
    "listings in several groups": (3, 0.8, True),
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_medians_match_a_brute_force(case: str, seed: int) -> None:
    groups, share, overlapping = CASES[case]
    rng = np.random.default_rng(seed)
    listings = 400
    runs = random_runs(rng, 5 * BLOCK + 37, listings)
    chosen = rng.permutation(listings)[: int(listings * share)]
    members: list[set[int]] = [set() for _ in range(groups)]
    for listing in chosen.tolist():
        holding = rng.choice(groups, size=rng.integers(1, groups + 1) if overlapping else 1, replace=False)
        for g in holding.tolist():
            members[g].add(listing)
    held = [np.array(sorted(listings_of), np.int64) for listings_of in members]
    columns = np.arange(WIDTH)
    found = medians(runs, held, listings, columns)
    np.testing.assert_array_equal(found, brute_force(runs, members, columns))


def test_no_runs_no_medians() -> None:
    runs = Runs.ordered(*(np.empty(0, np.int64),) * 3, np.empty(0), 5, WIDTH)
    found = medians(runs, [np.arange(5)], 5, np.arange(3))
    assert np.isnan(found).all()
