"""Saved searches in the dashboard: where their file is, which deployment a search belongs to, what a saved
search answers now, and the "Save this search" (Search, Map) and "Watch" (a listing) controls.

The store is :mod:`precon.dashboard.saved_searches`; this module adds Streamlit and the API. Every action runs in its
button's callback and leaves one outcome in the session, shown next to the control on the run that follows.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import streamlit as st

from components import api, auth
from components.formatting import markdown_text
from precon.client.errors import NotFound, PreconError
from precon.client.models import Listing
from precon.dashboard import listing_search
from precon.dashboard import saved_searches as store_module
from precon.dashboard.filter_state import FilterState
from precon.dashboard.saved_searches import (
    DB_FILE_NAME,
    Answer,
    Match,
    Refused,
    SavedSearch,
    SavedSearches,
    Unavailable,
)

DB_SETTING = "PRECON_DASHBOARD_DB"
MAX_ANSWER = 5000
"""Listings a saved search's answer keeps (the first, in the service's order): "what changed" follows these."""
ANSWER_FIELDS = ("listingId", "name", "startPrice", "sellingStatus")
LITE_VERSION = "v1-lite"
SAVED_PAGE = "views/saved.py"
OUTCOME = "saved_outcome"


@dataclass(frozen=True)
class Outcome:
    where: str
    kind: Literal["success", "warning", "error"]
    text: str


# -- the file and the deployment ----------------------------------------------------------------------------


def db_path() -> Path:
    """``PRECON_DASHBOARD_DB`` (environment or secrets), else ``dashboard.sqlite3`` in the embedded service's data
    directory (for a remote deployment, the data directory the embedded service would use)."""
    configured = api.setting(DB_SETTING)
    if configured:
        return Path(configured).expanduser()
    data_dir = api.connection().data_dir
    if data_dir is None:
        data_dir = Path(os.environ.get("PRECON_SERVICE_DATA_DIR") or "data")
    return data_dir / DB_FILE_NAME


def store() -> SavedSearches:
    return SavedSearches(db_path())


def owned(search_id: int) -> SavedSearch:
    """The saved search, if whoever drives this run may manage it (its saver, or an admin; anyone without
    sign-in); checked again by every action on it, whatever drove the callback."""
    saved = store().get(search_id)
    if not auth.may_manage(saved.saved_by):
        raise auth.Denied("**That saved search is not yours:** only whoever saved it and the admins manage it.")
    return saved


def visible(searches: list[SavedSearch]) -> list[SavedSearch]:
    """Those whoever drives this run sees: their own (an admin, or anyone without sign-in: all)."""
    return [saved for saved in searches if auth.may_manage(saved.saved_by)]


def deployment() -> str:
    """What a saved search is saved against: the embedded service's data directory, or the remote address and
    product (the embedded service's address is a new port at every start, so it is not the identity)."""
    current = api.connection()
    if current.kind == "embedded" and current.data_dir is not None:
        return f"embedded:{current.data_dir.resolve()}"
    return f"remote:{current.url}:{current.product_id or ''}"


def deployment_label(identity: str) -> str:
    kind, _, rest = identity.partition(":")
    if kind == "embedded":
        return f"the embedded service over {rest}"
    return f"the service at {rest.rpartition(':')[0] or rest}"


# -- what a saved search answers ----------------------------------------------------------------------------


class ScopedBackend:
    """The listing calls of :mod:`precon.dashboard.listing_search` in a saved search's own version and province;
    ``fresh`` answers past every cache (for an answer that is recorded)."""

    def __init__(self, where: tuple[str, str], fresh: bool = False) -> None:
        self.where, self.fresh = where, fresh

    def _call(self, operation: str, **arguments: Any) -> Any:
        if self.fresh:
            version, province = self.where
            client = api.connection().fresh_client
            return getattr(client, operation)(**arguments, version=version, province=province)
        return api.call_in(self.where, operation, **arguments)

    def search_listings(self, search: str | None = None, **arguments: Any) -> Any:
        return self._call("search_listings", search=search, **arguments)

    def multiple_listings(self, ids: Any, **arguments: Any) -> Any:
        return self._call("multiple_listings", ids=list(ids), **arguments)


@st.cache_data(ttl=600, show_spinner=False)
def _unit_filter_supported(identity: str, version: str, province: str) -> bool:
    return listing_search.unit_filter_supported(ScopedBackend((version, province)))


def unit_level(saved: SavedSearch) -> bool:
    return saved.version != LITE_VERSION


def history_at(where: tuple[str, str]) -> Any:
    """The deployment's newest history entry's time, where it offers ``changes`` (else None)."""
    if not api.offers("changes"):
        return None
    try:
        newest = api.connection().fresh_client.changes(per_page=1, version=where[0], province=where[1])
    except NotFound:
        api.lacks("changes")
        return None
    return newest.results[0].at if newest.results else None


def answer_now(saved: SavedSearch, *, fresh: bool = False) -> Answer:
    """What the saved search answers now (at most :data:`MAX_ANSWER` listings); ``fresh`` to record it."""
    where = (saved.version, saved.province)
    level = unit_level(saved)
    unit = saved.unit_filter(unit_level=level)
    supported = unit is None or _unit_filter_supported(api.connection().identity, *where)
    seen = history_at(where) if fresh else None
    found, total = listing_search.all_matching(
        ScopedBackend(where, fresh),
        saved.text,
        saved.listing_filter(unit_level=level),
        unit,
        ANSWER_FIELDS,
        unit_supported=supported,
        limit=MAX_ANSWER,
    )
    matches = {lst.id: Match(lst.name, lst.startPrice, lst.sellingStatus) for lst in found if lst.id}
    return Answer(store_module.now(), matches, total, seen)


def record_answer(saved: SavedSearch) -> Answer:
    """Opening it (or "mark as seen"): what it answers now becomes what the next "what changed" starts from."""
    answer = answer_now(saved, fresh=True)
    store().record_answer(saved.id, answer)
    return answer


# -- outcomes -----------------------------------------------------------------------------------------------


def say(where: str, kind: Literal["success", "warning", "error"], text: str) -> None:
    st.session_state[OUTCOME] = Outcome(where, kind, text)


def failure_text(error: BaseException) -> str:
    """A failure as one readable paragraph (the file's, a refused value's, or the API's)."""
    if isinstance(error, Refused | Unavailable):
        return markdown_text(str(error))
    if isinstance(error, auth.Denied):
        return str(error)
    if isinstance(error, PreconError):
        title, what_to_do = api.advice(error)
        request = f" Request id: `{error.request_id}`." if error.request_id else ""
        return f"**{title}.** {markdown_text(error.message)} {what_to_do}{request}"
    if isinstance(error, store_module.NotFound):
        return "That saved search is gone (someone deleted it meanwhile)."
    return f"**Something went wrong** ({type(error).__name__}). Nothing was saved; try again."


def show_outcome(where: str) -> None:
    outcome: Outcome | None = st.session_state.get(OUTCOME)
    if outcome is None or outcome.where != where:
        return
    st.session_state.pop(OUTCOME, None)
    icon = {"success": ":material/bookmark_added:", "warning": ":material/edit_note:", "error": "⚠️"}[outcome.kind]
    getattr(st, outcome.kind)(outcome.text, icon=icon)


# -- "Save this search" and "Watch" -------------------------------------------------------------------------


def _save(where: str, state: FilterState, listing_id: str | None = None) -> None:
    name = st.session_state.get(f"saved_name_{where}") or ""
    version, province = api.scope()
    try:
        who = auth.saver() or st.session_state.get(f"saved_who_{where}") or ""  # signed in: whoever it is
        store_module.clean_name(name)  # a refused name is said before anything is asked of the API
        store_module.clean_who(who)
        draft = SavedSearch(0, "", "", store_module.now(), state.to_params(), version, province, listing_id, "", None)
        answer = answer_now(draft, fresh=True)
        saved = store().save(
            name,
            state,
            deployment=deployment(),
            saved_by=who,
            version=version,
            province=province,
            listing_id=listing_id,
            answer=answer,
        )
    except (Refused, Unavailable, PreconError, auth.Denied) as error:
        say(where, "warning" if isinstance(error, Refused) else "error", failure_text(error))
        return
    except Exception as error:  # a failure is a message on the page, never a traceback
        say(where, "error", failure_text(error))
        return
    st.session_state[f"saved_name_{where}"] = ""
    say(where, "success", f"Saved **{markdown_text(saved.name)}** ({answer.total:,} matching now).")


def _who_input(where: str) -> None:
    """Who saves it: the signed-in address (shown, not asked), or, without sign-in, a name to give."""
    if auth.auth_configured():
        st.caption(f"Saved as {markdown_text(auth.saver() or '')}")
    else:
        st.text_input("Saved by (optional)", key=f"saved_who_{where}", placeholder="your name")


def save_control(state: FilterState, where: str) -> None:
    """The "Save this search" control: a name and who saved it, for the whole filter state in the sidebar's scope."""
    with st.popover("Save this search", icon=":material/bookmark_add:"):
        with st.form(f"saved_form_{where}", border=False):
            st.text_input("Name", key=f"saved_name_{where}", placeholder="e.g. Toronto condos under $800k")
            _who_input(where)
            st.caption(
                ("Your saved searches are seen by you and the admins." if auth.auth_configured() else
                 "Everyone using this dashboard sees its saved searches.")
                + " Open them on the Saved searches page to see what changed since."
            )  # fmt: skip
            st.form_submit_button(
                "Save", type="primary", icon=":material/bookmark:", on_click=_save, args=(where, state)
            )
        st.page_link(SAVED_PAGE, label="Saved searches", icon=":material/bookmarks:")
    show_outcome(where)


def _watches(listing_id: str) -> list[SavedSearch]:
    here = deployment()
    return [s for s in visible(store().all()) if s.listing_id == listing_id and s.deployment == here]


def watch_control(listing: Listing) -> None:
    """The "Watch" control: a saved search of this one listing (``listingId:<id>``), following its moves."""
    listing_id = listing.id or ""
    if not listing_id:
        return
    where = f"watch_{listing_id}"
    try:
        watching = _watches(listing_id)
    except Unavailable as error:
        st.caption(f"Watching is unavailable: {markdown_text(str(error))}")
        return
    if watching:
        st.page_link(SAVED_PAGE, label=f"Watched ({len(watching)}): see what changed", icon=":material/visibility:")
    else:
        st.session_state.setdefault(f"saved_name_{where}", (listing.name or listing_id)[: store_module.MAX_NAME_CHARS])
        with st.popover("Watch", icon=":material/visibility:"):
            with st.form(f"saved_form_{where}", border=False):
                st.text_input("Name", key=f"saved_name_{where}")
                _who_input(where)
                st.caption("A saved search of this one listing: its price and status moves show on Saved searches.")
                st.form_submit_button(
                    "Watch this listing", type="primary", on_click=_save, args=(where, FilterState(), listing_id)
                )
    show_outcome(where)
