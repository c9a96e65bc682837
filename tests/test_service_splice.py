"""Whole listings answered from their stored bytes (precon.service.api.splice) are, byte for byte, what decoding,
shaping and encoding give; a document the splice cannot reproduce is answered the long way."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from precon.service.api.responses import EncodedResults, encode
from precon.service.api.shaping import MediaLinks, project_listing
from precon.service.api.splice import Splicer, make_plan
from precon.service.runtime import load
from precon.service.stores.records import decode_document
from precon.service.stores.sqlite.store import SQLiteStore
from precon.service.stores.types import ListingQuery
from tests.catalogues import generated_catalogue

MEDIA = MediaLinks("http://127.0.0.1:8123/")


def the_long_way(blob: bytes, score: float | None) -> bytes:
    shaped = project_listing(decode_document(blob), MEDIA)
    if score is not None:
        shaped["_score"] = score
    return orjson.dumps(shaped)


def odd(listing_id: str, **fields: Any) -> dict[str, Any]:
    return {
        "listingId": listing_id,
        "path": f"Listings/{listing_id}",
        "name": f"Odd {listing_id}",
        "state": "Ontario",
        "cityOrDistrict": "Toronto",
        "type": ["Condo"],
        **fields,
    }


ODD_LISTINGS = [
    # A media path where the shaper leaves it as it is: in the text, in videos, in a logo that is a bare string.
    odd("ODDAA1", summary="/media/not-an-image", coverPhoto={"url": "/media/cover.svg", "name": "c"}),
    odd("ODDAA2", videos=["/media/video.mp4"], photos=[{"url": "/media/p1.svg"}, {"url": "https://x/p2.jpg"}]),
    odd("ODDAA3", logo="/media/logo.svg", floorPlans=None),
    odd("ODDAA4", paymentStructures=[{"url": "/media/deposit.pdf"}]),
    # Escapes and keys that the shaper moves or replaces.
    odd("ODDAA5", name='Quote " and \\ backslash', _score=3.5),
    odd("ODDAA6", neighbourhood=["The \u00e9t\u00e9 \u2603"], startPrice=1.5e300, endPrice=-0.0),
]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SQLiteStore]:
    built = generated_catalogue(120, 3)
    opened = SQLiteStore(tmp_path_factory.mktemp("splice") / "catalogue.sqlite3")
    load(opened, [*built.listings, *ODD_LISTINGS], built.profiles)
    yield opened
    opened.close()


def every_blob(store: SQLiteStore) -> tuple[str, list[tuple[int, bytes]]]:
    hits = store.search_listings(ListingQuery(limit=10_000, raw=True))
    assert hits.blobs is not None and hits.documents == []
    return hits.source, hits.blobs


def test_generated_listings_are_answered_from_their_stored_bytes(store: SQLiteStore) -> None:
    _, blobs = every_blob(store)
    generated = [(rowid, blob) for rowid, blob in blobs if b'"ODDAA' not in blob]
    assert len(generated) == 120
    assert all(make_plan(blob) is not None for _, blob in generated)


def test_every_listing_reads_as_the_long_way_gives_it(store: SQLiteStore) -> None:
    source, blobs = every_blob(store)
    scores = [None if i % 3 else i / 7 for i in range(len(blobs))]
    splicer = Splicer()
    for _ in range(2):  # plans made, then plans kept
        answered = splicer.listings(source, blobs, scores, MEDIA)
        assert answered == [the_long_way(blob, score) for (_, blob), score in zip(blobs, scores, strict=True)]


def test_odd_listings_that_cannot_be_spliced_fall_back(store: SQLiteStore) -> None:
    _, blobs = every_blob(store)
    plans = {decode_document(blob)["listingId"]: make_plan(blob) for _, blob in blobs if b'"ODDAA' in blob}
    assert [plans[f"ODDAA{n}"] for n in range(1, 6)] == [None] * 5  # ODDAA5: its own _score
    assert plans["ODDAA6"] is not None


def test_encoded_results_are_put_in_the_envelope_as_they_are() -> None:
    payload = {"results": [{"a": 1}, {"b": "é"}], "total": 2, "page": 0, "facets": {"type": {"Condo": 2}}}
    encoded = {**payload, "results": EncodedResults(orjson.dumps(r) for r in payload["results"])}
    assert encode(encoded) == orjson.dumps(payload)
    assert encode({**payload, "results": EncodedResults()}) == orjson.dumps({**payload, "results": []})


def test_a_search_page_is_the_same_answered_either_way(store: SQLiteStore, tmp_path: Path) -> None:
    raw = store.search_listings(ListingQuery(limit=50, offset=10, raw=True))
    decoded = store.search_listings(ListingQuery(limit=50, offset=10))
    assert raw.blobs is not None
    assert [decode_document(blob) for _, blob in raw.blobs] == decoded.documents
    assert (raw.total, raw.scores, raw.facets) == (decoded.total, decoded.scores, decoded.facets)
