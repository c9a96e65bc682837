"""Sign-in, roles and the gate every page passes first (``app.py`` calls :func:`gate` before ``st.navigation``).

With the standard ``[auth]`` section in ``.streamlit/secrets.toml`` (Streamlit's native OpenID Connect sign-in,
through Authlib), every page asks for sign-in and shows nothing else before; whoever signs in is an admin or a
viewer (:mod:`precon.dashboard.access`: ``PRECON_DASHBOARD_ADMINS``, ``PRECON_DASHBOARD_USERS``). Without ``[auth]`` the
dashboard is open, as before, but only on loopback unless ``PRECON_DASHBOARD_ANONYMOUS=true``.

Whatever cannot go on (a provider that does not answer, a refused or unfinished sign-in, an expired session, an
address not on the list, a setting that cannot be read) is a page saying what happened and what to do. Every
admin action re-checks :func:`may_administer` itself, and every action on a saved search :func:`may_manage`: both
read ``st.user`` (the signed identity cookie, server-side) on each call, never the session's state.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import logging
import time
from collections.abc import Mapping
from typing import Any, NoReturn
from urllib.parse import urlparse

import httpx
import streamlit as st

from components.api import setting
from components.formatting import markdown_text
from precon.dashboard import access
from precon.dashboard.access import BadSetting, Person, Policy

LOG = logging.getLogger("precon.dashboard.auth")
PROVIDER_TIMEOUT_S = 5
PROVIDER_KEYS = ("issuer", "authorization_endpoint", "token_endpoint", "jwks_uri")
FORWARDED_HEADERS = ("X-Forwarded-For", "Forwarded", "X-Real-Ip")
SESSION_COOKIE = "_streamlit_session"
"""Streamlit's own session cookie, where Authlib keeps a sign-in's state until the provider sends the person back."""
ADMINS_ONLY = (
    "**Admins only.** This page is for the dashboard's admins; you are signed in as a viewer. Ask an admin to add "
    "your address to PRECON_DASHBOARD_ADMINS if you need it."
)


class Denied(PermissionError):
    """An action this person may not take; the message says so, for a person."""


# -- settings -------------------------------------------------------------------------------------------------


def auth_section() -> Mapping[str, Any]:
    """The ``[auth]`` section of the secrets (empty without one, or when the secrets cannot be read)."""
    try:
        section = st.secrets.get("auth")
    except Exception:  # no secrets file, or one that is not TOML: no sign-in configured
        return {}
    return section if isinstance(section, Mapping) else {}


def secrets_problem() -> str | None:
    """Why the secrets file cannot be read (None: it can, or there is none): it may hold [auth], so a page is not
    served as if it had none."""
    try:
        st.secrets.get("auth")
    except FileNotFoundError as error:  # Streamlit's "no secrets found", and its "error parsing secrets file"
        text = str(error)
        return text if "parsing" in text else None
    except Exception as error:
        return f"the secrets could not be read ({type(error).__name__})"
    return None


def auth_configured() -> bool:
    return bool(auth_section())


def policy() -> Policy:
    return Policy.from_settings(setting(access.ADMINS_SETTING), setting(access.USERS_SETTING))


def _user() -> dict[str, Any]:
    try:
        return dict(st.user.to_dict())
    except Exception:  # no script context (a bare call): nobody
        return {}


def _signed_in() -> Person | None:
    """Who is signed in and allowed now (None: nobody, or someone who may not use the dashboard)."""
    user = _user()
    if not user.get("is_logged_in") or user.get("email_verified") is False:
        return None
    email = str(user.get("email") or "")
    try:
        role = policy().role(email)
        expired = access.session_expired(user.get("iat"), access.session_hours(setting(access.SESSION_HOURS_SETTING)))
    except BadSetting:
        return None
    if role is None or expired:
        return None
    return Person(email, str(user.get("name") or email), role)


def acting() -> Person | None:
    """Who is acting now, read afresh from ``st.user``: None when sign-in is not configured (everyone may do
    everything); raises :class:`Denied` when it is and nobody allowed is signed in."""
    if not auth_configured():
        return None
    person = _signed_in()
    if person is None:
        raise Denied("**You are not signed in** (or your sign-in expired): sign in again, then try once more.")
    return person


def may_administer() -> bool:
    """Whether an admin action may run for whoever drives this run (re-checked by every such action)."""
    try:
        person = acting()
    except Denied:
        return False
    return person is None or person.is_admin


def require_admin() -> None:
    if not may_administer():
        LOG.warning("An admin action was refused for %s", _user().get("email") or "someone not signed in")
        raise Denied(ADMINS_ONLY)


def may_manage(saved_by: str | None) -> bool:
    """Whether whoever drives this run may see and manage a saved search saved by ``saved_by``."""
    try:
        return access.owns(acting(), saved_by)
    except Denied:
        return False


def saver() -> str | None:
    """The "saved by" of what is saved now: the signed-in address (None without sign-in: the form says who)."""
    person = acting()
    return person.email if person is not None else None


# -- the gate -------------------------------------------------------------------------------------------------


def _stop(title: str, text: str, kind: str = "error") -> NoReturn:
    st.title("Precon Explorer")
    st.subheader(title)
    getattr(st, kind)(text, icon="🔒" if kind != "error" else "⚠️")
    st.stop()
    raise AssertionError("st.stop() returned")  # pragma: no cover


def _proxied() -> bool:
    """Whether this session's request came through a proxy (which says whom it forwarded it for)."""
    try:
        headers = st.context.headers
        return any(headers.get(name) for name in FORWARDED_HEADERS)
    except Exception:  # no request to read (a bare run): not through a proxy
        return False


