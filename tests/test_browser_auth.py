"""Sign-in in a real browser against a real OpenID Connect provider on loopback (oidc-provider-mock): a viewer
searches and opens a listing but meets "admins only" at the Webhooks address and no Admin section; signed out,
nothing shows; an admin creates and deletes a subscription; a refused sign-in and an address not on the list are
said; the OIDC and API secrets never reach the browser. And the dashboard refuses to serve beyond loopback without
sign-in."""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from precon.client import Client
from tests.browser_support import (
    Dashboard,
    assert_no_exception,
    chromium_path,
    dashboard_over_new_catalogue,
    page_of,
    running_dashboard,
    screenshot,
    settle,
)
from tests.dashboard_support import make_catalogue

LISTINGS = 120
ADMIN, VIEWER, STRANGER = "boss@example.com", "ana@example.org", "stranger@elsewhere.net"
CLIENT_SECRET = "oidc-client-secret-never-in-the-browser-7f3a"
COOKIE_SECRET = "cookie-secret-never-in-the-browser-0c9d41e2b7"
API_KEY = "precon-dev-key"


@pytest.fixture(scope="module")
def provider() -> Iterator[str]:
    """oidc-provider-mock on a loopback port: its OpenID configuration's address."""
    import werkzeug.serving
    from oidc_provider_mock import app

    server = werkzeug.serving.make_server("127.0.0.1", 0, app(), threaded=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/.well-known/openid-configuration"
    finally:
        server.shutdown()
        thread.join(timeout=10)


def write_secrets(folder: Path, metadata_url: str) -> Path:
    path = folder / "secrets.toml"
    path.write_text(
        f'PRECON_DASHBOARD_ADMINS = "{ADMIN}"\n'
        'PRECON_DASHBOARD_USERS = "@example.org"\n'
        "[auth]\n"
        'redirect_uri = "http://127.0.0.1:{port}/oauth2callback"\n'
        f'cookie_secret = "{COOKIE_SECRET}"\n'
        'client_id = "precon-dashboard"\n'
        f'client_secret = "{CLIENT_SECRET}"\n'
        f'server_metadata_url = "{metadata_url}"\n'
    )
    return path


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory, provider: str) -> Iterator[Dashboard]:
    secrets = write_secrets(tmp_path_factory.mktemp("auth-secrets"), provider)
    folder = tmp_path_factory.mktemp("auth-data")
    with dashboard_over_new_catalogue(folder, LISTINGS, args=["--secrets.files", str(secrets)]) as started:
        yield started


@pytest.fixture
def watched(browser: object) -> Iterator[tuple[Any, list[bytes]]]:
    """A page whose every websocket frame and response body from the dashboard is kept, to search for secrets."""
    seen: list[bytes] = []
    with page_of(browser, 1400, 1000) as page:

        def frames(socket: Any) -> None:
            socket.on("framereceived", lambda data: seen.append(data if isinstance(data, bytes) else data.encode()))

        def bodies(response: Any) -> None:
            if response.url.startswith("http://127.0.0.1") and response.status < 300:
                with contextlib.suppress(Exception):  # a redirect or a streamed body has none to read
                    seen.append(response.body())

        page.on("websocket", frames)
        page.on("response", bodies)
        yield page, seen


def sign_in(page: Any, dashboard: Dashboard, email: str, deny: bool = False) -> None:
    page.goto(dashboard.url)
    settle(page, "Sign in to continue")
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile(r"/oauth2/authorize"))
    if deny:
        page.get_by_role("button", name="Deny").click()
    else:
        page.locator('input[name="sub"]').fill(email)
        page.get_by_role("button", name="Authorize").click()
    page.wait_for_url(re.compile(re.escape(dashboard.url) + r"/?(\?.*)?$"))


def sign_out(page: Any, dashboard: Dashboard) -> None:
    page.get_by_role("button", name="Sign out").first.click()
    page.wait_for_url(re.compile(r"/oauth2/end_session"))  # the provider's own sign-out, which asks to confirm
    page.locator("form button, form input[type=submit]").first.click()
    page.wait_for_url(re.compile("^" + re.escape(dashboard.url) + r"/?$"))
    settle(page, "Sign in to continue")


def nav_text(page: Any) -> str:
    navigation = page.locator('[data-testid="stSidebarNav"]')
    return navigation.inner_text() if navigation.count() else ""


def assert_nothing_shown(page: Any) -> None:
    assert nav_text(page) == "", "no navigation before sign-in"
    text = page.locator('[data-testid="stApp"]').inner_text()
    assert "Reachable" not in text and "listings" not in text.lower(), text


