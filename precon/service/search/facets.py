"""Facets: a small class per kind of attribute, as Datasette has one per kind of facet.

A listing facet is counted over the in-memory column index (numpy over codes, postings and bitmaps). Each class
knows how for its kind of attribute, and the key each stored value counts under: a text value's label (its first
spelling), a number's or a boolean's key from :mod:`precon.facet_keys`, which the client's own counting shares.
Ranking and limiting are :func:`precon.facet_keys.top`, as the client ranks. :func:`facet_for` picks the class from
how :mod:`precon.schema` classifies the attribute; the tests hold every facet to counts made from the records
themselves.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

import numpy as np

from precon.facet_keys import bool_key, number_key, top
from precon.schema import LISTING_ATTRIBUTES, LISTING_REFERENCE_FIELDS, IndexedAttribute
from precon.service.search.columns import ColumnIndex, IntArray, Mask, Vocabulary
from precon.service.search.sql_filter import canonical_path

Counts = list[tuple[str, int]]
Labels = dict[tuple[str, str], str]
"""A text value's label by (attribute path, folded value): the first spelling stored, what a facet shows."""
Keys = Callable[[IntArray], list[str]]
"""The keys of the values at these codes (or positions): asked only of the values that can be ranked."""

REFERENCE_ATTRIBUTES = frozenset(LISTING_REFERENCE_FIELDS.values())
"""Attributes whose values are profile paths (``Builders/<id>``)."""


class Facet(ABC):
    """The facet of one indexed attribute: its counts over the column index, its keys."""

    labelled = True
    """Whether a value is shown by its label (the first spelling stored), not as it is held."""

    def __init__(self, attribute: IndexedAttribute) -> None:
        self.attribute = attribute
        self.path = attribute.path

    @abstractmethod
    def count_columns(self, index: ColumnIndex, mask: Mask, limit: int | None) -> Counts:
        """The values counted over the listings of ``mask``, ranked, the first ``limit`` (None: all)."""


class ScalarFacet(Facet):
    """A single-valued text attribute (``sellingStatus``, ``cityOrDistrict``): a code per listing in the index;
    values shown by their labels."""

    def count_columns(self, index: ColumnIndex, mask: Mask, limit: int | None) -> Counts:
        column = index.text[self.path]
        counts = _bitmap_counts(index, self.path, mask)
        if counts is None:
            codes = column.codes[mask]
            counts = np.bincount(codes[codes >= 0], minlength=len(column.vocabulary))
        return _ranked(_labelled(self.path, column.vocabulary, index.labels), counts, limit)


class ArrayFacet(Facet):
    """A list of text values (``type``, ``amenities``): postings per value in the index (bitmaps where they are
    smaller); a listing counts once per value it holds."""

    def count_columns(self, index: ColumnIndex, mask: Mask, limit: int | None) -> Counts:
        postings = index.terms[self.path]
        counts = _bitmap_counts(index, self.path, mask)
        if counts is None:
            counts = np.bincount(postings.codes[mask[postings.owners]], minlength=len(postings.vocabulary))
        terms = postings.vocabulary
        keys = _labelled(self.path, terms, index.labels) if self.labelled else _as_stored(terms)
        return _ranked(keys, counts, limit)


class ReferenceFacet(ArrayFacet):
    """A list of profile paths (``builders``, ``architects``): counted and labelled as any list of text (a label is
    the path as first written); its own kind because ``search_facet_values`` finds its values by their profile's
    name."""


class NestedFacet(ArrayFacet):
    """A field of a nested list of records (``floorPlans.status``): counted as a list of the values of all a
    listing's records. Its booleans (``floorPlans.contactForPricing``) are held as the terms ``true`` and ``false``
    and shown as held, without labels."""

    def __init__(self, attribute: IndexedAttribute) -> None:
        super().__init__(attribute)
        self.labelled = attribute.kind == "text"


class NumericFacet(Facet):
    """Values held as numbers: a numeric attribute, single (a column) or in a list (``floorPlans.startPrice``: its
    number postings), and a single-valued boolean (0 or 1 in its column). Counted by distinct value."""

    labelled = False

    def __init__(self, attribute: IndexedAttribute) -> None:
        super().__init__(attribute)
        self._key: Callable[[Any], str] = bool_key if attribute.kind == "bool" else number_key

    def count_columns(self, index: ColumnIndex, mask: Mask, limit: int | None) -> Counts:
        if self.attribute.multi:
            postings = index.number_postings[self.path]
            values = postings.values[mask[postings.owners]]
        else:
            values = index.numbers[self.path][mask]
            values = values[~np.isnan(values)]
        unique, counts = np.unique(values, return_counts=True)
        key = self._key
        return _ranked(lambda positions: [key(value) for value in unique[positions].tolist()], counts, limit)


def facet_class(attribute: IndexedAttribute) -> type[Facet]:
    """The kind of facet of an attribute, from how :mod:`precon.schema` classifies it."""
    if attribute.kind == "number" or (attribute.kind == "bool" and not attribute.multi):
        return NumericFacet
    if not attribute.multi:
        return ScalarFacet
    if attribute.path in REFERENCE_ATTRIBUTES:
        return ReferenceFacet
    if "." in attribute.path:
        return NestedFacet
    return ArrayFacet


_FACETS: dict[str, Facet] = {path: facet_class(a)(a) for path, a in LISTING_ATTRIBUTES.items()}


def facet_for(name: str) -> Facet:
    """The facet of the attribute ``name`` (or an alias of it) stands for; KeyError for one the index does not
    hold (the API lets through only facetable names)."""
    return _FACETS[canonical_path(name)]


def _labelled(path: str, terms: Vocabulary | list[str], labels: Labels) -> Keys:
    def keys(codes: IntArray) -> list[str]:
        found = [terms[code] for code in codes.tolist()]
        return [labels.get((path, term), term) for term in found]

    return keys


def _as_stored(terms: list[str]) -> Keys:
    return lambda codes: [terms[code] for code in codes.tolist()]


def _bitmap_counts(index: ColumnIndex, path: str, mask: Mask) -> IntArray | None:
    """Per value of a text attribute, how many listings of ``mask`` its bitmap holds (the mask packed as the bitmaps
    are, ANDed with each, its bits counted); None where the index counts the attribute from its postings instead."""
    bitmaps = index.value_bitmaps(path)
    if bitmaps is None:
        return None
    words = bitmaps.shape[1]
    padded = np.zeros(words * 64, dtype=bool)
    padded[: len(mask)] = mask
    packed = np.packbits(padded, bitorder="little").view(np.uint64)
    counts: IntArray = np.bitwise_count(bitmaps & packed).sum(axis=1, dtype=np.int64)
    return counts


def _ranked(keys_of: Keys, counts: IntArray, limit: int | None) -> Counts:
    """The values counted at least once, ranked by :func:`precon.facet_keys.top`. Only those that can be among the
    first ``limit`` are named and sorted: a partition finds the count they need, so a facet of thousands of values
    (prices, positions) names a few hundred."""
    present = np.flatnonzero(counts)
    if limit is not None and len(present) > limit > 0:
        threshold = np.partition(counts[present], -limit)[-limit]
        present = present[counts[present] >= threshold]
    return top(zip(keys_of(present), counts[present].tolist(), strict=True), limit)
