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


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("seed", [4, 5])
def test_medians_over_a_layer_beside_match_a_brute_force(case: str, seed: int) -> None:
    """A small layer's runs beside (``market_layers``: the listings written since the base): each group's medians are
    taken over its runs in both, ties between the layers included (their values are drawn from the same few)."""
    groups, share, overlapping = CASES[case]
    rng = np.random.default_rng(seed)
    listings, fresh_listings = 400, 12
    runs = random_runs(rng, 5 * BLOCK + 37, listings)
    fresh = random_runs(rng, 90, fresh_listings)
    members: list[set[int]] = [set() for _ in range(groups)]
    fresh_members: list[set[int]] = [set() for _ in range(groups)]
    for held, count in ((members, listings), (fresh_members, fresh_listings)):
        for listing in rng.permutation(count)[: max(1, int(count * share))].tolist():
            holding = rng.choice(groups, size=rng.integers(1, groups + 1) if overlapping else 1, replace=False)
            for g in holding.tolist():
                held[g].add(listing)
    as_arrays = [[np.array(sorted(of), np.int64) for of in held] for held in (members, fresh_members)]
    columns = np.arange(WIDTH)
    found = medians(runs, as_arrays[0], listings, columns, [(fresh, as_arrays[1], fresh_listings)])
    both = Runs.ordered(
        np.concatenate([runs.listing, fresh.listing + listings]),
        np.concatenate([runs.first, fresh.first]),
        np.concatenate([runs.last, fresh.last]),
        np.concatenate([runs.value, fresh.value]),
        listings + fresh_listings,
        WIDTH,
    )
    together = [held | {listing + listings for listing in fresh_members[g]} for g, held in enumerate(members)]
    np.testing.assert_array_equal(found, brute_force(both, together, columns))


def test_a_layer_beside_an_empty_base() -> None:
    empty = Runs.ordered(*(np.empty(0, np.int64),) * 3, np.empty(0), 5, WIDTH)
    fresh = random_runs(np.random.default_rng(9), 40, 3)
    found = medians(empty, [np.arange(5)], 5, np.arange(WIDTH), [(fresh, [np.arange(3)], 3)])
    np.testing.assert_array_equal(found, brute_force(fresh, [{0, 1, 2}], np.arange(WIDTH)))
