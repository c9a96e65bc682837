"""The sidebar every page shares: where the data comes from, and the version and province it is read in."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from components.api import DATA_TTL_S, Connection, scope
from precon.client.errors import PreconError
from precon.client.models import PROVINCES, VERSIONS

PROVINCE_LABELS = {"all": "All provinces", **PROVINCES}
VERSION_LABELS = {"v1": "v1 (full)", "v1-lite": "v1-lite", "v1-sandbox": "v1-sandbox (sample data)"}


def _chosen(name: str, allowed: list[str], default: str) -> str:
    """The value in the URL, else this session's, else the default; a bad URL value falls back quietly."""
    value = st.query_params.get(name) or st.session_state.get(name) or default
    return value if value in allowed else default


@st.cache_data(ttl=30, show_spinner=False)
def _reachable(identity: str, version: str, province: str) -> tuple[bool, str]:
    from components.api import connection

    try:
        page = connection().client.search_listings(per_page=0, version=version, province=province)
    except PreconError as error:
        return False, error.message
    return True, f"{page.total:,} listings"


def render_sidebar(connection: Callable[[], Connection]) -> None:
    provinces = list(PROVINCE_LABELS)
    versions = list(VERSIONS)
    st.session_state["province"] = _chosen("province", provinces, "all")
    st.session_state["version"] = _chosen("version", versions, "v1")
    with st.sidebar:
        try:
            current = connection()
        except Exception as error:
            st.error(f"The listings service could not start: {error}")
            st.stop()
        version = st.selectbox(
            "API version",
            versions,
            index=versions.index(st.session_state["version"]),
            format_func=VERSION_LABELS.get,
            key="_version_choice",
        )
        province = st.selectbox(
            "Province",
            provinces,
            index=provinces.index(st.session_state["province"]),
            format_func=PROVINCE_LABELS.get,
            key="_province_choice",
        )
        for name, value, default in (("version", version, "v1"), ("province", province, "all")):
            st.session_state[name] = value
            if value == default:
                st.query_params.pop(name, None)
            else:
                st.query_params[name] = value
        ok, detail = _reachable(current.identity, *scope())
        where = "Embedded service (local catalogue)" if current.kind == "embedded" else "Remote service"
        st.caption("Connection")
        st.markdown(f"**{where}**  \n`{current.url}`")
        if ok:
            st.success(f"Reachable · {detail}", icon="🟢")
        else:
            st.error(f"Not reachable: {detail}", icon="🔴")
        st.caption(f"Answers are cached for {DATA_TTL_S} s.")
