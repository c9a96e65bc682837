"""The ``precon`` command: keys create, catalogue generate and import, serve --dev, and --database (PostgreSQL)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import psycopg
import pytest
from click.testing import CliRunner, Result

from precon.cli import main, redact, scrub
from precon.models import PROVINCES, VERSIONS
from precon.service import catalogue
from precon.service.accounts.model import Grant, digest
from precon.service.accounts.sqlite import AccountStore
from precon.service.search.text import TextQuery
from precon.service.stores.postgres.store import PostgresCatalogueStore
from precon.service.stores.sqlite.store import SQLiteStore
from precon.service.stores.types import ListingQuery
from tests import pg_support
from tests.ports import free_port

pg_cluster = pg_support.pg_cluster

PRECON = Path(sys.executable).with_name("precon")
EVERY_PROVINCE = frozenset([*PROVINCES, "all"])
NEITHER = "neither a listing (no listingId) nor a profile (no '<Collection>/<id>' path)"


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without any ``PRECON_SERVICE_*`` setting that would change what the command does."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRECON_SERVICE_")}
    return {**env, **extra}


def run_precon(*args: str | Path, timeout: float = 120, **env: str) -> subprocess.CompletedProcess[str]:
    """The real console script, as a user runs it."""
    return subprocess.run(
        [str(PRECON), *map(str, args)], capture_output=True, text=True, env=clean_env(**env), timeout=timeout
    )


def invoke(*args: str | Path) -> Result:
    """The command in process (quicker than a subprocess); stdout and stderr are kept apart."""
    env = {"PRECON_SERVICE_DATA_DIR": None, "PRECON_SERVICE_DATABASE_URL": None}
    return CliRunner().invoke(main, [str(a) for a in args], env=env)


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


def write_ndjson(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def listing(listing_id: str, name: str, **fields: Any) -> dict[str, Any]:
    return {
        "listingId": listing_id,
        "path": f"Listings/{listing_id}",
        "name": name,
        "state": "Ontario",
        "cityOrDistrict": "Toronto",
        "type": ["Condo"],
        **fields,
    }


def profile(path: str, name: str) -> dict[str, Any]:
    return {"id": path.split("/", 1)[1], "path": path, "name": name, "listings": []}


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
    expected = catalogue.generate(300, 3)
    assert first.counts() == {"listings": 300, "profiles": len(expected.profiles)}
    first_ids = all_listing_ids(first)
    assert first_ids == {r["listingId"] for r in expected.listings}
    first.close()

    result = invoke("catalogue", "generate", "--listings", "300", "--seed", "4", "--data", data)
    assert result.exit_code == 0, result.output
    second = store_at(data / "catalogue.sqlite3")
    assert second.counts()["listings"] == 300
    second_ids = all_listing_ids(second)
    assert second_ids == {r["listingId"] for r in catalogue.generate(300, 4).listings}
    assert second_ids != first_ids
    assert not (data / "catalogue.sqlite3.new").exists()


def test_catalogue_generate_out_round_trips_through_import(tmp_path: Path, store_at: Any) -> None:
    out = tmp_path / "catalogue.ndjson"
    result = invoke("catalogue", "generate", "--listings", "120", "--seed", "7", "--out", out, "--data", tmp_path / "a")
    assert result.exit_code == 0, result.output
    records = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    generated = catalogue.generate(120, 7)
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


# ----------------------------------------------------------------------------------------------------------
# precon serve --dev
# ----------------------------------------------------------------------------------------------------------


def test_serve_dev_answers_with_the_development_key(tmp_path: Path) -> None:
    port = free_port()
    log = (tmp_path / "serve.log").open("w")
    process = subprocess.Popen(
        [str(PRECON), "serve", "--dev", "--port", str(port), "--data", str(tmp_path / "data")],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=clean_env(PRECON_SERVICE_DEFAULT_LISTINGS="200"),
    )
    base = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(timeout=10) as http:
            deadline = time.monotonic() + 60
            while True:
                assert process.poll() is None, (tmp_path / "serve.log").read_text()
                try:
                    if http.get(base + "/healthz").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, "the service did not answer /healthz within 60 s"
                time.sleep(0.2)
            assert http.get(base + "/healthz").json() == {
                "status": "ok",
                "listings": 200,
                "profiles": catalogue.default_profile_count(200),
            }
            headers = {"x-api-key": "precon-dev-key"}
            params = {"product_id": "precon-dev", "perPage": 1}
            live = http.get(base + "/v1/all/search_listings", params=params, headers=headers)
            assert live.status_code == 200, live.text
            body = live.json()
            assert body["total"] == 200
            assert len(body["results"]) == 1
            sandbox = http.get(base + "/v1-sandbox/all/search_listings", params=params, headers=headers)
            assert sandbox.status_code == 200, sandbox.text
            assert sandbox.json()["total"] == len(catalogue.sandbox().listings)
            refused = http.get(base + "/v1/all/search_listings", params=params, headers={"x-api-key": "wrong"})
            assert refused.status_code != 200
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
    assert (tmp_path / "data" / "catalogue.sqlite3").exists()


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.10", "::"])
def test_serve_dev_refuses_a_non_loopback_host(tmp_path: Path, host: str) -> None:
    done = run_precon(
        "serve", "--dev", "--host", host, "--port", str(free_port()), "--data", tmp_path / "data", timeout=30
    )
    assert done.returncode != 0
    assert "loopback" in done.stderr
    assert not (tmp_path / "data").exists()  # refused before anything was opened


def test_prepare_builds_the_catalogue_once_with_progress(tmp_path: Path) -> None:
    runner = CliRunner()
    first = runner.invoke(main, ["catalogue", "prepare", "--data", str(tmp_path)])
    assert first.exit_code == 0, first.output
    assert "Building the catalogue" in first.output and "Generated 2,500 listings" in first.output
    assert "Catalogue ready: 2,500 listings" in first.output
    again = runner.invoke(main, ["catalogue", "prepare", "--data", str(tmp_path)])
    assert again.exit_code == 0 and "Building" not in again.output and "Catalogue ready: 2,500 listings" in again.output


# ----------------------------------------------------------------------------------------------------------
# --database: PostgreSQL
# ----------------------------------------------------------------------------------------------------------

PASSWORD = "hunter2-s3cret"
"""In every URL below (the throw-away cluster trusts its socket, so the password is never checked): nothing the
command prints may show it."""


def with_password(url: str) -> str:
    """``postgresql://precon@/db?...`` as ``postgresql://precon:<PASSWORD>@/db?...``."""
    user, at, rest = url.partition("@")
    assert at
    return f"{user}:{PASSWORD}{at}{rest}"


