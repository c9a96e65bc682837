"""A throw-away PostgreSQL cluster for the tests: started once per test session in a temporary folder.

``initdb`` and ``pg_ctl`` come from PATH or ``pg_config --bindir`` (Debian: ``/usr/lib/postgresql/15/bin``). The
server listens only on a Unix socket in the temporary folder (no TCP port to collide with), with durability off
(a test database need not survive a crash). PostgreSQL refuses to run as root: when the tests do, the folder is
given to the ``postgres`` user and the binaries run as that user through ``runuser``.

Each test (or module) gets a fresh database, copied from a template that the migrations made once
(``CREATE DATABASE ... TEMPLATE``: tens of milliseconds, not the seconds migrating again would take).

Without PostgreSQL the tests that need it are skipped with a message; under CI (``CI`` or
``PRECON_REQUIRE_SYSTEM_TESTS`` set) that is a failure instead.
"""

from __future__ import annotations

import atexit
import contextlib
import glob
import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Api

SERVER_USER = "postgres"
"""Who runs the server when the tests run as root."""
SUPERUSER = "precon"
"""The cluster's superuser (``initdb -U``), whom the tests connect as (trust authentication, socket only)."""
TEMPLATE = "precon_template"
START_TIMEOUT_S = 60


def required() -> bool:
    """Whether a missing or broken PostgreSQL fails the tests (CI) rather than skips them."""
    return bool(os.environ.get("PRECON_REQUIRE_SYSTEM_TESTS") or os.environ.get("CI", "").lower() in ("1", "true"))


def unavailable(message: str) -> None:
    if required():
        pytest.fail(message + "; CI requires the PostgreSQL tests")
    pytest.skip(message)


def find_bindir() -> Path | None:
    """The folder holding ``initdb``, ``pg_ctl`` and ``postgres``, or None."""
    candidates: list[str] = []
    if env := os.environ.get("PRECON_PG_BINDIR"):
        candidates.append(env)
    pg_config = shutil.which("pg_config")
    if pg_config is not None:
        with contextlib.suppress(OSError):
            candidates.append(subprocess.run([pg_config, "--bindir"], capture_output=True, text=True).stdout.strip())
    if initdb := shutil.which("initdb"):
        candidates.append(str(Path(initdb).resolve().parent))
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    for candidate in candidates:
        folder = Path(candidate)
        if all((folder / name).is_file() for name in ("initdb", "pg_ctl", "postgres")):
            return folder
    return None


class Cluster:
    """One running throw-away server; :meth:`database` hands out fresh databases."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.root = Path(tempfile.mkdtemp(prefix="precon-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.port = 5432  # names the socket file only: the server listens on no TCP port
        self._as_user: list[str] = []
        self._names = itertools.count(1)
        self._lock = threading.Lock()
        self._template_ready = False
        self.running = False
        if os.geteuid() == 0:
            try:
                user = pwd.getpwnam(SERVER_USER)
            except KeyError as error:
                raise RuntimeError(f"running as root and there is no {SERVER_USER!r} user to run PostgreSQL") from error
            os.chown(self.root, user.pw_uid, user.pw_gid)
            self._as_user = ["runuser", "-u", SERVER_USER, "--"]

    def _run(self, *args: str) -> None:
        command = [*self._as_user, *args]
        result = subprocess.run(command, capture_output=True, text=True, cwd=self.root, timeout=START_TIMEOUT_S)
        if result.returncode != 0:
            log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise RuntimeError(f"{' '.join(args[:2])} failed ({result.returncode}): {result.stderr.strip()}\n{log}")

    def start(self, settings: Iterable[str] = ()) -> None:
        """Makes and starts the cluster; ``settings`` are more ``name=value`` server settings (later ones win)."""
        self._run(
            str(self.bindir / "initdb"),
            "-D",
            str(self.data),
            "-U",
            SUPERUSER,
            "--auth=trust",
            "--encoding=UTF8",
            "--locale=C",
            "--no-sync",
        )
        options = " ".join(
            [
                "-c listen_addresses=''",
                f"-c unix_socket_directories='{self.root}'",
                f"-p {self.port}",
                "-c fsync=off",
                "-c synchronous_commit=off",
                "-c full_page_writes=off",
                "-c max_connections=100",
                "-c shared_buffers=32MB",
                *(f"-c {setting}" for setting in settings),
            ]
        )
        self._run(str(self.bindir / "pg_ctl"), "start", "-D", str(self.data), "-l", str(self.log), "-w", "-o", options)
        self.running = True

    def stop(self) -> None:
        if self.running:
            self.running = False
            with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
                self._run(str(self.bindir / "pg_ctl"), "stop", "-D", str(self.data), "-m", "immediate", "-w")
        shutil.rmtree(self.root, ignore_errors=True)

    def conninfo(self, dbname: str = "postgres") -> str:
        """A libpq connection string for a database of this cluster (over its Unix socket)."""
        return f"host={self.root} port={self.port} user={SUPERUSER} dbname={dbname}"

    def url(self, dbname: str = "postgres") -> str:
        """The same as a ``postgresql://`` URL (the socket folder as the ``host`` parameter)."""
        return f"postgresql://{SUPERUSER}@/{dbname}?host={self.root}&port={self.port}"

    def execute(self, sql: str, dbname: str = "postgres") -> None:
        import psycopg

        with psycopg.connect(self.conninfo(dbname), autocommit=True) as connection:
            connection.execute(sql)

    def database(self, prepare: Callable[[str], None] | None = None) -> str:
        """A new, empty database's name; with ``prepare`` (given the template's conninfo, called once per
        session), a copy of a template that ``prepare`` made (the migrated schema)."""
        with self._lock:
            name = f"test_{next(self._names)}"
            if prepare is None:
                self.execute(f"CREATE DATABASE {name}")
                return name
            if not self._template_ready:
                self.execute(f"CREATE DATABASE {TEMPLATE}")
                prepare(self.conninfo(TEMPLATE))
                self._template_ready = True
            self.execute(f"CREATE DATABASE {name} TEMPLATE {TEMPLATE}")
            return name

    def drop(self, name: str) -> None:
        self.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


