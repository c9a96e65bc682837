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
from collections.abc import Sequence
from dataclasses import dataclass

import orjson

from precon.service.shaping import MediaLinks, project_listing
from precon.service.store import decode_document

LISTING_ID_KEY = b'"listingId":'
MEDIA_STRING = b'"/media/'
PROBE_BASE = "http://splice.invalid:1"
MAX_PLANS = 200_000
"""Plans kept per process (a few dozen bytes each); past this, they are forgotten and made again."""


@dataclass(frozen=True)
class Plan:
    object_id_at: int
    """Where ``,"objectID":<id>`` goes: after the value of ``listingId``."""
    object_id: bytes
    media: tuple[int, ...]
    """Offsets of the opening quote of each media path: the host goes after it."""


def _host(base_url: str) -> bytes:
    """The serving host as it reads inside a JSON string."""
    return orjson.dumps(base_url.rstrip("/"))[1:-1]


def splice(blob: bytes, plan: Plan, host: bytes) -> bytes:
    cuts = sorted([(plan.object_id_at, plan.object_id), *((at + 1, host) for at in plan.media)])
    parts: list[bytes] = []
    previous = 0
    for at, piece in cuts:
        parts.append(blob[previous:at])
        parts.append(piece)
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
    media = []
    at = blob.find(MEDIA_STRING)
    while at >= 0:
        media.append(at)
        at = blob.find(MEDIA_STRING, at + 1)
    plan = Plan(end + 1, b',"objectID":' + blob[start : end + 1], tuple(media))
    record = decode_document(blob)
    if "_score" in record:
        return None
    expected = orjson.dumps(project_listing(record, MediaLinks(PROBE_BASE)))
    return plan if splice(blob, plan, _host(PROBE_BASE)) == expected else None


class Splicer:
    """Whole listings as answer bytes, by their plans (made once per document and catalogue generation)."""

    def __init__(self) -> None:
        self._plans: dict[tuple[str, int], Plan | None] = {}
        self._lock = threading.Lock()

    def plan(self, source: str, rowid: int, blob: bytes) -> Plan | None:
        key = (source, rowid)
        try:
            return self._plans[key]
        except KeyError:
            pass
        plan = make_plan(blob)
        with self._lock:
            if len(self._plans) >= MAX_PLANS:
                self._plans.clear()
            self._plans[key] = plan
        return plan

    def listings(
        self,
        source: str,
        blobs: Sequence[tuple[int, bytes]],
        scores: Sequence[float | None] | None,
        media: MediaLinks,
    ) -> list[bytes]:
        """Each listing as the bytes of its answer, ``_score`` last when given (as the shaper adds it)."""
        host = _host(media.base_url)
        answered: list[bytes] = []
        for position, (rowid, blob) in enumerate(blobs):
            plan = self.plan(source, rowid, blob)
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
