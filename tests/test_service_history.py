"""(ours) ``listing_history``: every write records what changed, in the write's transaction, and the operation
answers it newest first, scoped as ``listing`` is. Over real HTTP, on a data directory of its own (its writes
would move the oracles of the shared one)."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from precon.service.config import ServiceSettings
from precon.service.runtime import DataDirectory
from precon.service.server import ServerThread
from tests.conftest import KEY_ALL, KEY_LITE, KEY_ONTARIO, Api

HISTORY = "/v1/all/listing_history"


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    data_dir: Path = tmp_path_factory.mktemp("history")
    settings = ServiceSettings(data_dir=data_dir, default_listings=80, default_seed=3, rate_limit=0, dev=True)
    directory = DataDirectory.open(settings)
    directory.accounts.create_key("everything", key=KEY_ALL)
    directory.accounts.create_key("ontario", ["v1"], ["on"], key=KEY_ONTARIO)
    directory.accounts.create_key("lite", ["v1-lite"], key=KEY_LITE)
    with ServerThread(directory.app()) as server, httpx.Client(timeout=30) as http:
        yield Api(server.url, directory, http)
    directory.close()


def a_listing_with_units(api: Api, province: str = "on") -> dict[str, Any]:
    return next(
        record
        for record in api.all_listings()
        if record.get("state") and record["floorPlans"] and record["floorPlans"][0].get("units")
        and record["listingId"] and (province is None or _province(record) == province)
    )  # fmt: skip


def _province(record: dict[str, Any]) -> str:
    from precon.service.stores.records import province_of

    return province_of(record.get("state")) or ""


def brief(entries: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(e["scope"], e["plan"], e["unit"], e["field"], e["change"], e["from"], e["to"]) for e in entries]


def test_a_loaded_listing_was_created_and_a_write_records_what_it_changed(api: Api) -> None:
    listing = a_listing_with_units(api)
    lid = listing["listingId"]
    body = api.ok(HISTORY, id=lid)
    assert set(body) == {"results", "total", "page", "pages", "perPage"}
    assert brief(body["results"]) == [("listing", None, None, None, "created", None, None)]

    changed = copy.deepcopy(listing)
    changed["startPrice"] = (listing["startPrice"] or 0) + 25_000
    plan = changed["floorPlans"][0]
    unit = plan["units"][0]
    unit["status"] = "Sold" if unit["status"] != "Sold" else "Available"
    api.directory.live.upsert_listings([changed])

    entries = api.ok(HISTORY, id=lid)["results"]
    assert entries[-1]["change"] == "created" and len(entries) == 3
    newest = sorted(brief(entries[:2]), key=repr)
    old_unit = listing["floorPlans"][0]["units"][0]
    assert newest == sorted(
        [
            ("listing", None, None, "startPrice", "updated", listing["startPrice"], changed["startPrice"]),
            ("unit", plan["id"], unit["unitNumber"], "status", "updated", old_unit["status"], unit["status"]),
        ],
        key=repr,
    )
    assert all(e["listingId"] == lid and e["at"].endswith("Z") for e in entries)
    assert brief(api.ok(HISTORY, id=lid, fields="startPrice")["results"]) == [e for e in newest if e[3] == "startPrice"]
    assert [e["scope"] for e in api.ok(HISTORY, id=lid, scope="unit")["results"]] == ["unit"]
    assert api.ok(HISTORY, id=lid, perPage=1)["pages"] == 3


def test_history_is_scoped_as_the_listing_is_and_outlives_a_deletion(api: Api) -> None:
    listing = a_listing_with_units(api)
    lid = listing["listingId"]
    other = next(r for r in api.all_listings() if _province(r) not in ("on", ""))
    ontario = "/v1/on/listing_history"
    assert api.get(ontario, KEY_ONTARIO, id=lid).status_code == 200
    assert api.get(ontario, KEY_ONTARIO, id=other["listingId"]).status_code == 404
    assert api.get(ontario, KEY_ALL, id=other["listingId"]).status_code == 404
    assert api.get(HISTORY, id="NOSUCH").status_code == 404

    api.directory.live.delete_listing(other["listingId"])
    body = api.ok(HISTORY, id=other["listingId"])
    assert [e["change"] for e in body["results"]][:1] == ["deleted"]
    assert api.get(ontario, KEY_ONTARIO, id=other["listingId"]).status_code == 404
    assert api.get(f"/v1/{_province(other)}/listing_history", KEY_ALL, id=other["listingId"]).status_code == 200


def test_lite_hears_only_of_the_listing_fields_it_shows(api: Api) -> None:
    listing = a_listing_with_units(api)
    entries = api.ok("/v1-lite/all/listing_history", KEY_LITE, id=listing["listingId"])["results"]
    assert entries and all(e["scope"] == "listing" for e in entries)
    assert entries[-1]["change"] == "created"
    error = api.get("/v1-lite/all/listing_history", KEY_LITE, id=listing["listingId"], scope="unit")
    assert error.status_code == 400 and "scope" in error.json()["message"]


@pytest.mark.parametrize(
    ("params", "fragment"),
    [
        ({"scope": "planet"}, "scope must be one of listing, floorPlan or unit, got 'planet'"),
        ({"fields": "startPrice,bogus"}, "fields: 'bogus' is not a field of a listing, a floor plan or a unit"),
        ({"fields": ",".join(["price"] * 900)}, "fields is 5399 characters long; at most 4096 are allowed"),
        ({"id": "ab\x00cd"}, "parameter 'id' holds a NUL character"),
        ({"id": ""}, "id"),
    ],
)
def test_bad_history_requests_say_what_and_where(api: Api, params: dict[str, str], fragment: str) -> None:
    listing = a_listing_with_units(api)
    response = api.get(HISTORY, **{"id": listing["listingId"], **params})
    assert response.status_code == 400, response.text
    assert fragment in response.json()["message"]


def test_the_typed_client_reads_a_listings_history(api: Api) -> None:
    from precon.client import Client

    listing = a_listing_with_units(api)
    with Client(base_url=api.url, api_key=KEY_ALL) as client:
        page = client.listing_history(listing["listingId"], per_page=50)
        assert page.total >= 1 and page.results[-1].change == "created"
        assert all(entry.listingId == listing["listingId"] and entry.at is not None for entry in page.results)
        updated = [e for e in page.results if e.change == "updated"]
        assert all(e.field and (e.before is not None or e.after is not None) for e in updated)
        only = client.listing_history(listing["listingId"], scope="listing", fields=["startPrice"])
        assert all(e.scope == "listing" and e.field == "startPrice" for e in only.results)


CHANGES = "/v1/all/changes"


def test_the_catalogues_changes_newest_first_narrowed_as_asked(api: Api) -> None:
    listing = a_listing_with_units(api)
    lid = listing["listingId"]
    before = api.ok(CHANGES, perPage=1000)
    assert before["total"] >= len(api.all_listings())
    mark = api.ok(HISTORY, id=lid)["results"][0]["at"]
    changed = copy.deepcopy(api.directory.live.get_listings([lid], None)[lid])
    changed["name"] = changed["name"] + " II"
    api.directory.live.upsert_listings([changed])

    newest = api.ok(CHANGES, perPage=5)["results"]
    assert (newest[0]["listingId"], newest[0]["field"], newest[0]["to"]) == (lid, "name", changed["name"])
    assert api.ok(CHANGES, perPage=1000)["total"] == before["total"] + 1
    since = api.ok(CHANGES, since=mark, perPage=1000)["results"]
    assert since and all(entry["at"] >= mark for entry in since)
    assert all(e["change"] == "created" for e in api.ok(CHANGES, until=mark, change="created", perPage=50)["results"])
    mine = api.ok(CHANGES, filterQuery=f"listingId:{lid}", perPage=1000)["results"]
    assert mine and {e["listingId"] for e in mine} == {lid}
    assert len(mine) == api.ok(HISTORY, id=lid)["total"]
    named = api.ok(CHANGES, fields="name", scope="listing", change="updated", perPage=1000)["results"]
    assert named and all((e["field"], e["scope"], e["change"]) == ("name", "listing", "updated") for e in named)


def test_changes_are_scoped_to_what_the_key_may_read(api: Api) -> None:
    ontario = {r["listingId"] for r in api.all_listings() if _province(r) == "on"}
    entries = api.ok("/v1/on/changes", KEY_ONTARIO, perPage=1000)["results"]
    assert entries and {e["listingId"] for e in entries} <= ontario
    lite = api.ok("/v1-lite/all/changes", KEY_LITE, perPage=1000)["results"]
    assert lite and all(e["scope"] == "listing" for e in lite)


@pytest.mark.parametrize(
    ("params", "fragment"),
    [
        ({"since": "2026-02-01", "until": "2026-01-01"}, "since (2026-02-01) is after until (2026-01-01)"),
        ({"since": "last tuesday"}, "since must be an ISO timestamp or Unix seconds, got 'last tuesday'"),
        ({"until": "-5"}, "until must be a time from 1970 to 9999"),
        ({"change": "renamed"}, "change must be one of created, updated or deleted"),
        ({"perPage": "1001"}, "perPage must be at most 1000"),
        ({"filterQuery": "name:("}, "filterQuery"),
    ],
)
def test_bad_changes_requests_say_what_and_where(api: Api, params: dict[str, str], fragment: str) -> None:
    response = api.get(CHANGES, **params)
    assert response.status_code == 400, response.text
    assert fragment in response.json()["message"]


def test_unix_seconds_and_iso_timestamps_mark_the_same_moment(api: Api) -> None:
    newest = api.ok(CHANGES, perPage=1)["results"][0]["at"]
    from datetime import datetime

    seconds = datetime.fromisoformat(newest.replace("Z", "+00:00")).timestamp()
    by_iso = api.ok(CHANGES, since=newest, perPage=1000)["total"]
    assert api.ok(CHANGES, since=str(seconds), perPage=1000)["total"] == by_iso >= 1


def test_the_typed_client_reads_and_pages_through_the_changes(api: Api) -> None:
    from precon.client import Client

    listing = a_listing_with_units(api)
    with Client(base_url=api.url, api_key=KEY_ALL) as client:
        total = client.changes(per_page=1).total
        every = list(client.iter_changes(per_page=7))
        assert len(every) == total and every[0].at is not None and every[0].at >= every[-1].at
        mine = client.changes(filter=f"listingId:{listing['listingId']}", per_page=1000)
        assert mine.results and {e.listingId for e in mine.results} == {listing["listingId"]}
        assert client.changes(since=every[0].at.timestamp(), per_page=1000).total >= 1


def test_paging_through_the_changes_while_the_catalogue_is_written_answers_each_entry_once(api: Api) -> None:
    from precon.client import Client

    listing = a_listing_with_units(api, "bc")
    with Client(base_url=api.url, api_key=KEY_ALL) as client:
        before = [entry.model_dump_json() for entry in client.iter_changes(per_page=1000)]
        paging = client.iter_changes(per_page=7)
        read = [next(paging).model_dump_json() for _ in range(7)]  # the first page
        for step in range(3):  # writes between two pages: each adds entries at the head of the feed
            changed = copy.deepcopy(listing)
            changed["startPrice"] = (listing["startPrice"] or 0) + 1_000 * (step + 1)
            api.directory.live.upsert_listings([changed])
            read += [next(paging).model_dump_json() for _ in range(7)]
        read += [entry.model_dump_json() for entry in paging]
        assert read == before  # none twice, none skipped, in order
        assert client.changes(per_page=1000).total == len(before) + 3


def test_a_deleted_listing_matches_a_changes_filter_on_what_it_last_was(api: Api) -> None:
    gone = next(r for r in api.all_listings() if _province(r) not in ("on", "") and r["floorPlans"])
    lid, province, city = gone["listingId"], _province(gone), gone["cityOrDistrict"]
    name_word = gone["name"].split()[0]
    api.directory.live.delete_listing(lid)
    assert api.get("/v1/all/listing", id=lid).status_code == 404

    def entries(path: str = CHANGES, key: str = KEY_ALL, **params: str) -> list[dict[str, Any]]:
        return [e for e in api.ok(path, key, perPage=1000, **params)["results"] if e["listingId"] == lid]

    by_city = entries(filterQuery=f'cityOrDistrict:"{city}"')
    assert [e["change"] for e in by_city][:1] == ["deleted"] and by_city[-1]["change"] == "created"
    assert len(by_city) == api.ok(HISTORY, id=lid)["total"]
    assert entries(filterQuery=f'NOT cityOrDistrict:"{city}"') == []
    assert entries(search=name_word) == by_city
    assert entries(unitFilter="numberOfBedrooms >= 0") == by_city
    assert entries(unitFilter="numberOfBedrooms > 99") == []
    assert entries(f"/v1/{province}/changes", filterQuery=f'cityOrDistrict:"{city}"') == by_city
    assert entries("/v1/on/changes", KEY_ONTARIO, filterQuery=f'cityOrDistrict:"{city}"') == []
    # Written again, it is a listing again: matched on what it is now.
    api.directory.live.upsert_listings([{**gone, "cityOrDistrict": "Elsewhere"}])
    assert entries(filterQuery=f'cityOrDistrict:"{city}"') == []
    assert entries(filterQuery='cityOrDistrict:"Elsewhere"')[0]["change"] == "created"


@pytest.mark.parametrize(
    ("path", "key", "params", "fragment"),
    [
        ("/v1-lite/all/changes", KEY_LITE, {"filterQuery": "floorPlans.units.status:Sold"}, "filterQuery"),
        ("/v1-lite/all/changes", KEY_LITE, {"unitFilter": "units.price < 500000"}, "unitFilter"),
        ("/v1-lite/all/changes", KEY_LITE, {"fields": "floorPlans"}, "fields"),
        (CHANGES, KEY_ALL, {"fields": ",".join(["id"] * 10_000)}, "fields"),
        (CHANGES, KEY_ALL, {"scope": "planet"}, "scope must be one of listing, floorPlan or unit, got 'planet'"),
        (CHANGES, KEY_ALL, {"fields": "startPrice,bogus"}, "'bogus' is not a field"),
    ],
)
def test_bad_changes_requests_name_the_parameter(
    api: Api, path: str, key: str, params: dict[str, str], fragment: str
) -> None:
    response = api.get(path, key, **params)
    assert response.status_code == 400, response.text
    assert fragment in response.json()["message"]
