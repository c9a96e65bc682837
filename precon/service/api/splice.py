"""Answers made of the stored bytes: a whole listing answered as it is stored, without decoding and encoding it.

A listing answered whole (every field, no references expanded) differs from its stored JSON in two ways only:
``"objectID"`` follows ``listingId``, and each media path (``"/media/..."``) is a URL on the serving host. Both are
insertions at fixed offsets of the stored bytes: a *plan*. The plan of a document is made the first time it is
answered, and kept only if splicing by it gives, byte for byte, what decoding, shaping and encoding give (for a
probe host: an insertion before every ``"/media/`` string either matches for every host or for none). A document
whose plan does not hold (its listingId is not a plain string, a media path stands where it is not rewritten, it
carries ``_score`` of its own, ...) is answered the long way, always.
"""

from __future__ import annotations

import threading
from array import array
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass

import orjson

from precon.service.api.shaping import MediaLinks, project_listing
from precon.service.stores.records import decode_document

LISTING_ID_KEY = b'"listingId":'
MEDIA_STRING = b'"/media/'
PROBE_BASE = "http://splice.invalid:1"
MAX_PLANS = 1_000_000
"""Plans kept per catalogue generation (about 200 bytes each); documents past this are answered the long way."""


@dataclass(frozen=True, slots=True)
class Plan:
    cuts: array[int]
    """Offsets of the stored bytes where something goes, in order: the host after the opening quote of each media
    path, and ``,"objectID":<id>`` after the value of ``listingId`` (the cut numbered :attr:`object_cut`)."""
    object_cut: int
    object_id: bytes


def _host(base_url: str) -> bytes:
    """The serving host as it reads inside a JSON string."""
    return orjson.dumps(base_url.rstrip("/"))[1:-1]


def splice(blob: bytes, plan: Plan, host: bytes) -> bytes:
    parts: list[bytes] = []
    previous = 0
    for number, at in enumerate(plan.cuts):
        parts.append(blob[previous:at])
        parts.append(plan.object_id if number == plan.object_cut else host)
        previous = at
    parts.append(blob[previous:])
    return b"".join(parts)


def make_plan(blob: bytes) -> Plan | None:
    """The document's plan, or None when splicing cannot give what shaping gives."""
    found = blob.find(LISTING_ID_KEY)
    if found < 0:
        return None
    start = found + len(LISTING_ID_KEY)
    end = blob.find(b'"', start + 1)
    if blob[start : start + 1] != b'"' or end < 0 or b"\\" in blob[start:end]:
        return None
    cuts = []
    at = blob.find(MEDIA_STRING)
    while at >= 0:
        cuts.append(at + 1)
        at = blob.find(MEDIA_STRING, at + 1)
    object_cut = bisect_left(cuts, end + 1)
    cuts.insert(object_cut, end + 1)
    plan = Plan(array("I", cuts), object_cut, b',"objectID":' + blob[start : end + 1])
    record = decode_document(blob)
    if "_score" in record:
        return None
    expected = orjson.dumps(project_listing(record, MediaLinks(PROBE_BASE)))
    return plan if splice(blob, plan, _host(PROBE_BASE)) == expected else None


class Splicer:
    """Whole listings as answer bytes, by their plans (made once per document and catalogue generation)."""

    SOURCES = 4
    """Catalogue generations whose plans are kept (the one being answered, and a few before it)."""

    def __init__(self) -> None:
        self._plans: dict[str, dict[int, Plan | None]] = {}
        self._lock = threading.Lock()

    def _of(self, source: str) -> dict[int, Plan | None]:
        plans = self._plans.get(source)
        if plans is None:
            with self._lock:
                plans = self._plans.setdefault(source, {})
                while len(self._plans) > self.SOURCES:
                    del self._plans[next(iter(self._plans))]
        return plans

    def listings(
        self,
        source: str,
        blobs: Sequence[tuple[int, bytes]],
        scores: Sequence[float | None] | None,
        media: MediaLinks,
    ) -> list[bytes]:
        """Each listing as the bytes of its answer, ``_score`` last when given (as the shaper adds it)."""
        host = _host(media.base_url)
        plans = self._of(source)
        answered: list[bytes] = []
        for position, (rowid, blob) in enumerate(blobs):
            try:
                plan = plans[rowid]
            except KeyError:
                plan = make_plan(blob)
                if len(plans) < MAX_PLANS:
                    plans[rowid] = plan
            score = None if scores is None else scores[position]
            if plan is None:
                shaped = project_listing(decode_document(blob), media)
                if score is not None:
                    shaped["_score"] = score
                answered.append(orjson.dumps(shaped))
                continue
            out = splice(blob, plan, host)
            if score is not None:
                out = out[:-1] + b',"_score":' + orjson.dumps(score) + b"}"
            answered.append(out)
        return answered


SPLICER = Splicer()
