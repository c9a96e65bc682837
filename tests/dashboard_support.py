"""Running the dashboard under Streamlit's AppTest against a real service, or against failing ones."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import streamlit as st
from fastapi import FastAPI
from fastapi.responses import JSONResponse
from streamlit.testing.v1 import AppTest

from precon.client import Client
from precon.service.config import ServiceSettings
from precon.service.embedded import EmbeddedService
from precon.service.runtime import DataDirectory
from precon.service.server import ServerThread

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
TIMEOUT_S = 60
"""A page run that takes longer has hung: a sorted search that reads every match ran past 30 s once in a full
suite on two loaded cores (it takes under 2 s alone)."""
DASHBOARD_LISTINGS = 300


def reset_caches() -> None:
    """AppTest runs in this process: Streamlit's caches (the client among them) outlive one test."""
    st.cache_data.clear()
    st.cache_resource.clear()


def open_page(page: str, query: dict[str, str] | None = None) -> AppTest:
    """The app, on ``page`` (``"views/search.py"``), with these query parameters, after its first run."""
    app = AppTest.from_file(APP, default_timeout=TIMEOUT_S)
    for name, value in (query or {}).items():
        app.query_params[name] = value
    app.switch_page(page)
    app.run()
    return app


def page_text(app: AppTest) -> str:
    """Everything the page wrote as text, to search in."""
    parts = [m.value for m in app.markdown] + [c.value for c in app.caption] + [e.value for e in app.error]
    parts += [s.value for s in app.subheader] + [h.value for h in app.header] + [t.value for t in app.title]
    parts += [i.value for i in app.info] + [w.value for w in app.warning] + [s.value for s in app.success]
    return "\n".join(str(p) for p in parts)


def make_catalogue(folder: Path, listings: int, history_days: int = 0) -> Path:
    """``folder`` with its default catalogue made (and ``history_days`` of simulated market), before any dashboard
    or oracle opens it, so that both read the same one."""
    settings = ServiceSettings(dev=True, data_dir=folder, default_listings=listings, default_history_days=history_days)
    DataDirectory.open(settings, serving=False).close()
    return folder


@contextmanager
def embedded_over(data_dir: Path, listings: int, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """AppTest's dashboard on its embedded service over ``data_dir``, with fresh caches on entering and leaving."""
    for name in ("PRECON_API_URL", "PRECON_API_KEY", "PRECON_PRODUCT_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PRECON_SERVICE_DATA_DIR", str(data_dir))
    monkeypatch.setenv("PRECON_SERVICE_DEFAULT_LISTINGS", str(listings))
    monkeypatch.setenv("PRECON_CACHE_URL", "memory:")
    reset_caches()
    try:
        yield
    finally:
        reset_caches()


def history_fixtures(name: str, listings: int, days: int) -> tuple[Callable[..., Any], ...]:
    """A page test's three fixtures over a catalogue with ``days`` of simulated market (made once per module, in a
    folder named after ``name``): ``history_data``, ``oracle`` (the service's client over it, to check the page
    against) and ``dashboard`` (AppTest's dashboard on it). A module takes them as
    ``history_data, oracle, dashboard = history_fixtures(...)``."""

    @pytest.fixture(scope="module")
    def history_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
        return make_catalogue(tmp_path_factory.mktemp(name), listings, days)

    @pytest.fixture(scope="module")
    def oracle(history_data: Path) -> Iterator[Client]:
        with EmbeddedService(history_data, listings=listings) as service:
            yield service.client

    @pytest.fixture
    def dashboard(history_data: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
        with embedded_over(history_data, listings, monkeypatch):
            yield

    return history_data, oracle, dashboard


@pytest.fixture(scope="session")
def dashboard_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("dashboard-data")


@pytest.fixture
def embedded_dashboard(dashboard_data: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The dashboard on its embedded service, over a small catalogue of its own."""
    with embedded_over(dashboard_data, DASHBOARD_LISTINGS, monkeypatch):
        yield


def _failing_app(status: int) -> FastAPI:
    app = FastAPI()
    bodies = {
        403: {"requestId": "req-forbidden-1", "message": "Forbidden"},
        500: {"message": "Error: 500"},
    }

    @app.api_route("/{path:path}", methods=["GET", "POST", "DELETE"])
    def fail(path: str) -> JSONResponse:
        return JSONResponse(bodies[status], status_code=status, headers={"x-request-id": "req-failing-42"})

    return app


@contextmanager
def failing_service(status: int | None, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A remote service that answers every call with ``status`` (403 or 500), or none at all (``None``)."""
    monkeypatch.setenv("PRECON_API_KEY", "some-key")
    monkeypatch.setenv("PRECON_PRODUCT_ID", "some-product")
    monkeypatch.setenv("PRECON_CACHE_URL", "memory:")
    if status is None:
        import socket

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        url = f"http://127.0.0.1:{port}"
        monkeypatch.setenv("PRECON_API_URL", url)
        reset_caches()
        yield url
        reset_caches()
        return
    with ServerThread(_failing_app(status)) as server:
        monkeypatch.setenv("PRECON_API_URL", server.url)
        reset_caches()
        yield server.url
        reset_caches()


def assert_readable_failure(app: AppTest, *fragments: str) -> None:
    """The page failed as a user should see it: an error message saying what and why, and no exception."""
    assert not app.exception, [e.value for e in app.exception]
    shown = "\n".join(str(e.value) for e in app.error)
    assert shown, "no error message was shown"
    for fragment in fragments:
        assert fragment in shown, (fragment, shown)
    assert "Traceback" not in shown
