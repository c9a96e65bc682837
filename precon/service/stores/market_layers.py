"""(ours) The market's columns and unit ledger of a generation as two layers: a ``base`` (as a whole build made them,
at some earlier generation) and the ``fresh`` columns of the listings written since, built on their own over the
base's grid; the base's listings written since are ``replaced`` (left out of it: their figures are the fresh
layer's, or they are gone). So a write of a few listings makes a few listings' columns, and the base is kept as it is
(in memory, and in the files workers share): nothing of the size of the catalogue is made again.

Every figure is a sum over listings, or a median over units; a request takes each layer's listings of a group and
adds their sums, and takes the medians over both layers at once (:func:`~.market_grid.medians`): the answers are
those of the columns built whole. When the fresh layer grows past :data:`COMPACT_SHARE` of the base, the two are
combined into a new base (:func:`compacted`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]

COMPACT_SHARE = 16
"""The fresh layer is combined into the base when it holds more than one in this many of the base's listings (and
more than :data:`COMPACT_LEAST` listings): its own patches, and the requests, cost in proportion to it."""
COMPACT_LEAST = 64


class ListingColumns(Protocol):
    """What both the market columns and the unit ledger are: listings by code, each deleted or not."""

    listing_codes: dict[str, int]
    listing_deleted: Mask
    history_seq: int

    def codes(self, listing_ids: Sequence[str], provinces: frozenset[str] | None) -> IntArray: ...


T = TypeVar("T", bound=ListingColumns)

Combine = Callable[[T, Sequence[str], T], T]
"""``combine(held, written, fresh)``: ``held`` without the listings of ``written``, with ``fresh``'s."""


@dataclass
class Layers(Generic[T]):
    """A generation's columns: ``base`` without its ``replaced`` listings, and ``fresh`` (None: no listing written
    since the base)."""

    base: T
    fresh: T | None = None
    replaced: Mask | None = None
    """Per listing code of the base, whether it was written since (None: none was)."""

    @property
    def layers(self) -> list[T]:
        return [self.base] if self.fresh is None else [self.base, self.fresh]

    @property
    def history_seq(self) -> int:
        """The last history entry the layers hold."""
        return (self.base if self.fresh is None else self.fresh).history_seq

    @property
    def base_listings(self) -> int:
        return len(self.base.listing_codes)

    def codes(self, listing_ids: Sequence[str], provinces: frozenset[str] | None = None) -> list[IntArray]:
        """Per layer, the codes of those of ``listing_ids`` it holds (in ``provinces``, when given), each once."""
        found = [self.base.codes(listing_ids, provinces)]
        if self.replaced is not None:
            found[0] = found[0][~self.replaced[found[0]]]
        if self.fresh is not None:
            found.append(self.fresh.codes(listing_ids, provinces))
        return found

    def deleted(self, listing: str) -> bool | None:
        """Whether the layers hold ``listing`` as a deleted listing (None: they do not hold it)."""
        if self.fresh is not None and listing in self.fresh.listing_codes:
            return bool(self.fresh.listing_deleted[self.fresh.listing_codes[listing]])
        code = self.base.listing_codes.get(listing)
        if code is None or (self.replaced is not None and self.replaced[code]):
            return None
        return bool(self.base.listing_deleted[code])


def as_layers(held: T | Layers[T]) -> Layers[T]:
    return held if isinstance(held, Layers) else Layers(held)


def patched(held: Layers[T], written: Sequence[str], built: T, combine: Combine[T]) -> Layers[T]:
    """``held`` with the listings ``written`` since its generation as ``built`` has them (those that still exist):
    they go into the fresh layer, and out of the base."""
    fresh = built if held.fresh is None else combine(held.fresh, written, built)
    replaced = np.zeros(held.base_listings, np.bool_) if held.replaced is None else held.replaced.copy()
    codes = [code for code in map(held.base.listing_codes.get, written) if code is not None]
    replaced[codes] = True
    found = Layers(held.base, fresh, replaced)
    fresh_listings = len(fresh.listing_codes)
    if fresh_listings > COMPACT_LEAST and fresh_listings * COMPACT_SHARE > held.base_listings:
        return compacted(found, combine)
    return found


def compacted(layers: Layers[T], combine: Combine[T]) -> Layers[T]:
    """The layers as one base: what a whole build holds."""
    if layers.fresh is None:
        return layers
    replaced = layers.replaced if layers.replaced is not None else np.zeros(layers.base_listings, np.bool_)
    codes = set(np.flatnonzero(replaced).tolist())
    written = [listing for listing, code in layers.base.listing_codes.items() if code in codes]
    return Layers(combine(layers.base, written, layers.fresh))
