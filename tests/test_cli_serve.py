"""The ``precon`` command that serves: serve --dev, catalogue prepare, and --database (PostgreSQL) with its password
never shown (tests/test_cli.py: keys and the catalogue)."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import httpx
import psycopg
import pytest
from click.testing import CliRunner

from precon.cli import main, redact, scrub
from precon.service import catalogue
from precon.service.stores.postgres.store import PostgresCatalogueStore
from tests import pg_support
from tests.cli_support import PRECON, clean_env, listing, run_precon, write_ndjson
from tests.ports import free_port
from tests.waiting import START_TIMEOUT_S, stop_process

pg_cluster = pg_support.pg_cluster


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
            deadline = time.monotonic() + START_TIMEOUT_S
            while True:
                assert process.poll() is None, (tmp_path / "serve.log").read_text()
                try:
                    if http.get(base + "/healthz").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, f"the service did not answer /healthz within {START_TIMEOUT_S} s"
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
        stop_process(process)
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
            stop_process(process)
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