def wait_healthy(process: subprocess.Popen[bytes], base: str, log: Path) -> None:
    with httpx.Client(timeout=10) as http:
        deadline = time.monotonic() + 90
        while True:
            assert process.poll() is None, log.read_text()
            try:
                if http.get(base + "/healthz").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the service did not answer /healthz within 90 s"
            time.sleep(0.2)


@pytest.mark.parametrize("workers", [1, 2])
def test_serve_database_answers_from_its_copy_and_follows_writes(
    pg_cluster: pg_support.Cluster, tmp_path: Path, workers: int
) -> None:
    name = pg_cluster.database()
    port = free_port()
    log_path = tmp_path / "serve.log"
    data = tmp_path / "data"
    command = [str(PRECON), "serve", "--dev", "--port", str(port), "--data", str(data)]
    command += ["--workers", str(workers), "--database", with_password(pg_cluster.url(name))]
    with log_path.open("w") as log:
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, env=clean_env(PRECON_SERVICE_DEFAULT_LISTINGS="120")
        )
        base = f"http://127.0.0.1:{port}"
        try:
            wait_healthy(process, base, log_path)
            assert httpx.get(base + "/healthz").json()["listings"] == 120
            headers = {"x-api-key": "precon-dev-key"}
            params = {"product_id": "precon-dev", "perPage": 5}
            page = httpx.get(base + "/v1/all/search_listings", params=params, headers=headers)
            assert page.status_code == 200, page.text
            assert page.json()["total"] == 120 and len(page.json()["results"]) == 5
            # A write committed in PostgreSQL reaches every worker's searches (one copy, followed, its index shared).
            writer = PostgresCatalogueStore(pg_cluster.conninfo(name), migrate=False)
            try:
                first = page.json()["results"][0]["listingId"]
                record = {**writer.get_listings([first], None)[first], "listingId": "FOLLOWED", "path": "Listings/F"}
                record.pop("floorPlans", None)
                writer.upsert_listings([record])
            finally:
                writer.close()
            deadline, in_a_row = time.monotonic() + 60, 0
            while in_a_row < 3 * workers:
                total = httpx.get(base + "/v1/all/search_listings", params=params, headers=headers).json()["total"]
                in_a_row = in_a_row + 1 if total == 121 else 0
                assert time.monotonic() < deadline, "the write never reached every worker's searches"
                time.sleep(0.05)
            assert (data / "copies" / "copy-public.sqlite3").exists()
        finally:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
    output = log_path.read_text()
    assert PASSWORD not in output
    assert f"precon:***@/{name}" in output  # where it opened, said without the password
    assert not (data / "catalogue.sqlite3").exists() and not (data / "sandbox.sqlite3").exists()
    with psycopg.connect(pg_cluster.conninfo(name)) as db:  # the catalogue is in PostgreSQL
        row = db.execute("SELECT count(*) FROM listings").fetchone()
        assert row is not None and row[0] == 121  # the generated 120 and the one written
    pg_cluster.drop(name)


