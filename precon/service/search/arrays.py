"""Numpy helpers the column indexes and the market's columns share."""

from __future__ import annotations

from itertools import pairwise
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
T = TypeVar("T", bound=np.generic)


def ranges(starts: IntArray, ends: IntArray) -> IntArray:
    """The concatenation of ``range(start, end)`` for each pair, without a Python loop."""
    counts = ends - starts
    if not len(counts):
        return np.empty(0, np.int64)
    offsets = np.repeat(starts - (np.cumsum(counts) - counts), counts)
    return np.arange(int(counts.sum()), dtype=np.int64) + offsets


class Splice:
    """The rows ``kept`` of a held column with new rows put in among them (before kept row ``at[j]``, ``at``
    nondecreasing): what ``np.insert(held[kept], at, new)`` gives. Where the rows taken out and put in are a few runs
    (a write's listings in a column of millions of rows), the result is a few slices joined, found once for every
    column: one copy of each, where ``np.insert`` masks, sorts and copies each column again."""

    def __init__(self, kept: npt.NDArray[np.bool_], at: IntArray) -> None:
        bounds = [0, *(np.flatnonzero(kept[1:] != kept[:-1]) + 1).tolist(), len(kept)]
        runs = [(a, b) for a, b in pairwise(bounds) if b > a and kept[a]]
        starts, ends = [a for a, _ in runs], [b for _, b in runs]
        boundaries = (np.flatnonzero(np.diff(at)) + 1).tolist()
        group_first, group_end = [0, *boundaries], [*boundaries, len(at)]
        self.pieces: list[tuple[bool, int, int]] = []
        """(from the new rows, first, end) in order."""
        run, cursor, taken = 0, starts[0] if starts else 0, 0
        for first, end in zip(group_first, group_end, strict=True) if len(at) else ():
            target = int(at[first])
            while taken < target:
                step = min(ends[run] - cursor, target - taken)
                self.pieces.append((False, cursor, cursor + step))
                cursor, taken = cursor + step, taken + step
                if cursor == ends[run]:
                    run += 1
                    cursor = starts[run] if run < len(starts) else cursor
            self.pieces.append((True, first, end))
        while run < len(starts):
            if cursor < ends[run]:
                self.pieces.append((False, cursor, ends[run]))
            run += 1
            cursor = starts[run] if run < len(starts) else cursor

    def __call__(self, held: npt.NDArray[T], new: npt.NDArray[Any]) -> npt.NDArray[T]:
        parts = [new[a:b] if added else held[a:b] for added, a, b in self.pieces]
        return np.concatenate(parts).astype(held.dtype, copy=False) if parts else held[:0].copy()
