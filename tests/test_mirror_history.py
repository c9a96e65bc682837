"""A daily mirror keeps the market's history: each run writes what changed at the source since the run before.

End to end, on SQLite and on PostgreSQL (a replica serving the mirror, following its writes): a source served on a
loopback port, a first mirror, the source moved on by the simulation, a second mirror whose entries are compared one
by one with the difference computed here from the source's own API before and after (every listing field, every
plan field, every unit's status and price), and a third run with nothing changed, which records and sends nothing.
"""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from precon.client import Client, errors
from precon.service.config import ServiceSettings
from precon.service.runtime import DataDirectory
from precon.service.server import ServerThread
from precon.service.stores.history import iso_time
from precon.service.stores.mirror import MirrorReport, mirror
from precon.service.stores.simulation import simulate
from precon.service.stores.sqlite.store import SQLiteStore
from precon.service.stores.types import CatalogueChange
from tests import pg_support

pg_cluster = pg_support.pg_cluster

KEY = "mirror-history-key"
LISTINGS = 300
Entry = tuple[Any, ...]
"""(listingId, scope, plan, unit, field, change, from, to)."""


@dataclass
class Source:
    url: str
    directory: DataDirectory

    def listings(self) -> dict[str, dict[str, Any]]:
        """Every listing as the source's API answers it."""
        body = get(self.url, "search_listings", perPage=1000)
        assert body["total"] <= 1000
        return {record["listingId"]: record for record in body["results"]}

    def move(self, days: int, seed: int) -> None:
        simulate(self.directory.live, days, seed)  # type: ignore[arg-type]


def get(url: str, operation: str, **params: Any) -> Any:
    response = httpx.get(
        f"{url}/v1/all/{operation}", params={"product_id": "remote", **params}, headers={"x-api-key": KEY}, timeout=60
    )
    assert response.status_code == 200, response.text
    return response.json()


@pytest.fixture
def source(tmp_path: Path) -> Iterator[Source]:
    """A fresh source each test: the simulation moves it."""
    settings = ServiceSettings(data_dir=tmp_path / "source", default_listings=LISTINGS, default_seed=31, rate_limit=0)
    directory = DataDirectory.open(settings)
    directory.accounts.create_key("remote", key=KEY)
    with ServerThread(directory.app()) as server:
        yield Source(server.url, directory)
    directory.close()


# -- the difference, computed here from two answers of the source ------------------------------------------------

SKIPPED = {"listing": {"updatedAt", "floorPlans", "objectID"}, "floorPlan": {"lastUpdated", "units"}, "unit": set()}


def expected_entries(before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]]) -> list[Entry]:
    found: list[Entry] = []
    for listing_id in sorted(before.keys() | after.keys()):
        old, new = before.get(listing_id), after.get(listing_id)
        if old is None or new is None:
            found.append((listing_id, "listing", None, None, None, "created" if old is None else "deleted", None, None))
            continue
        found += fields_of(listing_id, "listing", None, None, old, new)
        old_plans = {plan["id"]: plan for plan in old.get("floorPlans") or []}
        new_plans = {plan["id"]: plan for plan in new.get("floorPlans") or []}
        for plan_id in sorted(old_plans.keys() | new_plans.keys()):
            a, b = old_plans.get(plan_id), new_plans.get(plan_id)
            if a is None or b is None:
                change = "created" if a is None else "deleted"
                found.append((listing_id, "floorPlan", plan_id, None, None, change, None, None))
                continue
            found += fields_of(listing_id, "floorPlan", plan_id, None, a, b)
            old_units = {unit["unitNumber"]: unit for unit in a.get("units") or []}
            new_units = {unit["unitNumber"]: unit for unit in b.get("units") or []}
            for number in sorted(old_units.keys() | new_units.keys()):
                u, v = old_units.get(number), new_units.get(number)
                if u is None or v is None:
                    change = "created" if u is None else "deleted"
                    found.append((listing_id, "unit", plan_id, number, None, change, None, None))
                    continue
                found += fields_of(listing_id, "unit", plan_id, number, u, v)
    return sorted(found, key=repr)


def fields_of(
    listing_id: str, scope: str, plan: Any, unit: Any, old: dict[str, Any], new: dict[str, Any]
) -> list[Entry]:
    return [
        (listing_id, scope, plan, unit, name, "updated", old.get(name), new.get(name))
        for name in old.keys() | new.keys()
        if name not in SKIPPED[scope] and old.get(name) != new.get(name)
    ]