def _check_exposure() -> None:
    address = st.get_option("server.address")
    anonymous = access.is_true(setting(access.ANONYMOUS_SETTING))
    problem = access.exposure_problem(address, auth_configured=False, anonymous=anonymous, proxied=_proxied())
    if problem:
        LOG.error("Refusing to serve without sign-in beyond loopback: %s", problem)
        _stop("Not served: no sign-in is configured", markdown_text(problem))


@st.cache_data(ttl=30, show_spinner=False)
def provider_problem(metadata_url: str) -> str | None:
    """What is wrong with the provider's OpenID configuration, from here (None: it answers as it should)."""
    try:
        answer = httpx.get(metadata_url, timeout=PROVIDER_TIMEOUT_S, follow_redirects=True)
    except httpx.HTTPError as error:
        return f"does not answer ({type(error).__name__})"
    if answer.status_code != 200:
        return f"answered HTTP {answer.status_code} for its OpenID configuration"
    try:
        document = answer.json()
    except ValueError:
        return "answered with something that is not an OpenID configuration (not JSON)"
    missing = [key for key in PROVIDER_KEYS if not (isinstance(document, dict) and document.get(key))]
    if missing:
        return "answered with an OpenID configuration that lacks " + ", ".join(missing)
    return None


def _pending_sign_ins() -> set[str]:
    """The sign-ins started in this browser that the provider has not sent back yet (or refused): Authlib's state
    for each, kept in Streamlit's session cookie for an hour. Read only to say so."""
    value = st.context.cookies.get(SESSION_COOKIE) if st.context.cookies else None
    if not value:
        return set()
    try:
        payload = value.split(".", 1)[0]
        data = json.loads(base64.b64decode(payload + "=" * (-len(payload) % 4)))
    except (ValueError, TypeError):
        return set()
    now = time.time()
    return {
        key
        for key, entry in (data.items() if isinstance(data, dict) else [])
        if key.startswith("_state_") and isinstance(entry, dict) and float(entry.get("exp") or 0) > now
    }


@st.cache_resource(show_spinner=False)
def _superseded() -> set[str]:
    """Unfinished sign-ins that a later one in the same browser completed: not worth a word any more."""
    return set()


def unfinished_sign_in() -> bool:
    """Whether the last sign-in in this browser did not finish (the provider refused it, or it was cancelled)."""
    return bool(_pending_sign_ins() - _superseded())


def _sign_in_page(section: Mapping[str, Any]) -> NoReturn:
    metadata_url = str(section["server_metadata_url"])
    host = urlparse(metadata_url).netloc or metadata_url
    problem = provider_problem(metadata_url)
    if problem:
        LOG.error("The sign-in provider %s %s", host, problem)
        _stop(
            "Sign-in is unavailable",
            f"**The sign-in provider ({markdown_text(host)}) {markdown_text(problem)}.** Nothing is shown before "
            "sign-in. Try again in a few minutes; if it goes on, tell whoever runs this dashboard: the provider may "
            "be down, or the [auth] server_metadata_url in its secrets may be wrong.",
        )
    st.title("Precon Explorer")
    st.subheader("Sign in to continue")
    if unfinished_sign_in():
        st.warning(
            "**Your last sign-in did not finish:** the provider refused it, or it was cancelled. Sign in again "
            "with an account this dashboard allows; if it is refused again, ask an admin of this dashboard.",
            icon="🚫",
        )
    st.caption(
        f"This dashboard is for its team only: sign in with your account at {markdown_text(host)}. If you are "
        "sent back here after signing in there, the dashboard could not complete it: tell whoever runs it (its "
        "log says why)."
    )
    if st.button("Sign in", type="primary", icon=":material/login:", key="auth_sign_in"):
        st.login()
    st.stop()
    raise AssertionError("st.stop() returned")  # pragma: no cover


