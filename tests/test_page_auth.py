"""Sign-in and roles under AppTest, with ``st.user`` mocked: every failure a readable page and no data (a provider
down or misconfigured, an incomplete [auth], a list that cannot be read, an expired session, an address not on the
list); a viewer's crafted admin actions (widget state from an admin's page replayed as the viewer) change nothing in
the service; saved searches are their saver's; without sign-in, beyond loopback, nothing is served."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from streamlit.testing.v1 import AppTest

from components import api
from precon.client import Client
from precon.dashboard.filter_state import FilterState
from precon.dashboard.saved_searches import SavedSearches
from precon.service.config import DEV_API_KEY
from precon.service.server import ServerThread
from tests.dashboard_support import (  # noqa: F401
    APP,
    TIMEOUT_S,
    dashboard_data,
    embedded_dashboard,
    page_text,
    reset_caches,
)

ADMIN, VIEWER, OTHER = "boss@example.com", "ana@example.org", "bob@example.org"
CLIENT_SECRET = "client-secret-not-to-be-shown-1234"
WEBHOOKS, SAVED, HOME = "views/webhooks.py", "views/saved.py", "views/home.py"


def _provider_app(document: dict[str, Any] | None) -> FastAPI:
    app = FastAPI()

    @app.get("/.well-known/openid-configuration", response_model=None)
    def configuration() -> Any:
        from fastapi.responses import JSONResponse

        return JSONResponse(document or {"error": "nothing here"}, status_code=200 if document else 404)

    return app


@pytest.fixture(scope="module")
def provider() -> Iterator[str]:
    """An OpenID configuration that answers as it should (the sign-in page needs no more of it)."""
    document = {"issuer": "x", "authorization_endpoint": "x/a", "token_endpoint": "x/t", "jwks_uri": "x/j"}
    with ServerThread(_provider_app(document)) as server:
        yield f"{server.url}/.well-known/openid-configuration"


def auth(metadata_url: str, **changes: str) -> dict[str, str]:
    section = {
        "redirect_uri": "http://127.0.0.1:8501/oauth2callback",
        "cookie_secret": "cookie-secret-not-to-be-shown-5678",
        "client_id": "precon-dashboard",
        "client_secret": CLIENT_SECRET,
        "server_metadata_url": metadata_url,
    }
    return {k: v for k, v in {**section, **changes}.items() if v}


def signed_in(email: str, **claims: Any) -> dict[str, Any]:
    return {"is_logged_in": True, "email": email, "name": email.split("@")[0].title(), "iat": time.time(), **claims}


def open_as(page: str, user: dict[str, Any], section: dict[str, str], **settings: str) -> AppTest:
    app = AppTest.from_file(APP, default_timeout=TIMEOUT_S)
    app.secrets["auth"] = section
    app.secrets["PRECON_DASHBOARD_ADMINS"] = ADMIN
    for name, value in settings.items():
        app.secrets[name] = value
    app.user = user
    app.switch_page(page)
    app.run()
    assert not app.exception, [e.value for e in app.exception]
    return app


def said(app: AppTest) -> str:
    """The page's text without Markdown's escapes."""
    return page_text(app).replace("\\", "")


def assert_no_data(app: AppTest) -> None:
    text = said(app)
    assert "Reachable" not in text and "Listings by province" not in text, text
    assert CLIENT_SECRET not in text


@pytest.fixture
def dashboard(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Client]:
    """The dashboard on its embedded service, no subscription yet, a saved searches file of its own; a client of
    the same service past every cache, to see what the pages did."""
    request.getfixturevalue("embedded_dashboard")
    monkeypatch.setenv("PRECON_DASHBOARD_DB", str(tmp_path / "dashboard.sqlite3"))
    for name in ("PRECON_DASHBOARD_ADMINS", "PRECON_DASHBOARD_USERS", "PRECON_DASHBOARD_ANONYMOUS"):
        monkeypatch.delenv(name, raising=False)
    reset_caches()
    with Client(api.connection().url, DEV_API_KEY, cache=False, max_retries=0) as client:
        for subscription in client.list_webhooks():
            client.delete_webhook(subscription.id)
        yield client


# -- readable refusals, and no data before sign-in ------------------------------------------------------------


def test_signed_out_sees_only_the_sign_in(dashboard: Client, provider: str) -> None:
    for page in (HOME, WEBHOOKS, "views/search.py"):
        app = open_as(page, {}, auth(provider))
        assert "Sign in to continue" in said(app)
        assert [b.label for b in app.button] == ["Sign in"]
        assert_no_data(app)


@pytest.mark.parametrize(
    ("document", "expected"),
    [(None, "answered HTTP 404"), ({"issuer": "x"}, "lacks authorization_endpoint, token_endpoint, jwks_uri")],
)
def test_a_misconfigured_provider_is_said(dashboard: Client, document: Any, expected: str) -> None:
    with ServerThread(_provider_app(document)) as server:
        app = open_as(HOME, {}, auth(f"{server.url}/.well-known/openid-configuration"))
    text = said(app)
    assert "Sign-in is unavailable" in text and expected in text and "Try again" in text, text
    assert not app.button
    assert_no_data(app)


def test_a_provider_that_is_down_is_said(dashboard: Client) -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    app = open_as(HOME, {}, auth(f"http://127.0.0.1:{port}/.well-known/openid-configuration"))
    text = said(app)
    assert "Sign-in is unavailable" in text and "does not answer (ConnectError)" in text, text
    assert_no_data(app)


def test_an_incomplete_auth_section_and_a_bad_list_are_said(dashboard: Client, provider: str) -> None:
    app = open_as(HOME, signed_in(VIEWER), auth(provider, client_secret="", cookie_secret=""))
    text = said(app)
    assert "Sign-in is not set up completely" in text and "cookie_secret, client_secret" in text, text
    assert_no_data(app)
    app = open_as(HOME, signed_in(VIEWER), auth(provider), PRECON_DASHBOARD_USERS="@example.org, ana")
    text = said(app)
    assert "Sign-in is misconfigured" in text and "PRECON_DASHBOARD_USERS" in text and "“ana”" in text, text
    assert_no_data(app)


def test_an_expired_session_an_unlisted_and_an_unverified_address(dashboard: Client, provider: str) -> None:
    app = open_as(HOME, signed_in(VIEWER, iat=time.time() - 13 * 3600), auth(provider))
    assert "Your session expired" in said(app) and "more than 12 hours ago" in said(app)
    assert {b.label for b in app.button} == {"Sign in again", "Sign out"}
    assert_no_data(app)
    app = open_as(HOME, signed_in("stranger@elsewhere.net"), auth(provider), PRECON_DASHBOARD_USERS="@example.org")
    assert "Not allowed here" in said(app) and "not on its list of users" in said(app)
    assert_no_data(app)
    app = open_as(HOME, signed_in(VIEWER, email_verified=False), auth(provider))
    assert "has not verified" in said(app)
    assert_no_data(app)


def test_roles_in_the_navigation_and_the_sidebar(dashboard: Client, provider: str) -> None:
    viewer = open_as(WEBHOOKS, signed_in(VIEWER), auth(provider))
    assert "Admins only" in said(viewer) and "Subscriptions" not in said(viewer)
    assert f"Signed in as Ana · **{VIEWER}** (viewer)" in said(viewer)
    admin = open_as(WEBHOOKS, signed_in(ADMIN), auth(provider))
    assert "Subscriptions" in said(admin) and "(admin)" in said(admin)


# -- a viewer's crafted admin actions --------------------------------------------------------------------------


def test_a_viewer_replaying_an_admins_webhook_actions_changes_nothing(dashboard: Client, provider: str) -> None:
    existing = dashboard.create_webhook("http://127.0.0.1:9/kept", "profile.updated", "live")
    app = open_as(WEBHOOKS, signed_in(ADMIN), auth(provider))
    app.user = signed_in(VIEWER)  # the admin's widgets, now driven by a viewer
    app.text_input(key="wh_url").set_value("http://127.0.0.1:9/crafted")
    [create] = [b for b in app.button if b.label == "Create subscription"]
    create.click().run()
    assert not app.exception
    assert [s.id for s in dashboard.list_webhooks()] == [existing.id], "nothing created"
    app.user = signed_in(ADMIN)
    app.run()  # the admin's navigation again, with the Webhooks page in it
    app.switch_page(WEBHOOKS).run()
    app.selectbox(key="wh_delete_pick").set_value(existing.id)
    app.run()
    app.checkbox(key="wh_delete_confirm").check()
    app.run()
    app.user = signed_in(VIEWER)
    app.button(key="wh_delete_button").click().run()
    assert not app.exception
    assert [s.id for s in dashboard.list_webhooks()] == [existing.id], "nothing deleted"
    app.user = signed_in(ADMIN)
    app.run()
    app.switch_page(WEBHOOKS).run()
    app.selectbox(key="wh_profile_Builders").select_index(0).run()
    app.user = signed_in(VIEWER)
    app.button(key="wh_trigger_button").click().run()
    assert not app.exception
    assert dashboard.webhook_deliveries().total == 0, "nothing triggered"


# -- saved searches are their saver's -------------------------------------------------------------------------


def test_saved_searches_belong_to_whoever_saved_them(dashboard: Client, provider: str) -> None:
    store = SavedSearches(Path(api.setting("PRECON_DASHBOARD_DB") or ""))
    mine = store.save("Ana's condos", FilterState(), deployment="d", saved_by=VIEWER)
    theirs = store.save("Bob's lofts", FilterState(), deployment="d", saved_by=OTHER)
    viewer = open_as(SAVED, signed_in(VIEWER), auth(provider))
    assert "Ana's condos" in said(viewer) and "Bob's lofts" not in said(viewer)
    admin = open_as(SAVED, signed_in(ADMIN), auth(provider))
    assert "Ana's condos" in said(admin) and "Bob's lofts" in said(admin)
    admin.user = signed_in(VIEWER)  # Bob's delete button, pressed as Ana
    admin.button(key=f"saved_delete_{theirs.id}").click().run()
    assert not admin.exception
    assert {s.id for s in store.all()} == {mine.id, theirs.id}, "nothing deleted"
    admin.user = signed_in(ADMIN)
    admin.run()
    admin.switch_page(SAVED).run()
    admin.button(key=f"saved_delete_{theirs.id}").click().run()
    assert {s.id for s in store.all()} == {mine.id}, "an admin manages everyone's"


def test_the_saver_is_the_signed_in_address(dashboard: Client, provider: str) -> None:
    app = open_as("views/search.py", signed_in(VIEWER), auth(provider))
    assert not [t for t in app.text_input if t.key == "saved_who_search"], "no name to give when signed in"
    assert f"Saved as {VIEWER}" in said(app)
    app.text_input(key="saved_name_search").set_value("All of it")
    [save] = [b for b in app.button if b.label == "Save"]
    save.click().run()
    assert not app.exception
    store = SavedSearches(Path(api.setting("PRECON_DASHBOARD_DB") or ""))
    assert [(s.name, s.saved_by) for s in store.all()] == [("All of it", VIEWER)]


# -- without sign-in ------------------------------------------------------------------------------------------


def test_without_sign_in_beyond_loopback_nothing_is_served(dashboard: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    from streamlit import config

    before = config.get_option("server.address")
    config.set_option("server.address", "0.0.0.0")
    try:
        app = AppTest.from_file(APP, default_timeout=TIMEOUT_S)
        app.switch_page(HOME)
        app.run()
        text = said(app)
        assert "Not served: no sign-in is configured" in text and "PRECON_DASHBOARD_ANONYMOUS=true" in text, text
        assert_no_data(app)
        monkeypatch.setenv("PRECON_DASHBOARD_ANONYMOUS", "true")
        app.run()
        assert "Reachable · 300 listings" in said(app)
    finally:
        config.set_option("server.address", before)


def test_a_secrets_file_that_cannot_be_read_is_said(monkeypatch: pytest.MonkeyPatch) -> None:
    """It may hold [auth]: the dashboard does not serve as if it had none."""
    from streamlit.errors import StreamlitSecretNotFoundError

    from components import auth

    class Broken:
        def get(self, name: str) -> Any:
            raise StreamlitSecretNotFoundError("Error parsing secrets file at /x/secrets.toml: Expected ']' (line 1)")

    monkeypatch.setattr(auth.st, "secrets", Broken())
    assert "Error parsing secrets file at /x/secrets.toml" in (auth.secrets_problem() or "")
    assert auth.auth_section() == {}

    class Missing:
        def get(self, name: str) -> Any:
            raise StreamlitSecretNotFoundError("No secrets found. Valid paths for a secrets.toml file are: /x")

    monkeypatch.setattr(auth.st, "secrets", Missing())
    assert auth.secrets_problem() is None
