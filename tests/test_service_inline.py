"""Where a listing search runs: on the event loop only when every part of it is in memory already (its key checked
in SQLite or remembered, its rate limited in this machine, the current generation's indexes built); in a worker
thread otherwise, so that an index being built or a round trip to a server holds up only the calls that wait for
it."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from precon.service.accounts.sqlite import AccountStore
from precon.service.api.calls import Service
from precon.service.config import ServiceSettings
from precon.service.runtime import load
from precon.service.stores.sqlite.store import SQLiteStore
from precon.service.stores.types import ListingQuery
from tests.catalogues import generated_catalogue


@pytest.fixture
def stores(tmp_path: Path) -> tuple[SQLiteStore, SQLiteStore]:
    built = generated_catalogue(40, 3)
    live = SQLiteStore(tmp_path / "catalogue.sqlite3")
    load(live, built.listings, built.profiles)
    sandbox = SQLiteStore(tmp_path / "sandbox.sqlite3")
    yield live, sandbox
    live.close()
    sandbox.close()


def service_over(tmp_path: Path, live: SQLiteStore, sandbox: SQLiteStore, **settings: object) -> Service:
    accounts = AccountStore(tmp_path / "accounts.sqlite3")
    return Service(ServiceSettings(data_dir=tmp_path, **settings), live, sandbox, accounts)


def thread_of_search(service: Service, version: str = "v1", **kinds: bool) -> tuple[bool, int]:
    """Whether the search ran on the event loop's thread, and the total it found."""

    async def main() -> tuple[bool, int]:
        loop_thread = threading.current_thread()
        store = service.store_of(version)

        def work() -> tuple[bool, int]:
            total = store.search_listings(ListingQuery(limit=5)).total
            return threading.current_thread() is loop_thread, total

        options = {"text_in_some_fields": False, "unit_filter": False, **kinds}
        return await service.run_listing_search(version, work, **options)

    # On a thread of its own: a test run before this one may leave an event loop running on the main thread.
    with ThreadPoolExecutor(max_workers=1) as runner:
        return runner.submit(asyncio.run, main()).result()


def test_a_search_runs_on_the_loop_once_the_indexes_are_built(tmp_path: Path, stores: tuple) -> None:
    live, sandbox = stores
    service = service_over(tmp_path, live, sandbox)
    assert not live.answers_from_memory(False, False)
    on_loop, total = thread_of_search(service)
    assert (on_loop, total) == (False, 40)  # the first builds the indexes, in a thread
    assert live.answers_from_memory(False, False)
    assert thread_of_search(service) == (True, 40)


def test_a_write_sends_the_next_search_to_a_thread_until_the_indexes_are_rebuilt(tmp_path: Path, stores: tuple) -> None:
    live, sandbox = stores
    service = service_over(tmp_path, live, sandbox)
    thread_of_search(service)
    assert thread_of_search(service)[0]
    extra = generated_catalogue(41, 3).listings[-1]
    live.upsert_listings([{**extra, "listingId": "written-after"}])
    assert not live.answers_from_memory(False, False)
    assert thread_of_search(service) == (False, 41)
    assert thread_of_search(service) == (True, 41)


def test_what_the_indexes_do_not_answer_runs_in_a_thread(tmp_path: Path, stores: tuple) -> None:
    live, sandbox = stores
    service = service_over(tmp_path, live, sandbox)
    thread_of_search(service)
    # Text in some fields only is FTS5's column filter: a query to SQLite.
    assert thread_of_search(service, text_in_some_fields=True)[0] is False
    # The floor-plan index is built on the first unitFilter of a generation.
    assert thread_of_search(service, unit_filter=True)[0] is False
    live._plans(live._columns())
    assert thread_of_search(service, unit_filter=True)[0] is True


def test_remote_checks_run_in_a_thread(tmp_path: Path, stores: tuple) -> None:
    live, sandbox = stores
    # Rate limits kept in Redis are a round trip: the key check is never on the loop (the search after it, which
    # asks neither, is, once the indexes are in memory).
    remote = service_over(tmp_path, live, sandbox, redis_url="redis://127.0.0.1:1/0")
    assert not remote.checks_locally("any key")
    unlimited = service_over(tmp_path, live, sandbox, redis_url="redis://127.0.0.1:1/0", rate_limit=0)
    assert not unlimited.checks_locally("any key")  # an unknown key still meets the limit on guessing, in Redis
    local = service_over(tmp_path, live, sandbox)
    assert local.checks_locally("any key")
    thread_of_search(remote)
    assert thread_of_search(remote)[0] is True


