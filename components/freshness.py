"""How fresh the history behind a page is (Changes, Market): the newest change's time, warned of when stale."""

from __future__ import annotations

from datetime import datetime

import streamlit as st

from components import api
from precon.client.errors import PreconError
from precon.dashboard.history_freshness import freshness_of


@st.cache_data(ttl=api.DATA_TTL_S, show_spinner=False, max_entries=20)
def _newest(identity: str, version: str, province: str) -> datetime | None:
    page = api.connection().client.changes(per_page=1, version=version, province=province)
    return page.results[0].at if page.results else None


def show() -> None:
    """A caption with the time of the history's newest change, or a warning when it is more than two days old.
    Nothing where the deployment keeps no history (the page says so) or cannot be asked."""
    if not api.offers("changes"):
        return
    version, province = api.scope()
    try:
        newest = _newest(api.connection().identity, version, province)
    except PreconError:
        return
    freshness = freshness_of(newest)
    warning = freshness.warning()
    if warning is not None:
        st.warning(warning, icon=":material/update_disabled:")
    else:
        st.caption(freshness.describe())
