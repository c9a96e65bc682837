"""Draws from a seeded :class:`random.Random`: weighted picks, distinct indices, counts apportioned by share.

Every generator module draws through these (or straight from its ``Random``), so the order of the draws is the
catalogue: changing which draw comes first changes every listing after it.
"""

from __future__ import annotations

from bisect import bisect
from collections.abc import Callable, Sequence
from itertools import accumulate
from random import Random
from typing import Any

Pool = tuple[list[int], list[float]]
"""Indices and their cumulative weights, for weighted picks by bisection."""


def distinct_indices(rand: Callable[[], float], population: int, k: int) -> list[int]:
    """``k`` distinct indices below ``population`` (a partial Fisher-Yates shuffle; cheaper than Random.sample)."""
    pool = list(range(population))
    for i in range(k):
        j = i + int(rand() * (population - i))
        pool[i], pool[j] = pool[j], pool[i]
    return pool[:k]


def apportion(total: int, shares: dict[str, float], at_least_one: bool) -> dict[str, int]:
    """Split ``total`` over the keys by largest remainder; with ``at_least_one`` every key gets one first."""
    keys = list(shares)
    counts = dict.fromkeys(keys, 0)
    if total <= 0:
        return counts
    remaining = total
    if at_least_one and total >= len(keys):
        for key in keys:
            counts[key] = 1
        remaining -= len(keys)
    weight_sum = sum(shares.values())
    quotas = {key: remaining * shares[key] / weight_sum for key in keys}
    for key in keys:
        counts[key] += int(quotas[key])
    left = total - sum(counts.values())
    by_remainder = sorted(keys, key=lambda key: (-(quotas[key] - int(quotas[key])), keys.index(key)))
    for key in by_remainder[:left]:
        counts[key] += 1
    return counts


def spread(rng: Random, total: int, shares: dict[str, float], at_least_one: bool) -> list[str]:
    """``total`` keys in a shuffled order, each appearing its apportioned number of times."""
    counts = apportion(total, shares, at_least_one)
    keys = [key for key, count in counts.items() for _ in range(count)]
    rng.shuffle(keys)
    return keys


def make_pool(indices: list[int], weights: Sequence[float]) -> Pool:
    """A pool of ``indices`` weighted by ``weights[index]``."""
    return indices, list(accumulate(weights[i] for i in indices))


def pick(rng: Random, pool: Pool) -> int:
    """One index of ``pool``, drawn by weight."""
    indices, cumulative = pool
    position = bisect(cumulative, rng.random() * cumulative[-1])
    return indices[min(position, len(indices) - 1)]


def weighted(rng: Random, options: Sequence[Any], cumulative: Sequence[float]) -> Any:
    """One of ``options``, drawn by the cumulative weights beside them."""
    position = bisect(cumulative, rng.random() * cumulative[-1])
    return options[min(position, len(options) - 1)]