def test_a_viewer_an_admin_and_signing_out(signed: Dashboard, watched: tuple[Any, list[bytes]]) -> None:
    page, seen = watched
    page.goto(signed.url)
    settle(page, "Sign in to continue")
    assert_nothing_shown(page)
    page.goto(f"{signed.url}/search?type=Condo")
    settle(page, "Sign in to continue")
    assert_nothing_shown(page)

    sign_in(page, signed, VIEWER)
    settle(page, "Listings by province", f"Signed in as {VIEWER}")
    assert "viewer" in page.locator('[data-testid="stSidebar"]').inner_text()
    assert "Search" in nav_text(page) and "Webhooks" not in nav_text(page) and "Admin" not in nav_text(page)
    page.goto(f"{signed.url}/search?type=Condo")
    settle(page, "results in")
    table = page.locator('[data-testid="stDataFrame"]').first
    table.scroll_into_view_if_needed()
    page.wait_for_timeout(1000)  # the grid draws on a canvas a moment after it is placed
    box = table.bounding_box()
    page.mouse.click(box["x"] + 15, box["y"] + 55)  # the first row's selection cell: its listing
    expect(page).to_have_url(re.compile(r"/listing\?id="))
    settle(page, "Floor plans")
    assert_no_exception(page)
    page.goto(f"{signed.url}/webhooks")
    settle(page, "Admins only")
    assert page.get_by_text("Subscriptions").count() == 0
    assert "Admin" not in nav_text(page)
    screenshot(page, "auth-viewer-admins-only")

    sign_out(page, signed)
    assert_nothing_shown(page)
    page.goto(f"{signed.url}/webhooks")
    settle(page, "Sign in to continue")
    assert_nothing_shown(page)

    sign_in(page, signed, ADMIN)
    settle(page, f"Signed in as {ADMIN}")
    assert "Webhooks" in nav_text(page)
    page.goto(f"{signed.url}/webhooks")
    settle(page, "Subscriptions", "Reachable")
    service_url = page.get_by_text(re.compile(r"^http://127\.0\.0\.1:\d+$")).first.inner_text().strip()
    target = "http://127.0.0.1:9/auth-hook"
    page.get_by_role("textbox", name="Target URL").fill(target)
    page.get_by_role("button", name=re.compile("Create subscription")).click()
    settle(page, "Subscribed")
    with Client(service_url, API_KEY, cache=False) as client:
        [subscription] = [s for s in client.list_webhooks() if s.targetUrl == target]
    page.locator('[data-testid="stSelectbox"]').filter(has_text="Subscription").first.click()
    page.get_by_role("option").filter(has_text=target).first.click()
    page.get_by_text(re.compile("I understand deliveries stop")).click()
    page.get_by_role("button", name=re.compile("Delete subscription")).click()
    settle(page, "Deleted subscription")
    with Client(service_url, API_KEY, cache=False) as client:
        assert all(s.id != subscription.id for s in client.list_webhooks())
    assert_no_exception(page)
    screenshot(page, "auth-admin-webhooks")

    everything = b"\n".join(seen)
    assert everything, "frames were recorded"
    for secret in (CLIENT_SECRET, COOKIE_SECRET, API_KEY):
        assert secret.encode() not in everything, f"{secret} reached the browser"


def test_a_refused_sign_in_and_an_address_not_on_the_list(signed: Dashboard, page: Any) -> None:
    sign_in(page, signed, VIEWER, deny=True)
    settle(page, "Sign in to continue", "Your last sign-in did not finish")
    assert_nothing_shown(page)
    screenshot(page, "auth-refused")

    sign_in(page, signed, STRANGER)
    settle(page, "Not allowed here", f"{STRANGER} may not use this dashboard")
    assert_nothing_shown(page)
    assert_no_exception(page)
    screenshot(page, "auth-not-on-the-list")
    sign_out(page, signed)
    assert page.get_by_text("Your last sign-in did not finish").count() == 0, "a sign-in finished since"


@pytest.fixture(scope="module")
def unsigned_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    chromium_path()
    return make_catalogue(tmp_path_factory.mktemp("exposed-data"), LISTINGS)


def test_no_sign_in_beyond_loopback_is_refused_unless_meant(unsigned_data: Path, page: Any) -> None:
    with running_dashboard(unsigned_data, LISTINGS, address="0.0.0.0") as exposed:
        page.goto(exposed.url)
        settle(page, "Not served: no sign-in is configured", "PRECON_DASHBOARD_ANONYMOUS=true")
        assert_nothing_shown(page)
        assert_no_exception(page)
        screenshot(page, "auth-refused-beyond-loopback")
    log = (unsigned_data / "streamlit.log").read_text()
    assert "Refusing to serve without sign-in beyond loopback" in log
    with running_dashboard(unsigned_data, LISTINGS) as behind_a_proxy:
        page.set_extra_http_headers({"X-Forwarded-For": "203.0.113.9"})  # as a proxy in front of loopback says
        page.goto(behind_a_proxy.url)
        settle(page, "Not served: no sign-in is configured", "through a proxy")
        assert_nothing_shown(page)
        page.set_extra_http_headers({})
    with running_dashboard(unsigned_data, LISTINGS, address="0.0.0.0", PRECON_DASHBOARD_ANONYMOUS="true") as meant:
        page.goto(meant.url)
        settle(page, "Listings by province", "Reachable")
        assert_no_exception(page)


def test_a_secrets_file_that_cannot_be_read_serves_nothing(unsigned_data: Path, page: Any, tmp_path: Path) -> None:
    broken = tmp_path / "secrets.toml"
    broken.write_text(f'[auth\nclient_secret = "{CLIENT_SECRET}"\n')
    with running_dashboard(unsigned_data, LISTINGS, args=["--secrets.files", str(broken)]) as started:
        page.goto(started.url)
        settle(page, "This dashboard's secrets cannot be read", "Error parsing secrets file")
        assert_nothing_shown(page)
        assert CLIENT_SECRET not in page.locator('[data-testid="stApp"]').inner_text()
        assert_no_exception(page)
