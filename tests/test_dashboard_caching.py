"""A rerun that changes nothing makes no API call: every page reads through the cached API layer."""

from __future__ import annotations

from typing import Any

import pytest

from components import api
from tests.dashboard_support import open_page

PAGES = ["views/home.py", "views/search.py", "views/map.py", "views/facets.py", "views/profiles.py"]


@pytest.mark.usefixtures("embedded_dashboard")
@pytest.mark.parametrize("page", PAGES)
def test_a_rerun_that_changes_nothing_makes_no_api_call(page: str, monkeypatch: pytest.MonkeyPatch) -> None:
    app = open_page(page)
    assert not app.exception
    current = api.connection()
    calls: list[str] = []
    for client in (current.client, current.fresh_client):
        original = client.call

        def counting(method: str, operation: str, *args: Any, _original: Any = original, **kwargs: Any) -> Any:
            calls.append(operation)
            return _original(method, operation, *args, **kwargs)

        monkeypatch.setattr(client, "call", counting)
    app.run()
    assert not app.exception
    assert calls == [], f"{page} called the API again on a rerun: {calls}"
