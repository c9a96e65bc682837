"""Whether a plan holds a unit of one status under a price *and* from a floor up ("an available unit under $700,000
from the 10th floor"), answered per plan without testing its units.

A plan's units are kept grouped by status and, within a status, by price (see
:class:`~precon.service.search.plans.UnitColumns`). :class:`FloorSteps` holds, per unit, the highest floor among the
units of its plan and status priced no more than it: a plan has such a unit exactly when, at the last of its units of
that status priced under the bound (found by bisection), that highest floor is at least the floor asked. The bounds of
:mod:`.unit_bounds` answer one range exactly; this answers the two together, for every candidate plan at once.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
Mask = npt.NDArray[np.bool_]


class FloorSteps:
    """Per unit row, the rank (in :attr:`floors`) of the highest floor among the units before it in its plan and
    status, itself included: rows in price order, so that is the highest floor of the units priced at most its price
    (and of any tied with it ahead of it; a bisection lands after every tie). -1 where none has a floor."""

    def __init__(
        self, plan: IntArray, status: npt.NDArray[np.int32], floor: FloatArray, floors: FloatArray | None = None
    ) -> None:
        """From the unit rows, grouped by plan and status (in each group, by price). ``floors``: the floors to rank
        by (holding every floor of these rows), where these rows are some of an index's."""
        known = ~np.isnan(floor)
        self.floors: FloatArray = np.unique(floor[known]) if floors is None else floors
        """Every floor a unit is on, ascending."""
        starts = np.ones(len(plan), dtype=np.bool_)
        starts[1:] = (plan[1:] != plan[:-1]) | (status[1:] != status[:-1])
        # A running maximum that starts again at each group: each group's values lifted above every earlier group's.
        step = len(self.floors) + 1
        wide = np.int32 if (int(starts.sum()) + 1) * step < np.iinfo(np.int32).max else np.int64
        lift = np.cumsum(starts, dtype=wide)
        del starts
        lift *= step
        ranks = lift.copy()  # the rank plus one above the group's lift: 0 for no floor
        ranks[known] += np.searchsorted(self.floors, floor[known]).astype(wide) + 1
        np.maximum.accumulate(ranks, out=ranks)
        ranks -= lift
        ranks -= 1
        del lift
        dtype = np.int16 if len(self.floors) < np.iinfo(np.int16).max else np.int32
        self.highest: npt.NDArray[np.signedinteger] = ranks.astype(dtype)

    def any_unit(self, price: FloatArray, first: IntArray, count: IntArray, most: float, least_floor: float) -> Mask:
        """For each group of rows (``first``, ``count``: one plan's units of one status, by price), whether one of
        them is priced at most ``most`` and on floor ``least_floor`` or higher."""
        wanted = int(np.searchsorted(self.floors, least_floor, side="left"))
        result = np.zeros(len(first), dtype=np.bool_)
        some = np.flatnonzero(count > 0)
        # Groups whose cheapest unit is under the price and high enough are answered by it; the others are bisected
        # for their last unit under the price.
        cheapest = first[some]
        result[some] = (price[cheapest] <= most) & (self.highest[cheapest] >= wanted)
        some = some[~result[some]]
        low, high = first[some], first[some] + count[some]
        active = np.flatnonzero(low < high)
        while len(active):  # the first row of each group priced over ``most`` (NaN prices are last, and over it)
            mid = (low[active] + high[active]) // 2
            under = price[mid] <= most
            low[active[under]] = mid[under] + 1
            high[active[~under]] = mid[~under]
            active = active[low[active] < high[active]]
        held = low > first[some]
        result[some[held]] = self.highest[low[held] - 1] >= wanted
        return result
