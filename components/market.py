"""The Changes page's pieces: the window in the address, the market's changes fetched for it (only the entries
each figure needs, cached), the counts, the weekly chart, the table of changes and their CSV.

What the entries mean is :mod:`precon.dashboard.market_changes`'s; this module asks, lays out and draws.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable
from datetime import UTC, date, datetime, timedelta

import altair as alt
import pandas as pd
import streamlit as st

from components import api
from components.formatting import cad, listing_url, plural
from components.search_scope import SearchScope
from precon import filters
from precon.client.errors import NotFound
from precon.dashboard import labels
from precon.dashboard import market_changes as mc

COLUMNS = ["at", "kind", "listingId", "plan", "unit", "field", "before", "after", "percent"]
KIND_COLOURS = {
    mc.LAUNCH: "#2a9d8f",
    mc.SELL_OUT: "#e76f51",
    mc.INCREASE: "#3d5a80",
    mc.CUT: "#e9c46a",
    mc.UNIT_SOLD: "#98c1d9",
}
PAGE_SIZE = 25
ROW_PX = 35
"""The grid's row height: a page of the table is drawn whole, without a scroll bar of its own."""
WINDOW_KEY, FROM_KEY, TO_KEY, SHOW_KEY = "changes_window", "changes_from", "changes_to", "changes_show"
DATES = "dates"
WINDOW_PARAMS = ("window", "from", "to")


class ChangesMissing(Exception):
    """The deployment has no ``changes`` (the production service): its history is kept only by ours."""


# -- the data ------------------------------------------------------------------------------------------------------


def _row(change: mc.MarketChange) -> dict[str, object]:
    entry = change.entry
    return {
        "at": entry.at,
        "kind": change.kind,
        "listingId": entry.listingId,
        "plan": entry.plan,
        "unit": entry.unit,
        "field": entry.field,
        "before": entry.before,
        "after": entry.after,
        "percent": change.percent,
    }


@st.cache_data(ttl=api.DATA_TTL_S, show_spinner=False, max_entries=50)
def _changes_frame(identity: str, version: str, province: str, asked: str) -> pd.DataFrame:
    """Kept as a frame: a year of a large catalogue is hundreds of thousands of entries, which a frame brings back
    from Streamlit's cache on each rerun many times faster than as records."""
    client = api.connection().client
    arguments = json.loads(asked)
    entries = [
        entry
        for query in mc.QUERIES
        for entry in client.iter_changes(**arguments, **query, version=version, province=province)
    ]
    return pd.DataFrame([_row(change) for change in mc.market_changes(entries)], columns=COLUMNS)


def changes_frame(scope: SearchScope, window: mc.Window, today: date | None = None) -> pd.DataFrame:
    """The market's changes in ``window`` to the listings ``scope`` matches, newest first.

    Raises :class:`ChangesMissing` where the deployment has no ``changes`` (remembered, so it is not asked again).
    """
    if not api.offers("changes"):
        raise ChangesMissing
    since, until = window.bounds(today or datetime.now(UTC).date())
    asked = {
        "since": mc.iso(since),
        "until": mc.iso(until),
        "filter": filters.to_query(scope.filter) if scope.filter is not None else None,
        "unit_filter": filters.to_query(scope.unit_filter) if scope.unit_filter is not None else None,
        "search": scope.text or None,
    }
    plain = json.dumps({k: v for k, v in asked.items() if v is not None}, sort_keys=True)
    version, province = api.scope()
    try:
        return _changes_frame(api.connection().identity, version, province, plain)
    except NotFound:
        api.lacks("changes")
        raise ChangesMissing from None


def summary_of(frame: pd.DataFrame) -> mc.Summary:
    return mc.tally(zip(frame["kind"], frame["percent"], strict=True))


@st.cache_data(ttl=api.DATA_TTL_S, show_spinner=False, max_entries=200)
def _names(identity: str, version: str, province: str, ids: tuple[str, ...]) -> dict[str, str]:
    client = api.connection().client
    names: dict[str, str] = {}
    for start in range(0, len(ids), 100):
        found = client.multiple_listings(
            ids[start : start + 100], retrieve_attributes=["name"], version=version, province=province
        )
        names.update({listing.id: listing.name for listing in found if listing.id and listing.name})
    return names


def listing_names(ids: Iterable[str]) -> dict[str, str]:
    """Names by listing id; a deleted listing, or one outside the sidebar's scope, has none."""
    version, province = api.scope()
    return _names(api.connection().identity, version, province, tuple(sorted({i for i in ids if i})))


# -- the window ----------------------------------------------------------------------------------------------------