def unit_moves(before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]]) -> int:
    """How many units changed status or price between two answers (what the test needs the source to have done)."""

    def units(listings: dict[str, dict[str, Any]]) -> dict[tuple[str, str], tuple[Any, Any]]:
        return {
            (plan["id"], unit["unitNumber"]): (unit.get("status"), unit.get("price"))
            for listing in listings.values()
            for plan in listing.get("floorPlans") or []
            for unit in plan.get("units") or []
        }  # fmt: skip

    old, new = units(before), units(after)
    return sum(1 for key in old if key in new and old[key] != new[key])


# -- the mirror, on either store ---------------------------------------------------------------------------------


class Mirror:
    """A mirror's catalogue (a SQLite file, or a PostgreSQL database) and the service that serves it."""

    def __init__(self, root: Path, database: str | None, dev: bool = False) -> None:
        self.root = root
        self.dev = dev
        """Serve as ``--dev`` does: webhooks may go to http:// addresses on loopback."""
        self.database = database
        self.target = root / "data" / "catalogue.sqlite3"
        self.target.parent.mkdir(parents=True)
        self.into: Any = None
        if database is not None:
            from precon.service.stores.postgres.store import PostgresCatalogueStore

            self.into = PostgresCatalogueStore(database)
        self.heard: list[list[CatalogueChange]] = []
        self.directory: DataDirectory | None = None
        self.server: ServerThread | None = None

    def run(self, source: Source, **options: Any) -> MirrorReport:
        with Client(source.url, KEY, "remote", cache=False, **options) as client:
            return mirror(
                client,
                self.target,
                into=self.into,
                on_store=self.listen,
            )

    def listen(self, store: Any) -> None:
        """Hears the changes of the store written to (PostgreSQL's is the same store from run to run)."""
        if self.heard.append not in store.listeners:
            store.listeners.append(self.heard.append)

    def serve(self) -> str:
        """The mirror's own service (a replica of PostgreSQL's, with a copy of its own), started once."""
        if self.server is None:
            settings = ServiceSettings(
                data_dir=self.target.parent,
                rate_limit=0,
                database_url=self.database,
                default_listings=10,
                dev=self.dev,
            )
            self.directory = DataDirectory.open(settings)
            self.directory.accounts.create_key("remote", key=KEY)
            self.server = ServerThread(self.directory.app())
            self.server.__enter__()
        return self.server.url

    def entries(self, since: str, expected: int | None = None) -> list[dict[str, Any]]:
        """The mirror's ``changes`` at or after ``since``, from its API: waited for where a replica must follow."""
        url = self.serve()
        deadline = time.monotonic() + 60
        while True:
            body = get(url, "changes", since=since, perPage=1000)
            if expected is None or body["total"] >= expected or time.monotonic() > deadline:
                return list(body["results"])
            time.sleep(0.05)

    def close(self) -> None:
        if self.server is not None:
            self.server.__exit__(None, None, None)
        if self.directory is not None:
            self.directory.close()
        if self.into is not None:
            self.into.close()


@pytest.fixture(params=["sqlite", "postgres"])
def make_mirror(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[str], Mirror]]:
    made: list[Mirror] = []
    databases: list[str] = []

    def make(name: str) -> Mirror:
        database = None
        if request.param == "postgres":
            cluster: pg_support.Cluster = request.getfixturevalue("pg_cluster")
            databases.append(cluster.database())
            database = cluster.url(databases[-1])
        made.append(Mirror(tmp_path / name, database))
        return made[-1]

    yield make
    for one in made:
        one.close()
    if databases:
        cluster = request.getfixturevalue("pg_cluster")
        for name in databases:
            cluster.drop(name)


def as_entry(entry: dict[str, Any]) -> Entry:
    return tuple(entry[k] for k in ("listingId", "scope", "plan", "unit", "field", "change", "from", "to"))


def sorted_entries(entries: list[dict[str, Any]]) -> list[Entry]:
    return sorted((as_entry(e) for e in entries), key=repr)


def relative(listings: dict[str, dict[str, Any]], base: str) -> dict[str, dict[str, Any]]:
    """The listings with the source's media URLs as the paths a mirror stores (its own host draws them)."""
    return orjson.loads(orjson.dumps(listings).replace(f"{base}/media/".encode(), b"/media/"))


# -- the tests -------------------------------------------------------------------------------------------------


