"""Numpy helpers the column indexes share."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]


def ranges(starts: IntArray, ends: IntArray) -> IntArray:
    """The concatenation of ``range(start, end)`` for each pair, without a Python loop."""
    counts = ends - starts
    if not len(counts):
        return np.empty(0, np.int64)
    offsets = np.repeat(starts - (np.cumsum(counts) - counts), counts)
    return np.arange(int(counts.sum()), dtype=np.int64) + offsets
