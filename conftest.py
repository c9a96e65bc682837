"""Fixtures shared by the test modules: the dashboard under AppTest, the dashboard in a real browser, the webhook
service and its receiver. And how the tests are marked and grouped:

- ``browser`` (chromium drives the dashboard) and ``postgres`` (a PostgreSQL cluster) are put on each test from what
  it uses; ``make check`` leaves both out.
- Under pytest-xdist (``make test``: ``--dist loadgroup``) a module's tests stay in one process, so its module
  fixtures (servers, catalogues) start once; the browser tests all run in one process, one after the other, as they
  did before (each module's dashboard and the session's chromium beside one another, not four at once on two
  cores), and they come first, being the longest group.
"""

from typing import Any

import pytest

pytest_plugins = ["tests.dashboard_support", "tests.browser_support", "tests.webhook_support"]

BROWSER_FIXTURES = frozenset({"browser", "dashboard", "oracle"})
POSTGRES_FIXTURES = frozenset({"pg_cluster", "pg_database", "pg_empty_database"})
BROWSER_GROUP = "browser"


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the xdist_group marks
def pytest_collection_modifyitems(items: list[Any]) -> None:
    for item in items:
        module = item.module.__name__.rsplit(".", 1)[-1] if getattr(item, "module", None) else ""
        fixtures = set(getattr(item, "fixturenames", ()))
        browser = module.startswith("test_browser") or bool(fixtures & BROWSER_FIXTURES)
        if browser:
            item.add_marker(pytest.mark.browser)
        if module.startswith("test_pg_") or fixtures & POSTGRES_FIXTURES:
            item.add_marker(pytest.mark.postgres)
        item.add_marker(pytest.mark.xdist_group(BROWSER_GROUP if browser else item.nodeid.split("::", 1)[0]))
    items.sort(key=lambda item: item.get_closest_marker("browser") is None)  # stable: the order within stays