def thread_of_read(service: Service, records: int) -> bool:
    """Whether a read by key of ``records`` records ran on the event loop's thread."""

    async def main() -> bool:
        loop_thread = threading.current_thread()
        return await service.run_small_read(lambda: threading.current_thread() is loop_thread, records)

    with ThreadPoolExecutor(max_workers=1) as runner:
        return runner.submit(asyncio.run, main()).result()


def test_a_read_of_a_few_listings_by_id_runs_on_the_loop_a_larger_one_in_a_thread(
    tmp_path: Path, stores: tuple
) -> None:
    from precon.service.api.calls import SMALL_READ

    live, sandbox = stores
    service = service_over(tmp_path, live, sandbox)
    assert thread_of_read(service, 1) and thread_of_read(service, SMALL_READ)
    assert not thread_of_read(service, SMALL_READ + 1)


def test_multiple_listings_and_the_health_check_are_answered_on_the_loop(tmp_path: Path, stores: tuple) -> None:
    """Both are coroutines: FastAPI runs them on the event loop, where a search answered from memory runs, rather
    than handing them to a worker thread and back (about 100 ms under load, for a read of a millisecond)."""
    import inspect

    from precon.service.api.routes.listings import multiple_listings
    from precon.service.app import create_app

    live, sandbox = stores
    assert inspect.iscoroutinefunction(multiple_listings)
    accounts = AccountStore(tmp_path / "accounts.sqlite3")
    app = create_app(ServiceSettings(data_dir=tmp_path), live=live, sandbox=sandbox, accounts=accounts)
    health = next(route for route in app.routes if getattr(route, "path", None) == "/healthz")
    assert inspect.iscoroutinefunction(health.endpoint)


def test_a_filter_on_a_path_the_column_index_lacks_runs_in_a_thread_until_its_answer_is_held(
    tmp_path: Path, stores: tuple
) -> None:
    from precon.filters import parse
    from precon.service.api.scope import filter_or_none

    live, sandbox = stores
    service = service_over(tmp_path, live, sandbox)
    thread_of_search(service)
    assert thread_of_search(service)[0]
    # The first reads the path's values (or builds the floor plans' index) in a thread; once held, on the loop.
    # Every kind of test the column index leaves to rows: a path it lacks, a unit's number, price compared or
    # matched. (A status or a text attribute compared as a number is the index's own: on the loop at once.)
    for text in ("ceilingHeights > 9", "floorPlans.units.status >= 1", "ceilingHeights:10"):
        assert live.answers_from_memory(False, False, parse(text)), text
    for text in ('floorPlans.name:"Suite 1B" AND cityOrDistrict:Toronto', "floorPlans.units.unitNumber != 201",
                 "NOT floorPlans.units.price < 500000", "floorPlans.units.price:477990"):  # fmt: skip
        expr = parse(text)
        assert not live.answers_from_memory(False, False, expr), text
        assert not thread_of_search(service, filter_expr=expr)[0], text
        live.search_listings(ListingQuery(filter=expr, limit=5))
        assert live.answers_from_memory(False, False, expr), text
        assert thread_of_search(service, filter_expr=expr)[0], text
    # After a write, the values are read again (the written listings) before the search may run on the loop.
    held = parse('floorPlans.name:"Suite 1B"')
    extra = generated_catalogue(41, 3).listings[-1]
    live.upsert_listings([{**extra, "listingId": "written-after"}])
    thread_of_search(service)  # the column index follows the write
    assert thread_of_search(service)[0]
    assert not live.answers_from_memory(False, False, held)
    live.search_listings(ListingQuery(filter=held, limit=5))
    assert live.answers_from_memory(False, False, held)
    assert filter_or_none(None) is None and filter_or_none("((") is None  # refused where it is read


def test_a_path_of_too_many_values_to_test_at_once_stays_in_a_thread(
    tmp_path: Path, stores: tuple, monkeypatch: pytest.MonkeyPatch
) -> None:
    from precon.filters import parse
    from precon.service.search import held_values

    live, _ = stores
    expr = parse('floorPlans.name:"Suite 1B"')
    live.warm()
    live.search_listings(ListingQuery(filter=expr, limit=5))
    assert live.answers_from_memory(False, False, expr)
    monkeypatch.setattr(held_values, "AT_ONCE_VALUES", 1)  # each listing's plans are named alike: more than one
    assert not live.answers_from_memory(False, False, expr)
    monkeypatch.setattr(held_values, "AT_ONCE_VALUES", 20_000)
    monkeypatch.setattr(held_values, "AT_ONCE_PAIRS", 10)
    assert not live.answers_from_memory(False, False, expr)
