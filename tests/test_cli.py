"""The ``precon`` command: keys create, catalogue generate and import (tests/test_cli_serve.py: serve --dev and
--database, PostgreSQL)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from precon.client.models import VERSIONS
from precon.service.accounts.model import Grant, digest
from precon.service.accounts.sqlite import AccountStore
from precon.service.search.text import TextQuery
from precon.service.stores.sqlite.store import SQLiteStore
from precon.service.stores.types import ListingQuery
from tests import pg_support
from tests.catalogues import generated_catalogue
from tests.cli_support import EVERY_PROVINCE, NEITHER, invoke, listing, profile, run_precon, write_ndjson

pg_cluster = pg_support.pg_cluster


@pytest.fixture
def store_at() -> Iterator[Any]:
    """Opens SQLite stores for a test and closes them after it."""
    opened: list[SQLiteStore] = []

    def open_store(path: Path) -> SQLiteStore:
        store = SQLiteStore(path)
        opened.append(store)
        return store

    yield open_store
    for store in opened:
        store.close()


def all_listing_ids(store: SQLiteStore) -> set[str]:
    hits = store.search_listings(ListingQuery(limit=100_000))
    assert hits.total == len(hits.documents)
    return {d["listingId"] for d in hits.documents}


# ----------------------------------------------------------------------------------------------------------
# precon keys create
# ----------------------------------------------------------------------------------------------------------


def test_keys_create_prints_the_key_alone_and_it_grants_everything(tmp_path: Path) -> None:
    done = run_precon("keys", "create", "--product", "acme", "--data", tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 1, done.stdout
    assert done.stdout == lines[0] + "\n"
    key = lines[0]
    assert key == key.strip() and key.startswith("pk_") and len(key) > 30
    found = AccountStore(tmp_path / "accounts.sqlite3").authenticate(key)
    assert found is not None
    assert found.grants == (Grant("acme", frozenset(VERSIONS), EVERY_PROVINCE),)
    assert found.allows("v1", "on") and found.allows("v1-sandbox", "all") and found.allows("v1-lite", "pe")


def test_keys_revoke_removes_the_key_and_refuses_an_unknown_one(tmp_path: Path) -> None:
    key = invoke("keys", "create", "--product", "acme", "--data", tmp_path).output.strip()
    other = invoke("keys", "create", "--product", "acme", "--data", tmp_path).output.strip()
    revoked = invoke("keys", "revoke", key, "--data", tmp_path)
    assert revoked.exit_code == 0, revoked.output
    accounts = AccountStore(tmp_path / "accounts.sqlite3")
    try:
        assert accounts.authenticate(key) is None
        assert accounts.authenticate(other) is not None  # only that key
    finally:
        accounts.close()
    again = invoke("keys", "revoke", key, "--data", tmp_path)
    assert again.exit_code == 1 and "no such key" in again.output


@pytest.mark.parametrize(
    ("options", "versions", "provinces"),
    [
        (["--versions", "v1", "v1-lite"], {"v1", "v1-lite"}, EVERY_PROVINCE),
        (["--versions", "v1,v1-lite"], {"v1", "v1-lite"}, EVERY_PROVINCE),
        (["--versions", "v1, v1-lite"], {"v1", "v1-lite"}, EVERY_PROVINCE),
        (["--provinces", "on", "bc"], set(VERSIONS), {"on", "bc"}),
        (["--provinces", "on,bc"], set(VERSIONS), {"on", "bc"}),
        (["--versions", "v1-lite", "--provinces", "qc"], {"v1-lite"}, {"qc"}),
        (["--provinces", "ab", "--versions", "v1", "v1-sandbox"], {"v1", "v1-sandbox"}, {"ab"}),
        (["--provinces", "all"], set(VERSIONS), EVERY_PROVINCE),
    ],
)
def test_keys_create_narrows_versions_and_provinces(
    tmp_path: Path, options: list[str], versions: set[str], provinces: set[str]
) -> None:
    # The many-valued options come before --data, so they must stop at the next option.
    result = invoke("keys", "create", "--product", "narrow", *options, "--data", tmp_path)
    assert result.exit_code == 0, result.output
    key = result.stdout.strip()
    assert result.stdout == key + "\n"
    found = AccountStore(tmp_path / "accounts.sqlite3").authenticate(key)
    assert found is not None
    assert found.grants == (Grant("narrow", frozenset(versions), frozenset(provinces)),)


def test_keys_create_narrowed_key_refuses_what_it_was_not_granted(tmp_path: Path) -> None:
    done = run_precon(
        "keys", "create", "--product", "west", "--versions", "v1", "--provinces", "bc", "ab", "--data", tmp_path
    )
    assert done.returncode == 0, done.stderr
    found = AccountStore(tmp_path / "accounts.sqlite3").authenticate(done.stdout.strip())
    assert found is not None
    allowed = {(v, p) for v in [*VERSIONS] for p in EVERY_PROVINCE if found.allows(v, p)}
    assert allowed == {("v1", "bc"), ("v1", "ab")}


@pytest.mark.parametrize(
    ("options", "bad"),
    [
        (["--versions", "v2"], "v2"),
        (["--versions", "v1", "v9"], "v9"),
        (["--versions", "v1,beta"], "beta"),
        (["--provinces", "on", "zz"], "zz"),
        (["--provinces", "yt"], "yt"),
    ],
)
def test_keys_create_refuses_an_unknown_version_or_province(tmp_path: Path, options: list[str], bad: str) -> None:
    result = invoke("keys", "create", "--product", "acme", *options, "--data", tmp_path)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert bad in result.stderr
    assert "Usage:" in result.stderr
    if (tmp_path / "accounts.sqlite3").exists():
        assert AccountStore(tmp_path / "accounts.sqlite3").products() == []


def test_keys_create_usage_error_through_the_console_script(tmp_path: Path) -> None:
    done = run_precon("keys", "create", "--product", "acme", "--provinces", "on", "xx", "--data", tmp_path)
    assert done.returncode == 2
    assert done.stdout == ""
    assert "xx" in done.stderr


def test_keys_are_stored_hashed_and_never_repeat(tmp_path: Path) -> None:
    keys = []
    for _ in range(2):
        result = invoke("keys", "create", "--product", "acme", "--label", "twice", "--data", tmp_path)
        assert result.exit_code == 0, result.output
        keys.append(result.stdout.strip())
    assert keys[0] != keys[1]
    accounts = AccountStore(tmp_path / "accounts.sqlite3")
    found = [accounts.authenticate(key) for key in keys]
    assert found[0] is not None and found[1] is not None
    assert found[0].key_id != found[1].key_id
    assert accounts.products() == ["acme"]
    stored = b"".join(p.read_bytes() for p in sorted(tmp_path.iterdir()) if p.name.startswith("accounts.sqlite3"))
    for key in keys:
        assert key.encode() not in stored
        assert digest(key).encode() in stored  # what is stored is the digest


# ----------------------------------------------------------------------------------------------------------
# precon catalogue generate
# ----------------------------------------------------------------------------------------------------------


def test_catalogue_generate_writes_then_replaces_the_catalogue(tmp_path: Path, store_at: Any) -> None:
    data = tmp_path / "data"
    done = run_precon("catalogue", "generate", "--listings", "300", "--seed", "3", "--data", data)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert "generated 300 listings" in done.stderr
    first = store_at(data / "catalogue.sqlite3")
    expected = generated_catalogue(300, 3)
    assert first.counts() == {"listings": 300, "profiles": len(expected.profiles)}
    first_ids = all_listing_ids(first)
    assert first_ids == {r["listingId"] for r in expected.listings}
    first.close()

    result = invoke("catalogue", "generate", "--listings", "300", "--seed", "4", "--data", data)
    assert result.exit_code == 0, result.output
    second = store_at(data / "catalogue.sqlite3")
    assert second.counts()["listings"] == 300
    second_ids = all_listing_ids(second)
    assert second_ids == {r["listingId"] for r in generated_catalogue(300, 4).listings}
    assert second_ids != first_ids
    assert not (data / "catalogue.sqlite3.new").exists()


def test_catalogue_generate_out_round_trips_through_import(tmp_path: Path, store_at: Any) -> None:
    out = tmp_path / "catalogue.ndjson"
    result = invoke("catalogue", "generate", "--listings", "120", "--seed", "7", "--out", out, "--data", tmp_path / "a")
    assert result.exit_code == 0, result.output
    records = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    generated = generated_catalogue(120, 7)
    assert records == [*generated.profiles, *generated.listings]

    result = invoke("catalogue", "import", out, "--data", tmp_path / "b")
    assert result.exit_code == 0, result.output
    assert "skipped 0" in result.stderr
    source, copy = store_at(tmp_path / "a" / "catalogue.sqlite3"), store_at(tmp_path / "b" / "catalogue.sqlite3")
    ids = sorted(all_listing_ids(source))
    assert ids == sorted(all_listing_ids(copy))
    assert copy.get_listings(ids, None) == source.get_listings(ids, None)
    paths = [p["path"] for p in generated.profiles]
    assert copy.get_profiles(paths) == source.get_profiles(paths)
    assert copy.counts() == source.counts() == {"listings": 120, "profiles": len(generated.profiles)}


def as_given(found: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Stored listings without what the store adds to every one (the time of the last sellingStatus change)."""
    for record in found.values():
        assert type(record.pop("sellingStatusUpdateTimestamp")) is int
    return found