def read_window() -> tuple[mc.Window, list[str]]:
    params = {name: st.query_params[name] for name in WINDOW_PARAMS if name in st.query_params}
    window, problems = mc.window_from_params(params)
    if problems:
        write_window(window)  # the address then holds only what is in use; the messages say what was left out
    return window, problems


def write_window(window: mc.Window) -> None:
    wanted = window.to_params()
    for name in WINDOW_PARAMS:
        if name in wanted:
            if st.query_params.get(name) != wanted[name]:
                st.query_params[name] = wanted[name]
        else:
            st.query_params.pop(name, None)


def _window_label(choice: str) -> str:
    return "Dates" if choice == DATES else f"{choice} days"


def _on_window() -> None:
    choice = st.session_state.get(WINDOW_KEY) or str(mc.DEFAULT_DAYS)
    if choice == DATES:
        today = datetime.now(UTC).date()
        window = mc.Window(None, today - timedelta(days=mc.DEFAULT_DAYS), today)
    else:
        window = mc.Window(int(choice))
    write_window(window)
    st.query_params.pop("page", None)


def _on_dates() -> None:
    start, end = st.session_state.get(FROM_KEY), st.session_state.get(TO_KEY)
    params = {"from": start.isoformat() if start else "", "to": end.isoformat() if end else ""}
    window, _ = mc.window_from_params(params)
    if end and start and end < start:
        # Kept as typed, so the page says what is wrong with it instead of quietly showing something else.
        st.query_params["from"], st.query_params["to"] = params["from"], params["to"]
    else:
        write_window(window if window.explicit else mc.Window(None, start, end))
    st.query_params.pop("page", None)


def _set(key: str, value: object) -> None:
    if st.session_state.get(key, None) != value:
        st.session_state[key] = value


def window_controls(window: mc.Window) -> None:
    """The window as a choice of 7, 30, 90, 365 days or dates; the dates' boxes when chosen."""
    choices = [*(str(days) for days in mc.PRESET_DAYS), DATES]
    picked = DATES if window.explicit else str(window.days)
    _set(WINDOW_KEY, picked)
    with st.container(horizontal=True, vertical_alignment="bottom", gap="small"):
        st.segmented_control(
            "Window", choices, format_func=_window_label, key=WINDOW_KEY, required=True, on_change=_on_window
        )
        if window.explicit:
            _set(FROM_KEY, window.start)
            _set(TO_KEY, window.end)
            st.date_input("From", key=FROM_KEY, on_change=_on_dates, format="YYYY-MM-DD", width=140)
            st.date_input("To", key=TO_KEY, on_change=_on_dates, format="YYYY-MM-DD", width=140)


# -- the figures ---------------------------------------------------------------------------------------------------


def _percent(value: float | None) -> str | None:
    return None if value is None else f"median {value:+.1f}%"


def counts(summary: mc.Summary) -> None:
    """A figure per kind; the price moves with their median size."""
    notes = {mc.INCREASE: _percent(summary.median_increase), mc.CUT: _percent(summary.median_cut)}
    helps = {
        mc.LAUNCH: "Listings whose selling status went from Pending to Selling Now.",
        mc.SELL_OUT: "Listings whose selling status became Sold Out.",
        mc.INCREASE: "Listings whose start price went up; the median rise in per cent.",
        mc.CUT: "Listings whose start price went down; the median cut in per cent.",
        mc.UNIT_SOLD: "Units whose status became Sold.",
    }
    for column, kind in zip(st.columns(len(mc.KINDS)), mc.KINDS, strict=True):
        column.metric(
            mc.KIND_LABELS[kind],
            f"{summary.counts[kind]:,}",
            delta=notes.get(kind),
            delta_color="off",
            delta_arrow="off",
            help=helps[kind],
            border=True,
        )


