"""The collector of reference cycles paused while documents are decoded (precon.service.collector): pauses
nest, across threads too, and leave the collector as they found it."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import orjson
import pytest

from precon.service.collector import collector_paused
from precon.service.stores.records import decode_document, decode_documents


@pytest.fixture(autouse=True)
def collector_restored() -> Iterator[None]:
    enabled = gc.isenabled()
    yield
    if enabled:
        gc.enable()
    else:
        gc.disable()


def test_a_pause_turns_the_collector_off_and_back_on() -> None:
    gc.enable()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_nested_pauses_end_with_the_outermost() -> None:
    gc.enable()
    with collector_paused():
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off() -> None:
    gc.disable()
    with collector_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_a_pause_that_raises_still_ends() -> None:
    gc.enable()
    with pytest.raises(ValueError), collector_paused():
        raise ValueError("inside")
    assert gc.isenabled()


def test_pauses_of_two_threads_overlapping_end_with_the_last() -> None:
    """Thread A pauses, B pauses, A ends while B still decodes (the collector stays off), then B ends."""
    gc.enable()
    both_in, a_out = threading.Barrier(2), threading.Event()
    seen: dict[str, bool] = {}

    def first() -> None:
        with collector_paused():
            both_in.wait(timeout=5)
        a_out.set()

    def second() -> None:
        with collector_paused():
            both_in.wait(timeout=5)
            a_out.wait(timeout=5)
            seen["after A ended, while B decodes"] = gc.isenabled()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert seen == {"after A ended, while B decodes": False}
    assert gc.isenabled()


def test_documents_decoded_together_are_those_decoded_one_by_one() -> None:
    gc.enable()
    records = [
        {"listingId": f"L{k}", "floorPlans": [{"units": [{"price": k * 1.5, "status": "Sold"}]}]} for k in range(50)
    ]
    blobs = [orjson.dumps(record) for record in records]
    assert decode_documents(iter(blobs)) == [decode_document(blob) for blob in blobs] == records
    assert gc.isenabled()