# ----------------------------------------------------------------------------------------------------------
# precon catalogue import
# ----------------------------------------------------------------------------------------------------------


def test_catalogue_import_skips_bad_lines_and_names_them(tmp_path: Path, store_at: Any) -> None:
    good_profile = profile("Builders/b1", "Brick Builders")
    first, second = listing("AAA111", "First Tower"), listing("BBB222", "Second Tower")
    file = write_ndjson(
        tmp_path / "records.ndjson",
        [
            json.dumps(good_profile),
            json.dumps(first),
            '{"listingId": "CCC333", "name": ',  # line 3: cut short
            "",
            json.dumps({"kind": "neither", "name": "No path"}),  # line 5: neither listing nor profile
            json.dumps(second),
        ],
    )
    data = tmp_path / "data"
    done = run_precon("catalogue", "import", file, "--data", data)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    skipped = [line for line in done.stderr.splitlines() if "skipped:" in line]
    assert len(skipped) == 2, done.stderr
    assert skipped[0].startswith(f"{file}:3: skipped: not valid JSON")
    assert skipped[1] == f"{file}:5: skipped: {NEITHER}"
    assert "imported 2 listings and 1 profiles; skipped 2" in done.stderr
    store = store_at(data / "catalogue.sqlite3")
    assert store.counts() == {"listings": 2, "profiles": 1}
    assert as_given(store.get_listings(["AAA111", "BBB222", "CCC333"], None)) == {"AAA111": first, "BBB222": second}
    assert store.get_profiles(["Builders/b1"]) == {"Builders/b1": good_profile}


