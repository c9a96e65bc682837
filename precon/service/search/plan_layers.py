"""The floor plans' index as a held index and a small layer of the listings written since, as Lucene keeps segments.

A day's updates write a few listings of thousands; patching the held :class:`PlanIndex` for them
(:mod:`.plan_patch`) copies every column of millions of unit rows. Instead, :func:`layered` reads only the listings
written since the generation before into an index of their own (a layer: ``PlanIndex(..., written_since=...)``), and
:class:`LayeredPlans` answers from the held index and its layers: each listing from the newest that holds it (the
others' answers for it are set aside). At :data:`MOST_LAYERS` layers the next write's layer is instead one of every
listing written since the held index (layers merged, as Lucene merges segments); past :data:`LAYER_SHARE` of the
catalogue written since the held index, the held index is patched with them (or built whole), once, and has no layer
again.

A layer needs the held index's listings at the same positions of the column index (none deleted since, as a patch
does), and every listing created since written (as it always is).
"""

from __future__ import annotations

import sqlite3
import time

import numpy as np
import numpy.typing as npt

from precon.filters import Expr
from precon.service import metrics
from precon.service.search.column_patch import written_since
from precon.service.search.columns import ColumnIndex, Mask, catalogue_name
from precon.service.search.plan_index import PlanIndex
from precon.service.search.plans import IntArray, PlanMatch

LAYER_SHARE = 16
"""The layers hold at most one listing in this many (and at least :data:`LAYER_LEAST`): past that, the held index is
patched, once."""
LAYER_LEAST = 128
MOST_LAYERS = 8
"""Each layer is asked every question: at this many, they are merged into one."""


class LayeredPlans:
    """A held floor plans' index (``base``) and layers of the listings written since, over the column index of
    ``listing_rowids``: ``source`` says per listing which answers for it (0 the held index, ``k`` the layer
    ``layers[k - 1]``). Answers as one index of the newest layer's generation."""

    def __init__(self, base: PlanIndex, layers: list[PlanIndex], source: npt.NDArray[np.int16]) -> None:
        self.base, self.layers, self.source = base, layers, source
        self.generation = layers[-1].generation
        self.listings = len(source)
        self.listing_rowids = layers[-1].listing_rowids
        # Which listings each index answers for, made once: every question asks each of them.
        self._held_answers = source == 0
        # A layer made before a listing was created is shorter; one answering for no listing is not asked.
        answers = [(layer, (source == k)[: layer.listings]) for k, layer in enumerate(layers, start=1)]
        self._layer_answers = [(layer, mine) for layer, mine in answers if mine.any()]

    def listings_matching(self, expr: Expr, among: Mask | None = None) -> Mask:
        """As :meth:`PlanIndex.listings_matching`: each listing's answer from the index that holds it."""
        held = self.base.listings
        found = np.zeros(self.listings, dtype=np.bool_)
        found[:held] = self.base.listings_matching(expr, None if among is None else among[:held])
        found &= self._held_answers
        for layer, mine in self._layer_answers:
            found[: layer.listings] |= layer.listings_matching(
                expr, mine if among is None else among[: layer.listings] & mine
            )
        return found

    def page_matches(self, expr: Expr, positions: IntArray) -> list[PlanMatch]:
        """As :meth:`PlanIndex.page_matches`, each listing's from the index that holds it."""
        found: list[PlanMatch] = [None] * len(positions)  # type: ignore[list-item]  # every slot is filled below
        sources = self.source[positions]
        for number, index in enumerate([self.base, *self.layers]):
            at = np.flatnonzero(sources == number)
            if len(at):
                for slot, match in zip(at.tolist(), index.page_matches(expr, positions[at]), strict=True):
                    found[slot] = match
        return found


Plans = PlanIndex | LayeredPlans
"""What answers a ``unitFilter``: a floor plans' index, or one with layers."""


def base_of(held: Plans) -> PlanIndex:
    return held.base if isinstance(held, LayeredPlans) else held


def layered(held: Plans, db: sqlite3.Connection, index: ColumnIndex) -> LayeredPlans | None:
    """The floor plans of ``index``'s generation as ``held`` with one layer more, of the listings written since
    ``held`` (at :data:`MOST_LAYERS`, its layers merged into one of every listing written since its held index);
    None where a layer cannot serve (see the module's docstring) or the layers would hold too many listings."""
    started = time.perf_counter()
    before = held.listing_rowids
    listings = len(before)
    if held.generation >= index.generation or not listings or len(index.rowids) < listings:
        return None
    if not np.array_equal(index.rowids[:listings], before) or not base_of(held).known.all():
        return None
    layers = held.layers if isinstance(held, LayeredPlans) else []
    merged = len(layers) >= MOST_LAYERS
    since = (base_of(held) if merged else held).generation
    began = not db.in_transaction
    if began:
        db.execute("BEGIN")  # the written listings and their rows from one snapshot
    try:
        rowids = written_since(db, since)
        source = np.zeros(len(index.rowids), dtype=np.int16)
        if isinstance(held, LayeredPlans) and not merged:
            source[:listings] = held.source
        else:
            layers = []
        source[index.positions_of_rowids(rowids)] = len(layers) + 1
        if (source[listings:] == 0).any():
            return None  # a listing created since that no write names: not read into the layer
        if int(np.count_nonzero(source)) > max(LAYER_LEAST, len(index.rowids) // LAYER_SHARE):
            return None
        layer = PlanIndex(db, index.rowids, index.generation, written_since=since)
    finally:
        if began:
            db.execute("COMMIT")
    metrics.plan_index_patched(catalogue_name(db), time.perf_counter() - started)
    return LayeredPlans(base_of(held), [*layers, layer], source)