def test_the_database_password_is_never_printed(pg_cluster: pg_support.Cluster, tmp_path: Path) -> None:
    missing = with_password(pg_cluster.url("no_such_database"))
    garbled = f"host={pg_cluster.root} password={PASSWORD} dbname"  # a connection string libpq cannot read
    file = write_ndjson(tmp_path / "one.ndjson", [json.dumps(listing("PWD001", "Secret Tower"))])
    runs = [
        run_precon("catalogue", "import", file, "--data", tmp_path, "--database", missing),
        run_precon("catalogue", "import", file, "--data", tmp_path, "--database", garbled),
        run_precon("catalogue", "generate", "--listings", "5", "--data", tmp_path, "--database", missing),
        run_precon("serve", "--port", str(free_port()), "--data", tmp_path, "--workers", "1", "--database", missing),
        run_precon("serve", "--port", str(free_port()), "--data", tmp_path, "--workers", "2", "--database", missing),
        run_precon("catalogue", "import", file, "--data", tmp_path, PRECON_SERVICE_DATABASE_URL=missing),
    ]
    for done in runs:
        assert done.returncode != 0, done.args
        assert PASSWORD not in done.stdout + done.stderr, done.args
        assert "no_such_database" in done.stderr or "dbname" in done.stderr, done.stderr
    assert "does not exist" in runs[0].stderr and "nothing was imported" in runs[0].stderr
    assert not (tmp_path / "catalogue.sqlite3").exists()  # nothing fell back to SQLite
    shown = run_precon("serve", "--help", PRECON_SERVICE_DATABASE_URL=missing)
    assert shown.returncode == 0 and "--database URL" in shown.stdout and PASSWORD not in shown.stdout


@pytest.mark.parametrize(
    ("url", "shown", "secret"),
    [
        ("postgresql://bob:s3cr%40t@db.example:5432/precon", "postgresql://bob:***@db.example:5432/precon", "s3cr"),
        ("postgres://bob:p@ss/w@rd@db/x?sslmode=require", "postgres://bob:***@db/x?sslmode=require", "w@rd"),
        (
            "postgresql://bob@db/x?password=s3cret&sslmode=require",
            "postgresql://bob@db/x?password=***&sslmode=require",
            "s3cret",
        ),
        ("host=db user=bob password=s3cret dbname=x", "host=db user=bob password=*** dbname=x", "s3cret"),
        ("host=db password='a b\\' c' dbname=x", "host=db password=*** dbname=x", "a b"),
        ("postgresql:///precon?host=/run/postgresql", "postgresql:///precon?host=/run/postgresql", None),
    ],
)
def test_redact_hides_the_password_of_every_form_of_url(url: str, shown: str, secret: str | None) -> None:
    assert redact(url) == shown
    assert secret is None or secret not in scrub(f"could not open {url}", url)


def test_scrub_hides_the_password_as_libpq_reads_it() -> None:
    url = "postgresql://bob:s3cr%40t@db.example/precon"
    assert scrub("FATAL: password s3cr@t refused", url) == "FATAL: password *** refused"


def test_keys_create_database_writes_the_key_to_postgresql(pg_cluster: pg_support.Cluster, tmp_path: Path) -> None:
    from precon.service.accounts.postgres import PostgresAccountStore

    name = pg_cluster.database()
    url = with_password(pg_cluster.url(name))
    done = run_precon("keys", "create", "--product", "acme", "--provinces", "on", "--data", tmp_path, "--database", url)
    assert done.returncode == 0, done.stderr
    assert PASSWORD not in done.stdout + done.stderr
    assert not (tmp_path / "accounts.sqlite3").exists()
    accounts = PostgresAccountStore(pg_cluster.url(name), migrate=False)
    try:
        found = accounts.authenticate(done.stdout.strip())
        assert found is not None and found.allows("v1", "on") and not found.allows("v1", "bc")
    finally:
        accounts.close()
        pg_cluster.drop(name)
