"""tests/test_derived_fields.py again, on the PostgreSQL store (see tests/pg_support.py's ``pg_api``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests import pg_support
from tests.test_derived_fields import *  # noqa: F403 - the module's tests, run here on the other store

# Tests of that module that do not go through the service (``api``): they run there, once.
for _name in (
    "test_plans_without_ids_get_deterministic_unique_ones",
    "test_the_store_keeps_incoming_ids_and_gives_the_same_ids_again",
    "test_reimporting_a_file_gives_the_same_ids",
    "test_timestamp_rules",
    "test_the_store_stamps_creation_and_status_changes_only",
    "test_filtered_and_faceted_as_a_number",
    "test_models_read_the_new_fields_leniently",
):
    del globals()[_name]

pg_cluster = pg_support.pg_cluster


@pytest.fixture(scope="module")
def api(pg_cluster: pg_support.Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    yield from pg_support.pg_api(pg_cluster, tmp_path_factory.mktemp("pg-suite"))


def test_this_module_runs_on_postgresql(api: Any) -> None:
    assert type(api.directory.live).__name__ == "ReplicaCatalogue"