def kinds_said(kinds: list[str]) -> str:
    """The kinds picked under "Show", in words: "all kinds", or "Launches and Price cuts"."""
    if len(kinds) == len(mc.KINDS):
        return "all kinds"
    names = [mc.KIND_LABELS[kind] for kind in kinds]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def weekly_chart(frame: pd.DataFrame, window: mc.Window, kinds: list[str]) -> None:
    """Changes of the kinds picked under "Show" per week, stacked by kind; every week of the window on the axis,
    quiet ones too. The chart and the table show the same kinds, and the chart says which."""
    frame = frame[frame["kind"].isin(kinds)]
    weeks = mc.weekly_counts(zip(frame["at"].dt.to_pydatetime(), frame["kind"], strict=True))
    today = datetime.now(UTC).date()
    since, until = window.bounds(today)
    seen = [week for week, _ in weeks]
    first = since.date() if since else min(seen, default=today)
    last = until.date() if until else max([today, *seen])
    order = [f"{week:%-d %b %Y}" for week in mc.week_starts(first, last)]
    rows = [
        {"week": f"{week:%-d %b %Y}", "kind": mc.KIND_LABELS[kind], "order": mc.KINDS.index(kind), "count": count}
        for (week, kind), count in sorted(weeks.items())
    ]
    data = pd.DataFrame(rows, columns=["week", "kind", "order", "count"])
    shown = [kind for kind in mc.KINDS if kind in kinds]
    labels = [mc.KIND_LABELS[kind] for kind in shown]
    subtitle = f"Showing {kinds_said(shown)} (as picked under Show) · weeks from Monday (UTC), stacked by kind"
    chart = (
        alt.Chart(data, title=alt.Title("Changes per week", subtitle=subtitle))
        .mark_bar()
        .encode(
            x=alt.X("week:O", title="Week of", sort=order, scale=alt.Scale(domain=order), axis=alt.Axis(labelAngle=0)),
            y=alt.Y("count:Q", title="Changes", stack=True),
            color=alt.Color(
                "kind:N",
                title=None,
                scale=alt.Scale(domain=labels, range=[KIND_COLOURS[kind] for kind in shown]),
                legend=alt.Legend(orient="right"),
            ),
            order=alt.Order("order:Q"),
            tooltip=[
                alt.Tooltip("week:O", title="Week of"),
                alt.Tooltip("kind:N", title="Kind"),
                alt.Tooltip("count:Q", title="Changes", format=",d"),
            ],
        )
        .properties(height=320)
    )
    st.altair_chart(chart, width="stretch", key="changes_weekly_chart")


# -- the table and the CSV -----------------------------------------------------------------------------------------


def _value(field: str | None, value: object) -> str:
    if labels.blank(value):
        return "—"
    if field == "startPrice" and isinstance(value, int | float):
        return cad(value)
    return str(value)


def what_changed(kind: str, plan: object, unit: object, percent: object) -> str:
    plan = labels.cell(plan)
    if kind == mc.UNIT_SOLD:
        return f"Unit {labels.cell(unit)} sold" + (f" (plan {plan})" if plan else "")
    if kind in (mc.INCREASE, mc.CUT):
        return f"Start price {'up' if kind == mc.INCREASE else 'down'} {abs(float(percent)):.1f}%"  # type: ignore[arg-type]
    return "Launched" if kind == mc.LAUNCH else "Sold out"


def table_frame(frame: pd.DataFrame, names: dict[str, str]) -> pd.DataFrame:
    """The table's rows: a link to each listing (named), what changed, from, to and when."""
    return pd.DataFrame(
        {
            "listing": [f"{listing_url(i)}#{names.get(i) or i}" for i in frame["listingId"]],
            "what": [what_changed(*row) for row in frame[["kind", "plan", "unit", "percent"]].itertuples(index=False)],
            "from": [_value(f, v) for f, v in zip(frame["field"], frame["before"], strict=True)],
            "to": [_value(f, v) for f, v in zip(frame["field"], frame["after"], strict=True)],
            "at": list(frame["at"]),
        }
    )


TABLE_COLUMNS = {
    "listing": st.column_config.LinkColumn("Listing", display_text=r"#(.*)$", width="large"),
    "what": st.column_config.TextColumn("What changed", width="medium"),
    "from": st.column_config.TextColumn("From"),
    "to": st.column_config.TextColumn("To"),
    "at": st.column_config.DatetimeColumn("When (UTC)", format="D MMM YYYY, HH:mm"),
}


def shown_kinds() -> list[str]:
    """The kinds the table lists, from the address (``show=launch,cut``); every kind when it names none."""
    named = [k for k in (st.query_params.get("show") or "").split(",") if k in mc.KINDS]
    return named or list(mc.KINDS)


def _on_show() -> None:
    picked = [k for k in mc.KINDS if k in (st.session_state.get(SHOW_KEY) or [])]
    if picked and len(picked) < len(mc.KINDS):
        st.query_params["show"] = ",".join(picked)
    else:
        st.query_params.pop("show", None)
    st.query_params.pop("page", None)


def _go(page: int) -> None:
    if page <= 0:
        st.query_params.pop("page", None)
    else:
        st.query_params["page"] = str(page + 1)


def current_page(pages: int) -> int:
    """The table's page from the address (from 0), within ``pages``."""
    text = st.query_params.get("page") or "1"
    number = int(text) if text.isdigit() else 1
    return min(max(number, 1), max(pages, 1)) - 1


