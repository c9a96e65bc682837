"""tests/test_client.py again, on the PostgreSQL store (see tests/pg_support.py's ``pg_api``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests import pg_support
from tests.test_client import *  # noqa: F403 - the module's tests, run here on the other store

# Tests of that module that do not go through the service (``api``): they run there, once.
del test_rate_limited_and_server_errors, test_unreachable_and_silent_services  # noqa: F821

pg_cluster = pg_support.pg_cluster


@pytest.fixture(scope="module")
def api(pg_cluster: pg_support.Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    yield from pg_support.pg_api(pg_cluster, tmp_path_factory.mktemp("pg-suite"))


def test_this_module_runs_on_postgresql(api: Any) -> None:
    assert type(api.directory.live).__name__ == "ReplicaCatalogue"