def test_a_second_mirror_records_what_changed_at_the_source_entry_by_entry(
    source: Source, make_mirror: Callable[[str], Mirror]
) -> None:
    copy = make_mirror("mirror")
    first = copy.run(source)
    assert first.differences.created["listings"] == LISTINGS and first.differences.entries == LISTINGS
    created = copy.entries(iso_time(first.at), expected=LISTINGS)
    assert {e["change"] for e in created} == {"created"} and len(created) == LISTINGS
    assert {e["at"] for e in created} == {iso_time(first.at)}

    before = source.listings()
    source.move(days=10, seed=5)
    after = source.listings()
    assert unit_moves(before, after) > 20  # the source really moved: units sold, released, repriced
    expected = expected_entries(relative(before, source.url), relative(after, source.url))
    assert any(e[1] == "listing" for e in expected) and any(e[4] == "price" for e in expected)

    copy.heard.clear()
    second = copy.run(source)
    assert second.differences.entries == len(expected)
    assert second.timings.fetch > 0 and second.timings.compare > 0 and second.timings.write > 0
    recorded = copy.entries(iso_time(second.at), expected=len(expected))
    assert sorted_entries(recorded) == expected
    assert {e["at"] for e in recorded} == {iso_time(second.at)}  # stamped with the run's time
    changed_ids = {e[0] for e in expected}
    heard = [change for changes in copy.heard for change in changes]
    assert len(copy.heard) == 1  # once, after the commit
    assert {c.key for c in heard if c.kind == "listing"} == changed_ids
    assert all(c.action == "updated" for c in heard)
    assert sum(len(c.entries or ()) for c in heard) == len(expected)
    # The mirror now answers what the source answers.
    mirrored = {r["listingId"]: r for r in get(copy.serve(), "search_listings", perPage=1000)["results"]}
    assert relative(mirrored, copy.serve()) == relative(after, source.url)

    copy.heard.clear()
    third = copy.run(source)
    assert third.differences.entries == 0 and not third.differences.any()
    assert copy.heard == []  # nothing sent
    assert copy.entries(iso_time(third.at)) == []  # nothing recorded
    everything = get(copy.serve(), "changes", since="2000-01-01T00:00:00Z", perPage=1)["total"]
    assert everything == LISTINGS + len(expected)  # what the earlier runs recorded is kept


def test_listings_gone_from_the_source_are_deleted_and_new_ones_created(
    source: Source, make_mirror: Callable[[str], Mirror]
) -> None:
    copy = make_mirror("mirror")
    copy.run(source)
    live = source.directory.live
    gone = sorted(source.listings())[:2]
    for listing_id in gone:
        live.delete_listing(listing_id)
    newcomer = dict(next(iter(source.listings().values())))
    newcomer.update(listingId="NEW0001", path="Listings/NEW0001", name="Newcomer Towers")
    newcomer.pop("objectID")
    newcomer["floorPlans"] = [{k: v for k, v in plan.items() if k != "id"} for plan in newcomer["floorPlans"]]
    live.upsert_listings([newcomer])
    copy.heard.clear()
    report = copy.run(source)
    assert report.differences.deleted["listings"] == 2 and report.differences.created["listings"] == 1
    recorded = copy.entries(iso_time(report.at), expected=3)
    assert sorted((e["listingId"], e["scope"], e["change"]) for e in recorded) == sorted(
        [(gone[0], "listing", "deleted"), (gone[1], "listing", "deleted"), ("NEW0001", "listing", "created")]
    )
    actions = sorted((c.key, c.action) for changes in copy.heard for c in changes if c.kind == "listing")
    assert actions == sorted([(gone[0], "deleted"), (gone[1], "deleted"), ("NEW0001", "created")])


class Failing(httpx.BaseTransport):
    """The network to the source: after ``good`` requests, one request fails as ``how`` says."""

    def __init__(self, good: int, how: str) -> None:
        self.inner = httpx.HTTPTransport()
        self.good = good
        self.how = how

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if self.good > 0:
            self.good -= 1
            return self.inner.handle_request(request)
        if self.how == "500":
            return httpx.Response(500, json={"message": "internal error"}, request=request)
        if self.how == "cut":
            raise httpx.RemoteProtocolError("peer closed connection without sending complete message body")
        if self.how == "garbage":
            return httpx.Response(200, content=b"<html>maintenance</html>", request=request)
        return httpx.Response(200, json={"results": [1, 2, 3], "total": 900}, request=request)  # "records"