_cluster: Cluster | None = None
_failure: str | None = None
_start_lock = threading.Lock()


def cluster() -> Cluster:
    """The session's cluster, started on first use (stopped when the process exits); skips or fails the calling
    test when PostgreSQL is missing or cannot start."""
    global _cluster, _failure
    with _start_lock:
        if _cluster is None and _failure is None:
            try:
                import psycopg  # noqa: F401
            except ImportError:
                _failure = "psycopg is not installed (make install): PostgreSQL tests skipped"
            bindir = find_bindir() if _failure is None else None
            if _failure is None and bindir is None:
                _failure = "PostgreSQL is not installed (apt-get install -y postgresql): PostgreSQL tests skipped"
            if bindir is not None:
                candidate = None
                try:
                    candidate = Cluster(bindir)
                    candidate.start()
                    _cluster = candidate
                    atexit.register(candidate.stop)
                except (RuntimeError, OSError, subprocess.TimeoutExpired) as error:
                    if candidate is not None:
                        candidate.stop()
                    _failure = f"PostgreSQL could not start: {error}"
    if _cluster is None:
        unavailable(_failure or "PostgreSQL unavailable")
    assert _cluster is not None
    return _cluster


def migrate(conninfo: str) -> None:
    from precon.service.stores.postgres.migrations import upgrade

    upgrade(conninfo)


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Cluster]:
    """The throw-away cluster (skipped without PostgreSQL, unless CI requires it)."""
    yield cluster()


@pytest.fixture
def pg_database(pg_cluster: Cluster) -> Iterator[str]:
    """A fresh database of the migrated schema, dropped after the test: its conninfo."""
    name = pg_cluster.database(migrate)
    yield pg_cluster.conninfo(name)
    pg_cluster.drop(name)


@pytest.fixture
def pg_empty_database(pg_cluster: Cluster) -> Iterator[str]:
    """A fresh database without the schema (for the migrations' own tests): its conninfo."""
    name = pg_cluster.database()
    yield pg_cluster.conninfo(name)
    pg_cluster.drop(name)


# ----------------------------------------------------------------------------------------------------------
# The service over PostgreSQL, for the service's own test modules (tests/test_pg_suite_*.py run them again)
# ----------------------------------------------------------------------------------------------------------


def pg_api(cluster_: Cluster, data_dir: Path) -> Iterator[Any]:
    """The ``api`` of tests/conftest.py (the same keys, the same special listings) on a replica: everything in a
    fresh PostgreSQL database (the catalogue and sandbox, the keys, the webhook subscriptions and outbox), the
    questions answered from the replica's local copies in ``data_dir``."""
    import httpx

    from precon.service.config import ServiceSettings
    from precon.service.runtime import DataDirectory
    from precon.service.server import ServerThread
    from tests import conftest

    name = cluster_.database()
    settings = ServiceSettings(
        data_dir=data_dir,
        default_listings=conftest.TEST_LISTINGS,
        default_seed=conftest.TEST_SEED,
        rate_limit=0,
        dev=True,
        database_url=cluster_.conninfo(name),
    )
    directory = DataDirectory.open(settings)
    live, accounts = directory.live, directory.accounts
    accounts.create_key("everything", key=conftest.KEY_ALL)
    accounts.create_key("ontario", ["v1"], ["on"], key=conftest.KEY_ONTARIO)
    accounts.create_key("lite", ["v1-lite"], key=conftest.KEY_LITE)
    accounts.create_key("pei", ["v1"], ["pe"], key=conftest.KEY_PEI)
    first = live.search_listings(_first_listing_query()).documents[0]["listingId"]
    record = dict(live.get_listings([first], None)[first])
    record.update(listingId="XSS0A1", path="Listings/XSS0A1", name=conftest.XSS_NAME, isFeatured=False)
    if isinstance(record.get("floorPlans"), list):
        record["floorPlans"] = [{k: v for k, v in plan.items() if k != "id"} for plan in record["floorPlans"]]
    live.upsert_listings([record])
    try:
        with ServerThread(directory.app()) as server, httpx.Client(timeout=30) as http:
            yield PgApi(server.url, directory, http)
    finally:
        directory.close()
        cluster_.drop(name)


def _first_listing_query() -> Any:
    """The listing with the smallest id (the template conftest's special listing is copied from)."""
    from precon.filters import parse
    from precon.service.stores.types import ListingQuery

    return ListingQuery(limit=1, filter=parse("NOT listingId:XSS0A1"))


class PgApi(Api):
    """:class:`tests.conftest.Api` whose oracle reads the stored documents from PostgreSQL."""

    def all_listings(self) -> list[dict[str, Any]]:
        return self._documents("SELECT doc::text FROM listings ORDER BY listing_id")

    def all_profiles(self) -> list[dict[str, Any]]:
        return self._documents("SELECT doc::text FROM profiles ORDER BY path")

    def _documents(self, sql: str) -> list[dict[str, Any]]:
        import orjson

        with self.directory.live.pool.connection() as db:  # type: ignore[attr-defined]
            return [orjson.loads(text) for (text,) in db.execute(sql)]
