"""tests/test_service_unit_filter.py again, on the PostgreSQL store (see tests/pg_support.py's ``pg_api``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests import pg_support
from tests.test_service_unit_filter import *  # noqa: F403 - the module's tests, run here on the other store

# Tests of that module that do not go through the service (``api``): they run there, once.
for _name in (
    "test_the_unit_fields_are_the_floor_plan_fields_the_contract_names",
    "test_unit_filters_agree_with_the_evaluator_per_floor_plan",
    "test_unit_filter_is_anded_with_the_rest_and_scopes_the_facets",
    "test_plans_follow_upserts_deletes_and_a_reindex",
):
    del globals()[_name]

pg_cluster = pg_support.pg_cluster


@pytest.fixture(scope="module")
def api(pg_cluster: pg_support.Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    yield from pg_support.pg_api(pg_cluster, tmp_path_factory.mktemp("pg-suite"))


def test_this_module_runs_on_postgresql(api: Any) -> None:
    assert type(api.directory.live).__name__ == "ReplicaCatalogue"