def _account_page(title: str, text: str, again: bool) -> NoReturn:
    st.title("Precon Explorer")
    st.subheader(title)
    st.error(text, icon="🔒")
    with st.container(horizontal=True):
        if again and st.button("Sign in again", type="primary", icon=":material/login:", key="auth_again"):
            st.login()
        if st.button("Sign out", icon=":material/logout:", key="auth_refused_out"):
            st.logout()
    st.stop()
    raise AssertionError("st.stop() returned")  # pragma: no cover


def _check_signed_in(user: dict[str, Any], pol: Policy, hours: float) -> Person:
    email = str(user.get("email") or "")
    who = markdown_text(email or "your account")
    if not email:
        _account_page(
            "Sign-in refused",
            "**The provider did not say your e-mail address**, which this dashboard needs to know who you are. Ask "
            "whoever runs it to request the `email` scope from the provider, then sign in again.",
            again=False,
        )
    if user.get("email_verified") is False:
        _account_page(
            "Sign-in refused",
            f"**The provider has not verified {who}.** Verify it with the provider, then sign in again.",
            again=True,
        )
    if access.session_expired(user.get("iat"), hours):
        _account_page(
            "Your session expired",
            f"**You signed in as {who} more than {hours:g} hours ago**; sessions last that long here. Sign in "
            "again to go on.",
            again=True,
        )
    role = pol.role(email)
    if role is None:
        LOG.warning("Sign-in refused for %s: not in %s", email, access.USERS_SETTING)
        _account_page(
            "Not allowed here",
            f"**{who} may not use this dashboard**: it is not on its list of users. Sign out and sign in with "
            "another account, or ask an admin of this dashboard to add you.",
            again=False,
        )
    return Person(email, str(user.get("name") or email), role)


def gate() -> Person | None:
    """Stops the run unless the page may be shown: who is signed in (None when sign-in is not configured)."""
    broken = secrets_problem()
    if broken:
        LOG.error("%s", broken)
        _stop("This dashboard's secrets cannot be read",
              f"{markdown_text(broken)}. Nothing is shown until it is fixed: tell whoever runs this dashboard "
              "(.streamlit/secrets.toml is TOML; docs/deploy.md shows one).")  # fmt: skip
    section = auth_section()
    if not section:
        _check_exposure()
        return None
    missing = access.missing_auth_keys(section)
    if missing:
        LOG.error("[auth] lacks %s", ", ".join(missing))
        _stop("Sign-in is not set up completely",
              f"The [auth] section of this dashboard's secrets lacks {', '.join(missing)}. Tell whoever runs it: "
              "docs/deploy.md says what each is.")  # fmt: skip
    if importlib.util.find_spec("authlib") is None:
        _stop("Sign-in cannot run here",
              "Sign-in needs Authlib, which is not installed here. Tell whoever runs this dashboard: install "
              "`streamlit[auth]` (make run installs it).")  # fmt: skip
    try:
        pol = policy()
        hours = access.session_hours(setting(access.SESSION_HOURS_SETTING))
    except BadSetting as error:
        LOG.error("%s", error)
        _stop("Sign-in is misconfigured", markdown_text(str(error)) + " Until then nobody can sign in.")
    user = _user()
    if not user.get("is_logged_in"):
        _sign_in_page(section)
    _superseded().update(_pending_sign_ins())  # signed in since: those attempts are past
    return _check_signed_in(user, pol, hours)


def render_account(person: Person | None) -> None:
    """Who is signed in, and "Sign out", at the top of the sidebar (nothing without sign-in)."""
    if person is None:
        return
    with st.sidebar:
        role = "admin" if person.is_admin else "viewer"
        name = "" if person.name == person.email else f"{markdown_text(person.name)} · "
        st.markdown(f"Signed in as {name}**{markdown_text(person.email)}** ({role})")
        if st.button("Sign out", icon=":material/logout:", key="auth_sign_out"):
            st.logout()


def admins_only() -> None:
    """The Admin section's pages for a viewer who follows a direct link."""
    st.title("Admins only")
    st.warning(ADMINS_ONLY, icon="🔒")
