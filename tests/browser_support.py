"""The dashboard in a real browser: ``streamlit run`` on a loopback port, driven by Playwright in Debian's chromium.

Without chromium the browser tests are skipped with a message saying how to get it; CI installs it and sets
``PRECON_REQUIRE_SYSTEM_TESTS``, which turns that skip into a failure.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from precon.client import Client
from precon.service.embedded import EmbeddedService
from tests.dashboard_support import make_catalogue
from tests.ports import free_port
from tests.waiting import START_TIMEOUT_S, stop_process

ROOT = Path(__file__).resolve().parent.parent
SCREENSHOTS = ROOT / "tests" / "screenshots"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
READY = '[data-testid="stApp"][data-test-script-state="notRunning"]'
PAGE_TIMEOUT_MS = 60_000
EXPECT_TIMEOUT_MS = 20_000
"""Playwright's assertions wait 5 s by default: too little for a rerun on a busy 2-core machine."""
BROWSER_LISTINGS = 300

playwright_api = pytest.importorskip("playwright.sync_api")


def chromium_path() -> str:
    path = shutil.which("chromium")
    if path is None:
        message = "chromium not installed: apt-get install -y chromium (browser tests skipped)"
        if os.environ.get("PRECON_REQUIRE_SYSTEM_TESTS"):
            pytest.fail(message + "; CI requires the browser tests")
        pytest.skip(message)
    return path


@dataclass
class Dashboard:
    url: str
    data_dir: Path


@pytest.fixture(scope="session")
def dashboard(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dashboard]:
    with dashboard_over_new_catalogue(tmp_path_factory.mktemp("browser-data"), BROWSER_LISTINGS) as started:
        yield started


@contextmanager
def dashboard_over_new_catalogue(
    folder: Path, listings: int, history_days: int = 0, *, args: Sequence[str] = (), **settings: str
) -> Iterator[Dashboard]:
    """:func:`running_dashboard` over a catalogue made first in ``folder`` (see ``make_catalogue``): an oracle
    opened on ``folder`` afterwards reads the very same listings and history."""
    chromium_path()
    make_catalogue(folder, listings, history_days)
    if history_days:
        settings = {"PRECON_SERVICE_DEFAULT_HISTORY_DAYS": str(history_days), **settings}
    with running_dashboard(folder, listings, args=args, **settings) as started:
        yield started


@contextmanager
def running_dashboard(
    data_dir: Path, listings: int, *, address: str = "127.0.0.1", args: Sequence[str] = (), **settings: str
) -> Iterator[Dashboard]:
    """``streamlit run app.py`` on a free port over ``data_dir`` (``settings``: more environment; ``args``: more
    options, such as ``--secrets.files``), listening on ``address``, until it answers its health check on loopback;
    stopped on leaving."""
    port = free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("PRECON_API", "PRECON_DASHBOARD"))},
        "PRECON_SERVICE_DATA_DIR": str(data_dir),
        "PRECON_SERVICE_DEFAULT_LISTINGS": str(listings),
        "PRECON_CACHE_URL": "memory:",
        **settings,
    }
    log = (data_dir / "streamlit.log").open("wb")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            str(ROOT / "app.py"),
            "--server.port",
            str(port),
            "--server.address",
            address,
            "--server.headless",
            "true",
            "--browser.gatherUsageStats",
            "false",
            *args,
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                if httpx.get(url + "/_stcore/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline or process.poll() is not None:
                raise RuntimeError(f"streamlit did not start: see {data_dir / 'streamlit.log'}")
            time.sleep(0.2)
        yield Dashboard(url, data_dir)
    finally:
        stop_process(process)
        log.close()


@pytest.fixture(scope="session")
def oracle(dashboard: Dashboard) -> Iterator[Client]:
    """A client of a service over the dashboard's own catalogue: what every number on a page is checked against."""
    with EmbeddedService(dashboard.data_dir, listings=BROWSER_LISTINGS) as service:
        yield service.client


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    executable = chromium_path()
    with playwright_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS, headless=True)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: object) -> Iterator[object]:
    with page_of(browser, 1400, 1000) as opened:
        yield opened


@contextmanager
def page_of(browser: object, width: int, height: int, expect_ms: int = EXPECT_TIMEOUT_MS) -> Iterator[Any]:
    """A page of its own in the session's chromium (one Playwright a process), on a screen of this size."""
    context = browser.new_context(viewport={"width": width, "height": height})  # type: ignore[attr-defined]
    opened = context.new_page()
    opened.set_default_timeout(PAGE_TIMEOUT_MS)
    from playwright.sync_api import expect

    expect.set_options(timeout=expect_ms)
    try:
        yield opened
    finally:
        context.close()


def settle(page: object, *texts: str) -> None:
    """Waits for the script to finish its run and for these texts to be on the page."""
    page.wait_for_timeout(300)  # type: ignore[attr-defined]
    page.wait_for_selector(READY, timeout=PAGE_TIMEOUT_MS)  # type: ignore[attr-defined]
    for text in texts:
        page.get_by_text(text).first.wait_for(timeout=PAGE_TIMEOUT_MS)  # type: ignore[attr-defined]
    page.wait_for_selector(READY, timeout=PAGE_TIMEOUT_MS)  # type: ignore[attr-defined]


def assert_no_exception(page: object) -> None:
    exceptions = page.locator('[data-testid="stException"]')  # type: ignore[attr-defined]
    assert exceptions.count() == 0, exceptions.first.inner_text()


def screenshot(page: object, name: str) -> Path:
    """A full-page picture: the viewport grown to the content, since Streamlit scrolls an inner container."""
    height = page.evaluate(  # type: ignore[attr-defined]
        """() => {
            const main = document.querySelector('[data-testid="stMain"]')
                || document.querySelector('[data-testid="stAppViewContainer"]');
            const side = document.querySelector('[data-testid="stSidebarContent"]');
            return Math.max(main ? main.scrollHeight : 0, side ? side.scrollHeight : 0, 900);
        }"""
    )
    page.set_viewport_size({"width": 1400, "height": min(int(height) + 40, 8000)})  # type: ignore[attr-defined]
    page.wait_for_timeout(800)  # type: ignore[attr-defined]
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)  # type: ignore[attr-defined]
    return path