def show_picker() -> list[str]:
    """The "Show" pills: the kinds the chart and the table show (in the address); the kinds picked."""
    kinds = shown_kinds()
    _set(SHOW_KEY, kinds)
    st.pills(
        "Show", list(mc.KINDS), format_func=mc.KIND_LABELS.get, selection_mode="multi", key=SHOW_KEY,
        on_change=_on_show, help="The kinds of change the chart and the table show.",
    )  # fmt: skip
    return kinds


def changes_table(frame: pd.DataFrame, kinds: list[str]) -> pd.DataFrame:
    """The page of the table of the kinds picked, paging; the rows of the kinds picked (for the CSV)."""
    rows = frame[frame["kind"].isin(kinds)]
    if rows.empty:
        st.info("No change of these kinds in the window: widen the window, pick other kinds or remove a filter.")
        return rows
    pages = math.ceil(len(rows) / PAGE_SIZE)
    page = current_page(pages)
    shown = rows.iloc[page * PAGE_SIZE : (page + 1) * PAGE_SIZE]
    with api.guarded():
        names = listing_names(shown["listingId"])
    st.dataframe(
        table_frame(shown, names), column_config=TABLE_COLUMNS, hide_index=True, width="stretch",
        key="changes_table", placeholder="—", height=ROW_PX * (len(shown) + 1) + 3,
    )  # fmt: skip
    previous, where, following = st.columns([1, 2, 1], vertical_alignment="center")
    previous.button(
        "Previous", key="changes_prev", icon=":material/chevron_left:", disabled=page == 0, on_click=_go,
        args=(page - 1,), width="stretch",
    )  # fmt: skip
    where.markdown(
        f"<div style='text-align:center'>Page {page + 1:,} of {pages:,} · changes {page * PAGE_SIZE + 1:,}–"
        f"{page * PAGE_SIZE + len(shown):,} of {len(rows):,}</div>",
        unsafe_allow_html=True,
    )
    following.button(
        "Next", key="changes_next", icon=":material/chevron_right:", icon_position="right",
        disabled=page + 1 >= pages, on_click=_go, args=(page + 1,), width="stretch",
    )  # fmt: skip
    return rows


CSV_HEADER = [
    "When (UTC)", "Kind", "Listing id", "Listing", "What changed", "Field", "Plan", "Unit", "From", "To",
    "Change (%)",
]  # fmt: skip
"""The CSV's columns, in people's words (one header per column of :data:`COLUMNS` and the listing's name)."""


def csv_bytes(rows: pd.DataFrame, names: dict[str, str]) -> bytes:
    """The rows as a CSV: an unknown value is a blank cell, never ``nan``."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_HEADER)
    for at, kind, listing_id, plan, unit, field, before, after, percent in rows[COLUMNS].itertuples(index=False):
        writer.writerow(
            [
                "" if labels.blank(at) else at.isoformat(),
                mc.KIND_LABELS[kind],
                listing_id,
                _safe(names.get(listing_id, "")),
                what_changed(kind, plan, unit, percent),
                labels.field_label(labels.cell(field)),
                labels.cell(plan),
                labels.cell(unit),
                labels.cell(before),
                labels.cell(after),
                "" if labels.blank(percent) else f"{percent:.2f}",
            ]
        )
    return out.getvalue().encode()


def _safe(text: str) -> str:
    """A name a spreadsheet would read as a formula is kept as text."""
    return "'" + text if text[:1] in ("=", "+", "-", "@") else text


def csv_download(rows: pd.DataFrame, window: mc.Window) -> None:
    """Every change of the kinds shown in the window, with its listing's name, made when clicked."""

    def make() -> bytes:
        return csv_bytes(rows, listing_names(rows["listingId"]))

    st.download_button(
        f"Download CSV ({plural(len(rows), 'change')})",
        data=make,
        file_name=f"precon-changes-{window.describe().replace(' ', '-')}.csv",
        mime="text/csv",
        key="changes_download_csv",
        icon=":material/download:",
        on_click="ignore",
        help="Every change of the kinds shown in the window, newest first.",
    )


def missing_note() -> str:
    return (
        "**This deployment keeps no history of the market.** The Changes page reads `changes`, which only our own "
        f"service answers; the deployment in use ({api.connection().url}) has none.\n\n"
        "Point the dashboard at a deployment of ours: a mirror of the catalogue refreshed once a day by "
        "`precon catalogue mirror --from URL --key KEY --product ID --data DIR` (for example from cron), served by "
        "`precon serve --data DIR`, with `PRECON_API_URL` set to it. Each day's mirror records what changed, so the "
        "history starts on the first day it runs. Without `PRECON_API_URL` the dashboard's embedded service has one."
    )
