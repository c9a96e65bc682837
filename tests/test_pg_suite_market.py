"""tests/test_service_market.py again, on the PostgreSQL store (see tests/pg_support.py's ``pg_api``): the history is
recorded in PostgreSQL by each write, and ``market_stats`` answered from a replica's copy of it and of the catalogue."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests import pg_support
from tests.test_service_market import *  # noqa: F403 - the module's tests, run here on the other store

pg_cluster = pg_support.pg_cluster


@pytest.fixture(scope="module")
def api(pg_cluster: pg_support.Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    yield from pg_support.pg_api(pg_cluster, tmp_path_factory.mktemp("pg-suite"))


def test_this_module_runs_on_postgresql(api: Any) -> None:
    assert type(api.directory.live).__name__ == "ReplicaCatalogue"
