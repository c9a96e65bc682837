"""Saved searches: every search saved on this dashboard (name, who, when, how many match now), each with what
changed since it was last opened: listings new to it, gone from it, and its listings' price and status moves (the
deployment's answer now against the one recorded when it was last opened, which works against any deployment),
and where the deployment keeps history (``changes``), the entries saying exactly what moved and when.

"Open" shows it on Search with its saved filters, version and province; opening it, or "Mark as seen", records what
it answers now, where the next "what changed" starts. Rename, delete, and "Alert me" (filtered webhooks).
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from components import api, auth, filter_chips, saved_alerts
from components import saved as sv
from components.formatting import markdown_text, plural
from components.webhook_log import when
from precon.client.errors import BadRequest, NotFound, PreconError
from precon.client.models import PROVINCES
from precon.dashboard import labels
from precon.dashboard import saved_searches as store_module
from precon.dashboard.saved_searches import Alert, Answer, SavedSearch, Unavailable, WhatChanged

HISTORY_ROWS = 200
FRESH_TTL_S = 10
"""A rerun within this long reuses the answers; past it the page asks again, past every cache (a catalogue that
moved a minute ago shows it)."""
OPENING = "saved_opening"
SEARCH_PAGE = "views/search.py"
CHANGE_COLUMNS = ["When", "Listing id", "About", "Plan", "Unit", "Field", "Change", "From", "To"]
"""The history table's columns, in people's words (scope, field and change named by :mod:`precon.dashboard.labels`)."""
DIFF_COLUMNS = ["What", "Listing id", "Name", "Before", "Now"]


# -- actions (callbacks) --------------------------------------------------------------------------------------


def _act(where: str, action: Any, done: str) -> bool:
    try:
        action()
    except Exception as error:  # every failure is a message next to the saved search, never a traceback
        sv.say(where, "error", sv.failure_text(error))
        return False
    if done:
        sv.say(where, "success", done)
    return True


def open_search(search_id: int) -> None:
    opened: dict[str, Any] = {}

    def both() -> None:
        saved = sv.owned(search_id)
        sv.record_answer(saved)
        opened["address"] = saved.address()

    if _act(f"card_{search_id}", both, ""):
        st.session_state[OPENING] = opened["address"]


def mark_seen(search_id: int) -> None:
    _act(f"card_{search_id}", lambda: sv.record_answer(sv.owned(search_id)), "Marked as seen.")


def rename(search_id: int) -> None:
    name = st.session_state.get(f"saved_rename_{search_id}") or ""
    _act(f"card_{search_id}", lambda: sv.store().rename(sv.owned(search_id).id, name), "Renamed.")


def delete(search_id: int) -> None:
    def both() -> None:
        sv.owned(search_id)  # whoever drives this may: their own, or an admin
        saved_alerts.remove_alerts(search_id)  # its subscriptions first: none is left sending for a search gone
        sv.store().delete(search_id)

    _act("page", both, "Deleted the saved search.")


# -- what changed ---------------------------------------------------------------------------------------------


@st.cache_data(ttl=FRESH_TTL_S, show_spinner=False, max_entries=200)
def _answer(identity: str, saved: SavedSearch) -> Answer:
    return sv.answer_now(saved, fresh=True)


@st.cache_data(ttl=FRESH_TTL_S, show_spinner=False, max_entries=200)
def _history(identity: str, saved: SavedSearch) -> Any:
    level = sv.unit_level(saved)
    return api.connection().fresh_client.changes(
        since=store_module.iso(saved.changes_since), filter=saved.listing_filter(unit_level=level),
        unit_filter=saved.unit_filter(unit_level=level), search=saved.text or None, per_page=HISTORY_ROWS,
        version=saved.version, province=saved.province,
    )  # fmt: skip


def _money(value: Any) -> str:
    return f"${value:,.0f}" if isinstance(value, int | float) else "none"


def changed_frame(changed: WhatChanged) -> pd.DataFrame:
    rows = [["New match", key, m.name, "", ""] for key, m in changed.new]
    rows += [["Match gone", key, m.name, "", ""] for key, m in changed.gone]
    rows += [["Price", m.listing_id, m.name, _money(m.before), _money(m.after)] for m in changed.prices]
    rows += [["Selling status", m.listing_id, m.name, m.before or "", m.after or ""] for m in changed.statuses]
    return pd.DataFrame([[labels.cell(v) for v in row] for row in rows], columns=DIFF_COLUMNS)


def _text(value: Any) -> str:
    """A value of any type (a price, a status, a list) as text; blank where unknown."""
    return "" if labels.blank(value) else str(value)


def history_frame(entries: list[Any]) -> pd.DataFrame:
    rows = [
        [
            when(e.at),
            e.listingId,
            labels.scope_label(e.scope),
            _text(e.plan),
            _text(e.unit),
            labels.field_label(e.field),
            labels.change_label(e.change),
            _text(e.before),
            _text(e.after),
        ]
        for e in entries
    ]
    return pd.DataFrame(rows, columns=CHANGE_COLUMNS)


def render_history(saved: SavedSearch) -> None:
    if not api.offers("changes"):
        return
    try:
        page = _history(api.connection().identity, saved)
    except NotFound:
        api.lacks("changes")
        return
    except BadRequest as error:
        st.caption(f"Its history cannot be asked here: {markdown_text(error.message)}")
        return
    since = store_module.iso(saved.changes_since)
    st.markdown(f"**History:** {plural(page.total, 'change')} to its listings since `{since}`")
    if page.results:
        shown = "" if page.total <= len(page.results) else f" (the newest {len(page.results):,})"
        with st.expander(f"What moved and when{shown}", icon=":material/history:"):
            st.dataframe(history_frame(page.results), hide_index=True, width="stretch", key=f"saved_hist_{saved.id}")


def render_changed(saved: SavedSearch, now: Answer) -> None:
    before = saved.answer
    if before is None:
        st.caption("Not opened yet: what it answers now is where its changes will start.")
        return
    changed = store_module.compare(before, now)
    st.markdown(f"**Since last opened** ({when(saved.last_opened)}), its matches: {changed.summary()}")
    if not before.complete or not now.complete:
        st.caption(f"Only the first {sv.MAX_ANSWER:,} matches are followed; narrow it to follow every one.")
    if changed.count:
        with st.expander("New, gone, price and status changes", icon=":material/compare_arrows:"):
            st.dataframe(changed_frame(changed), hide_index=True, width="stretch", key=f"saved_diff_{saved.id}")
    render_history(saved)


# -- a saved search -------------------------------------------------------------------------------------------


def describe(saved: SavedSearch, matching: int | None) -> str:
    who = f"Saved by {markdown_text(saved.saved_by)}" if saved.saved_by else "Saved"
    where = "all provinces" if saved.province == "all" else PROVINCES.get(saved.province, saved.province)
    parts = [f"{who} on {when(saved.saved_at)}", f"{where}, API {saved.version}"]
    if matching is not None:
        parts.append(f"**{matching:,} matching now**")
    if saved.listing_id:
        parts.append(f"watching listing `{markdown_text(saved.listing_id)}`")
    return " · ".join(parts)


def filters_text(saved: SavedSearch) -> str:
    """Its filters in people's words: ``Toronto · Selling Now · 2 bed · up to $800,000``."""
    state = saved.state
    try:
        names = filter_chips.reference_names(state)
    except PreconError:
        names = {}
    return labels.describe_filters(state, names)


