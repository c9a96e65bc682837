"""A rerun that changes nothing makes no API call: every page reads through the cached API layer."""

from __future__ import annotations

import threading
from typing import Any

import httpx
import pytest

from components import api
from tests.dashboard_support import open_page, reset_caches

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


def _service_threads() -> list[str]:
    prefixes = ("precon-service", "precon-status", "webhook-", "journal-sweeper")
    return sorted(t.name for t in threading.enumerate() if t.name.startswith(prefixes))


@pytest.mark.usefixtures("embedded_dashboard")
def test_clearing_the_cache_stops_the_embedded_service_and_its_threads() -> None:
    """Every AppTest clears Streamlit's caches; a service left running per test once grew a suite to 790 threads."""
    before = _service_threads()
    for page in ("views/home.py", "views/status.py", "views/webhooks.py"):
        assert not open_page(page).exception
        url = api.connection().url
        assert _service_threads() != before
        reset_caches()
        assert _service_threads() == before, page
        with pytest.raises(httpx.TransportError):
            httpx.get(url + "/health", timeout=2)
