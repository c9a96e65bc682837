"""The compare list ("Add to compare", "Compare selected"): up to four listing ids that outlive a reload and a listing
opened by its address.

It is kept in three places: the session (the run's truth), the address (``compare=A,B,C``, written where the list
changes, read on every page by :func:`sync`: a copied link carries it) and the dashboard's own store
(:class:`precon.dashboard.compare_lists.CompareLists`, beside the saved searches) for its owner: the signed-in person,
or without sign-in this browser, known by a cookie the dashboard sets the first time the browser keeps a list. A new
session takes the address's list if it names one, else the owner's stored one.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence

import streamlit as st

from components import auth
from components import saved as sv
from components.compare_table import parse_ids
from precon.dashboard.compare_lists import CompareLists
from precon.dashboard.saved_searches import Unavailable

COMPARE_LIST = "compare_ids"
PARAM = "compare"
NOTICE = "compare_notice"
BROWSER_COOKIE = "precon_browser"
BROWSER_ID = "compare_browser_id"
COOKIE_SET = "compare_cookie_set"
BROWSER_PATTERN = re.compile(r"^[0-9a-f]{32}$")
COOKIE_DAYS = 365


def _browser_cookie() -> str | None:
    try:
        value = st.context.cookies.get(BROWSER_COOKIE)
    except Exception:  # no request behind this run (a test's): no cookie
        return None
    return value if isinstance(value, str) and BROWSER_PATTERN.match(value) else None


def owner() -> str:
    """Whose list this is: ``person:<address>`` when signed in, else ``browser:<id>`` (the cookie's, or one made for
    this session and set as the cookie by :func:`sync`)."""
    email = auth.saver()
    if email:
        return f"person:{email}"
    browser = _browser_cookie() or st.session_state.get(BROWSER_ID)
    if browser is None:
        browser = st.session_state[BROWSER_ID] = uuid.uuid4().hex
    return f"browser:{browser}"


def _store() -> CompareLists:
    return CompareLists(sv.db_path())


def current() -> list[str]:
    """The list: this session's; on a session's first run, the address's (``compare=``) or else the stored one."""
    if COMPARE_LIST in st.session_state:
        return list(st.session_state[COMPARE_LIST] or [])
    if PARAM in st.query_params:
        ids, _ = parse_ids(st.query_params.get(PARAM))
        _keep(ids)
    else:
        try:
            ids = _store().get(owner())
        except Unavailable as error:
            st.session_state[NOTICE] = str(error)
            ids = []
    st.session_state[COMPARE_LIST] = ids
    return ids


def _keep(ids: Sequence[str]) -> None:
    try:
        _store().put(owner(), ids)
    except Unavailable as error:
        st.session_state[NOTICE] = f"{error} It is kept for this visit only."


def change(ids: Sequence[str]) -> None:
    """The list becomes ``ids``: in the session, the address and the store."""
    st.session_state[COMPARE_LIST] = list(ids)
    if ids:
        st.query_params[PARAM] = ",".join(ids)
    else:
        st.query_params.pop(PARAM, None)
    _keep(ids)


def sync() -> None:
    """Every page, every run: the list read (so a page opened with ``compare=`` adopts it), and the browser's cookie
    set once when a list is kept without sign-in and the browser has none yet."""
    ids = current()
    if not ids or auth.saver() or _browser_cookie() or st.session_state.get(COOKIE_SET):
        return
    browser = owner().partition(":")[2]
    st.session_state[COOKIE_SET] = True
    with st.sidebar:
        st.html(
            f"<script>document.cookie = '{BROWSER_COOKIE}={browser}; path=/; max-age={COOKIE_DAYS * 86400}; "
            "SameSite=Lax';</script>",
            unsafe_allow_javascript=True,
        )
