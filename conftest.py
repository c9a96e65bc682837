"""Fixtures shared by the test modules: the dashboard under AppTest, the dashboard in a real browser, the webhook
service and its receiver. And the markers ``make check`` leaves out: ``browser`` (chromium drives the dashboard)
and ``postgres`` (a PostgreSQL cluster), put on each test here from what it uses."""

from typing import Any

import pytest

pytest_plugins = ["tests.dashboard_support", "tests.browser_support", "tests.webhook_support"]

BROWSER_FIXTURES = frozenset({"browser", "dashboard", "oracle"})
POSTGRES_FIXTURES = frozenset({"pg_cluster", "pg_database", "pg_empty_database"})


def pytest_collection_modifyitems(items: list[Any]) -> None:
    for item in items:
        module = item.module.__name__.rsplit(".", 1)[-1] if getattr(item, "module", None) else ""
        fixtures = set(getattr(item, "fixturenames", ()))
        if module.startswith("test_browser") or fixtures & BROWSER_FIXTURES:
            item.add_marker(pytest.mark.browser)
        if module.startswith("test_pg_") or fixtures & POSTGRES_FIXTURES:
            item.add_marker(pytest.mark.postgres)
