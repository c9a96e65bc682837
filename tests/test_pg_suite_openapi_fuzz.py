"""tests/test_openapi_fuzz.py again, with everything in PostgreSQL: schemathesis against a service whose catalogue,
keys and webhooks are in a fresh database of the throw-away cluster (see tests/pg_support.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from precon.service.config import ServiceSettings
from precon.service.runtime import DataDirectory
from precon.service.server import ServerThread
from tests import pg_support
from tests.test_openapi_fuzz import FUZZ_KEY
from tests.test_openapi_fuzz import test_schemathesis_finds_nothing as test_schemathesis_finds_nothing_on_postgresql

pg_cluster = pg_support.pg_cluster

__all__ = ["test_schemathesis_finds_nothing_on_postgresql"]


@pytest.fixture(scope="module")
def fuzzed_service(pg_cluster: pg_support.Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    name = pg_cluster.database()
    settings = ServiceSettings(
        data_dir=tmp_path_factory.mktemp("pg-fuzz-data"),
        database_url=pg_cluster.conninfo(name),
        default_listings=300,
        rate_limit=0,
        failed_auth_rate=0,  # as in tests/test_openapi_fuzz.py: every probe without a key gets its 403
        webhook_worker=False,
    )
    directory = DataDirectory.open(settings)
    assert type(directory.live).__name__ == "ReplicaCatalogue"
    assert type(directory.accounts).__name__ == "PostgresAccountStore"
    directory.accounts.create_key("everything", key=FUZZ_KEY)
    try:
        with ServerThread(directory.app()) as server:
            yield server.url
    finally:
        directory.close()
        pg_cluster.drop(name)