@pytest.mark.parametrize("how", ["500", "cut", "garbage", "records"])
def test_a_source_failing_midway_changes_nothing_and_the_run_resumes_with_the_same_entries(
    source: Source, make_mirror: Callable[[str], Mirror], how: str
) -> None:
    steady, flaky = make_mirror("steady"), make_mirror("flaky")
    steady.run(source)
    flaky.run(source)
    source.move(days=7, seed=9)
    steady_report = steady.run(source)
    flaky.heard.clear()
    with pytest.raises((errors.PreconError, ValueError)):
        # Profiles in one page of 1000, then the listings' first page: the listings' second one fails.
        with Client(source.url, KEY, "remote", cache=False, transport=Failing(2, how), max_retries=0) as client:
            mirror(client, flaky.target, into=flaky.into, page_size=200)
    assert flaky.heard == []  # nothing written, nothing sent
    resumed = flaky.run(source)
    assert resumed.resumed
    expected = sorted_entries(steady.entries(iso_time(steady_report.at), expected=steady_report.differences.entries))
    assert expected
    assert sorted_entries(flaky.entries(iso_time(resumed.at), expected=len(expected))) == expected


def test_a_run_failing_while_it_applies_changes_nothing_and_is_applied_once_when_run_again(
    source: Source, make_mirror: Callable[[str], Mirror], monkeypatch: pytest.MonkeyPatch
) -> None:
    from precon.service.stores import mirror as mirroring

    copy = make_mirror("mirror")
    copy.run(source)
    source.move(days=7, seed=2)
    real = mirroring.load
    calls: list[int] = []

    def fails_on_the_second_batch(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 2:
            raise OSError("disk full")
        return real(*args, **kwargs)

    monkeypatch.setattr(mirroring, "load", fails_on_the_second_batch)
    monkeypatch.setattr(mirroring, "APPLY_BATCH", 50)
    copy.heard.clear()
    with pytest.raises(OSError, match="disk full"):
        copy.run(source)
    assert copy.heard == []
    monkeypatch.setattr(mirroring, "load", real)
    again = copy.run(source)
    assert again.resumed and again.requests == 0  # the pages fetched are applied, not fetched again
    assert again.differences.entries > 0
    recorded = copy.entries(iso_time(again.at), expected=again.differences.entries)
    assert len(recorded) == again.differences.entries
    assert copy.run(source).differences.entries == 0  # applied once: the next run starts afresh and finds nothing


def test_a_mirror_of_one_of_our_deployments_records_no_change_of_its_media(source: Source, tmp_path: Path) -> None:
    target = tmp_path / "copy" / "catalogue.sqlite3"
    target.parent.mkdir()
    with Client(source.url, KEY, "remote", cache=False) as client:
        mirror(client, target)
        again = mirror(client, target)
    assert not again.differences.any()
    store = SQLiteStore(target)
    try:
        documents = store.stored_documents("listings", store.stored_keys("listings"))
        assert all(source.url.encode() not in document for document in documents.values())
        assert any(b'"/media/' in document for document in documents.values())
    finally:
        store.close()


def test_a_mirror_command_killed_midway_resumes_and_records_what_an_uninterrupted_run_records(
    source: Source, make_mirror: Callable[[str], Mirror]
) -> None:
    steady, killed = make_mirror("steady"), make_mirror("killed")
    steady.run(source)
    killed.run(source)
    source.move(days=7, seed=4)
    steady_report = steady.run(source)
    command = [
        sys.executable, "-m", "precon.cli", "catalogue", "mirror", "--from", source.url, "--key", KEY,
        "--product", "remote", "--page-size", "30", "--data", str(killed.target.parent),
        *(["--database", killed.database] if killed.database else []),
    ]  # fmt: skip
    work = killed.target.with_name(killed.target.name + ".mirror")
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while staged_page(work) < ("listings", 3):
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the mirror never reached its listings' fourth page"
            time.sleep(0.01)
        process.kill()
    finally:
        process.wait()
    assert killed.entries(iso_time(steady_report.at)) == []  # killed while fetching: nothing written
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "resumed; mirrored 300 listings" in done.stderr
    entries = steady_report.differences.entries
    assert f"{entries} history entries at " in done.stderr
    expected = sorted_entries(steady.entries(iso_time(steady_report.at), expected=entries))
    recorded = killed.entries("2000-01-01T00:00:00Z")
    resumed = [entry for entry in recorded if entry["change"] != "created"]
    assert sorted_entries(resumed) == expected
    assert len({entry["at"] for entry in resumed}) == 1  # one run, one time


def staged_page(work: Path) -> tuple[str, int]:
    """The phase and page a mirror's work file has reached (("", 0) before it has one)."""
    if not work.exists():
        return "", 0
    try:
        with closing(sqlite3.connect(f"file:{work}?mode=ro", uri=True, timeout=1)) as db:
            row = db.execute("SELECT value FROM meta WHERE key = 'state'").fetchone()
    except sqlite3.OperationalError:
        return "", 0
    if row is None:
        return "", 0
    state = orjson.loads(row[0])
    return ("listings", int(state["page"])) if state["phase"] == "listings" else ("", 0)


def test_a_mirror_run_delivers_each_changed_listing_to_webhooks_and_a_quiet_run_delivers_nothing(
    source: Source, tmp_path: Path
) -> None:
    from tests.webhook_support import Receiver, verified

    copy = Mirror(tmp_path / "hooked", None, dev=True)
    receiver = Receiver().start()
    try:
        copy.run(source)
        url = copy.serve()
        with Client(url, KEY, "remote", cache=False) as client:
            subscription = client.create_webhook(receiver.url, "listing.updated", "live")
        command = [
            sys.executable, "-m", "precon.cli", "catalogue", "mirror", "--from", source.url, "--key", KEY,
            "--product", "remote", "--data", str(copy.target.parent),
        ]  # fmt: skip
        source.move(days=5, seed=8)
        moved = subprocess.run(command, capture_output=True, text=True, timeout=300)
        assert moved.returncode == 0, moved.stderr
        recorded = copy.entries("2000-01-01T00:00:00Z")
        run_at = max(entry["at"] for entry in recorded)
        by_listing: dict[str, list[Entry]] = {}
        for entry in recorded:
            if entry["at"] == run_at:
                by_listing.setdefault(entry["listingId"], []).append(as_entry(entry))
        changed = int(re.search(r"listings: 0 created, (\d+) changed, 0 deleted", moved.stderr).group(1))  # type: ignore[union-attr]
        assert by_listing and changed >= len(by_listing)
        payloads = [verified(subscription.secret or "", *delivery) for delivery in receiver.wait_for(changed)]
        assert len(payloads) == changed
        assert {p["data"]["listing"]["listingId"] for p in payloads} >= set(by_listing)
        for payload in payloads:  # a listing whose updatedAt alone moved is delivered with no entries, as on import
            listing_id = payload["data"]["listing"]["listingId"]
            assert sorted((as_entry(e) for e in payload["data"]["changes"]), key=repr) == sorted(
                by_listing.get(listing_id, []), key=repr
            )
        quiet = subprocess.run(command, capture_output=True, text=True, timeout=300)
        assert quiet.returncode == 0 and "0 history entries" in quiet.stderr, quiet.stderr
        # A write after the quiet run is the next delivery: the quiet run queued none before it.
        assert copy.directory is not None
        store = copy.directory.live
        listing = next(iter(store.get_listings([sorted(by_listing)[0]], None).values()))
        store.upsert_listings([{**listing, "name": "Renamed After The Quiet Run"}])
        arrived = receiver.wait_for(changed + 1)
        assert len(arrived) == changed + 1
        last = verified(subscription.secret or "", *arrived[-1])
        assert last["data"]["listing"]["name"] == "Renamed After The Quiet Run"
    finally:
        receiver.stop()
        copy.close()


def test_pages_over_the_sources_answer_limit_are_asked_for_again_smaller(
    source: Source, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from precon.service.api import responses

    monkeypatch.setattr(responses, "MAX_ANSWER_BYTES", 2 * 2**20)  # 300 listings are about 7 MiB
    target = tmp_path / "small" / "catalogue.sqlite3"
    target.parent.mkdir()
    with Client(source.url, KEY, "remote", cache=False) as client:
        with pytest.raises(errors.BadRequest, match="over the 2 MiB limit"):
            client.search_listings(per_page=1000)
        report = mirror(client, target)
    assert report.listings == LISTINGS and report.requests > 3
    monkeypatch.undo()
    store = SQLiteStore(target)
    try:
        assert sorted(store.stored_keys("listings")) == sorted(source.listings())
    finally:
        store.close()