def render_actions(saved: SavedSearch, alerts: list[Alert]) -> None:
    with st.container(horizontal=True, gap="small"):
        st.button(
            "Open",
            key=f"saved_open_{saved.id}",
            type="primary",
            icon=":material/open_in_new:",
            on_click=open_search,
            args=(saved.id,),
            help="Show it on Search; what it answers now is then seen.",
        )
        st.button("Mark as seen", key=f"saved_seen_{saved.id}", icon=":material/done_all:", on_click=mark_seen,
                  args=(saved.id,))  # fmt: skip
        with st.popover("Rename", icon=":material/edit:"):
            st.text_input("New name", value=saved.name, key=f"saved_rename_{saved.id}")
            st.button("Rename", key=f"saved_rename_go_{saved.id}", on_click=rename, args=(saved.id,))
        with st.popover("Delete", icon=":material/delete:"):
            st.markdown(f"Delete **{markdown_text(saved.name)}**" + (" and its alerts?" if alerts else "?"))
            st.button("Delete it", key=f"saved_delete_{saved.id}", type="primary", on_click=delete, args=(saved.id,))
        problem = saved_alerts.alert_control(saved, alerts)
    saved_alerts.alert_notes(saved, alerts, problem)


def render_card(saved: SavedSearch, alerts: list[Alert], here: str) -> None:
    with st.container(border=True, key=f"saved_card_{saved.id}"):
        st.markdown(f"#### {markdown_text(saved.name)}")
        now: Answer | None = None
        try:
            now = _answer(api.connection().identity, saved)
        except PreconError as error:
            api.show_error(error)
        st.markdown(describe(saved, now.total if now is not None else None))
        st.caption(f"Filters: {markdown_text(filters_text(saved))}")
        if saved.deployment != here:
            st.caption(
                f"Saved against {markdown_text(sv.deployment_label(saved.deployment))}: what changed compares that "
                "deployment's answer with this one's."
            )
        if now is not None:
            try:
                render_changed(saved, now)
            except PreconError as error:
                api.show_error(error)
        render_actions(saved, alerts)
        sv.show_outcome(f"card_{saved.id}")


def main() -> None:
    if st.session_state.get(OPENING) is not None:
        st.switch_page(SEARCH_PAGE, query_params=st.session_state.pop(OPENING))
    st.title("Saved searches")
    whose = "Searches saved on this dashboard by everyone using it"
    if not auth.may_administer():
        whose = "Your saved searches (an admin sees everyone's)"
    elif auth.auth_configured():
        whose = "Searches saved on this dashboard by everyone signed in (you are an admin)"
    st.caption(
        f"{whose}, with what changed since each was last opened. Save one from Search or Map, or watch a listing "
        "from its page."
    )
    sv.show_outcome("page")
    try:
        searches = sv.visible(sv.store().all())
        here = sv.deployment()
        alerts = sv.store().alerts(here)
    except Unavailable as error:
        st.error(markdown_text(str(error)), icon="⚠️")
        return
    if not searches:
        st.info("No saved search yet: use “Save this search” on Search or Map.", icon=":material/bookmarks:")
        return
    for saved in searches:
        render_card(saved, [a for a in alerts if a.saved_search_id == saved.id], here)


main()