def test_catalogue_import_json_array_reports_a_bad_element_by_line(tmp_path: Path, store_at: Any) -> None:
    records: list[Any] = [listing("AAA111", "One"), "not a record", listing("BBB222", "Two")]
    text = json.dumps(records, indent=2)
    bad_line = text.splitlines().index('  "not a record",') + 1
    file = tmp_path / "records.json"
    file.write_text(text, encoding="utf-8")
    result = invoke("catalogue", "import", file, "--data", tmp_path)
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines()[0] == f"{file}:{bad_line}: skipped: expected a JSON object, got str"
    store = store_at(tmp_path / "catalogue.sqlite3")
    assert as_given(store.get_listings(["AAA111", "BBB222"], None)) == {"AAA111": records[0], "BBB222": records[2]}


def test_catalogue_import_search_envelope(tmp_path: Path, store_at: Any) -> None:
    # What search_listings answers, saved as it came.
    results: list[Any] = [
        {**listing("AAA111", "One"), "objectID": "AAA111", "_score": 2.5},
        {"objectID": "NOPE00", "name": "no id, no path"},
        {**listing("BBB222", "Two"), "objectID": "BBB222", "_score": 1.0},
    ]
    text = json.dumps({"results": results, "total": 3, "page": 0, "pages": 1, "perPage": 20}, indent=2)
    bad_line = text.splitlines().index('      "objectID": "NOPE00",')  # the element's "{" is the line above
    file = tmp_path / "search.json"
    file.write_text(text, encoding="utf-8")
    result = invoke("catalogue", "import", file, "--data", tmp_path)
    assert result.exit_code == 0, result.output
    assert [line for line in result.stderr.splitlines() if "skipped:" in line] == [
        f"{file}:{bad_line}: skipped: {NEITHER}"
    ]
    store = store_at(tmp_path / "catalogue.sqlite3")
    stored = store.get_listings(["AAA111", "BBB222", "NOPE00"], None)
    assert sorted(stored) == ["AAA111", "BBB222"]
    assert stored["AAA111"]["name"] == "One" and stored["BBB222"]["name"] == "Two"


def test_catalogue_import_replaces_an_existing_listing(tmp_path: Path, store_at: Any) -> None:
    first = write_ndjson(
        tmp_path / "first.ndjson",
        [json.dumps(listing("AAA111", "Harbourfront Residences")), json.dumps(listing("BBB222", "Other"))],
    )
    assert invoke("catalogue", "import", first, "--data", tmp_path).exit_code == 0
    updated = listing("AAA111", "Parkside Lofts", sellingStatus="Sold Out")
    second = write_ndjson(tmp_path / "second.ndjson", [json.dumps(updated)])
    result = invoke("catalogue", "import", second, "--data", tmp_path)
    assert result.exit_code == 0, result.output
    store = store_at(tmp_path / "catalogue.sqlite3")
    assert store.counts()["listings"] == 2
    assert as_given(store.get_listings(["AAA111"], None)) == {"AAA111": updated}
    found = store.search_listings(ListingQuery(text=TextQuery.parse("Parkside")))
    assert [d["listingId"] for d in found.documents] == ["AAA111"]
    assert store.search_listings(ListingQuery(text=TextQuery.parse("Harbourfront"))).total == 0


def test_catalogue_import_same_listing_twice_in_one_file_keeps_the_last(tmp_path: Path, store_at: Any) -> None:
    file = write_ndjson(
        tmp_path / "changes.ndjson",
        [
            json.dumps(listing("AAA111", "Alpha Towers")),
            json.dumps(listing("BBB222", "Gamma Place")),
            json.dumps(listing("AAA111", "Beta Lofts", type=["Townhouse"])),
        ],
    )
    result = invoke("catalogue", "import", file, "--data", tmp_path)
    assert result.exit_code == 0, result.output
    store = store_at(tmp_path / "catalogue.sqlite3")
    assert store.get_listings(["AAA111"], None)["AAA111"]["name"] == "Beta Lofts"
    hits = store.search_listings(ListingQuery(facets=("type",)))
    assert hits.total == 2
    assert dict(hits.facets["type"]) == {"Condo": 1, "Townhouse": 1}
    assert store.search_listings(ListingQuery(text=TextQuery.parse("Alpha"))).total == 0


def test_catalogue_import_same_listing_twice_in_a_row(tmp_path: Path, store_at: Any) -> None:
    file = write_ndjson(
        tmp_path / "changes.ndjson",
        [json.dumps(listing("AAA111", "Alpha Towers")), json.dumps(listing("AAA111", "Beta Lofts"))],
    )
    result = invoke("catalogue", "import", file, "--data", tmp_path)
    assert result.exit_code == 0, result.output
    store = store_at(tmp_path / "catalogue.sqlite3")
    assert store.get_listings(["AAA111"], None)["AAA111"]["name"] == "Beta Lofts"


def test_catalogue_import_sandbox(tmp_path: Path, store_at: Any) -> None:
    record = listing("SAND01", "Sandbox Tower")
    file = write_ndjson(tmp_path / "sandbox.ndjson", [json.dumps(record)])
    data = tmp_path / "data"
    result = invoke("catalogue", "import", file, "--sandbox", "--data", data)
    assert result.exit_code == 0, result.output
    assert not (data / "catalogue.sqlite3").exists()
    store = store_at(data / "sandbox.sqlite3")
    assert store.counts() == {"listings": 1, "profiles": 0}
    assert as_given(store.get_listings(["SAND01"], None)) == {"SAND01": record}


def test_catalogue_import_exits_1_when_every_record_is_bad(tmp_path: Path) -> None:
    file = write_ndjson(tmp_path / "bad.ndjson", ["{oops", "[1, 2]", json.dumps({"path": "Nowhere/x"})])
    done = run_precon("catalogue", "import", file, "--data", tmp_path / "data")
    assert done.returncode == 1, done.stderr
    skipped = [line for line in done.stderr.splitlines() if "skipped:" in line]
    assert [line.split(": skipped:")[0] for line in skipped] == [f"{file}:1", f"{file}:2", f"{file}:3"]
    assert skipped[1] == f"{file}:2: skipped: expected a JSON object, got list"
    assert skipped[2] == f"{file}:3: skipped: unknown profile collection 'Nowhere' in path 'Nowhere/x'"
