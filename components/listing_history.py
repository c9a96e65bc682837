"""A listing's history (``listing_history``, ours): its start price, or a plan's, as a step chart over time with the
changes of selling status marked on it, and every change as a table, newest first.

The production service has no such operation: there the section says what it needs instead of failing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import altair as alt
import pandas as pd
import streamlit as st

from components import api
from components.formatting import MISSING, cad
from precon.client.errors import BadRequest, NotFound, PreconError
from precon.client.models import FloorPlan, HistoryEntry, HistoryPage, Listing
from precon.dashboard import labels

OPERATION = "listing_history"
PRICE_FIELDS = ("startPrice", "sellingStatus")
PAGE_SIZE = 1000
TABLE_ROWS = 50
MAX_ENTRIES = 20_000
"""What "Show all" reads at most: a tower's two years of unit sales are a few thousand."""
BUILDING = "__listing__"
MONEY_WORDS = ("price", "cost", "fee", "maint", "levies")
NOT_OURS = (
    "History needs a deployment of ours: this one does not record what changed. Point the dashboard "
    "(`PRECON_API_URL`) at a mirror kept by `precon catalogue mirror`, or at the embedded service."
)
COLUMNS = {
    "when": st.column_config.DatetimeColumn("When (UTC)", format="YYYY-MM-DD HH:mm"),
    "scope": st.column_config.TextColumn("Scope"),
    "plan": st.column_config.TextColumn("Plan"),
    "unit_number": st.column_config.TextColumn("Unit"),
    "field": st.column_config.TextColumn("Field"),
    "change": st.column_config.TextColumn("Change"),
    "from": st.column_config.TextColumn("From", width="medium"),
    "to": st.column_config.TextColumn("To", width="medium"),
}
STATUS_COLOURS = {"Selling Now": "#2e9e5b", "Pending": "#f0a630", "Sold Out": "#d1495b"}


class HistoryUnavailable(Exception):
    """The deployment has no ``listing_history``."""


def read_entries(
    listing_id: str, *, fields: Sequence[str] = (), limit: int = MAX_ENTRIES
) -> tuple[list[HistoryEntry], int]:
    """Up to ``limit`` of the listing's entries (of ``fields``, if any), newest first, and how many there are."""
    if not api.offers(OPERATION):
        raise HistoryUnavailable
    entries: list[HistoryEntry] = []
    page_number, total = 0, 0
    per_page = min(PAGE_SIZE, limit)
    while len(entries) < limit:
        try:
            page: HistoryPage = api.call(
                OPERATION, id=listing_id, fields=list(fields) or None, page=page_number, per_page=per_page
            )
        except (NotFound, BadRequest) as error:
            if page_number == 0 and not entries:
                api.lacks(OPERATION)  # a listing the page just read: the 404 is the operation's, not the listing's
                raise HistoryUnavailable from error
            raise
        entries += page.results
        total = page.total
        page_number += 1
        if page_number >= page.pages or not page.results:
            break
    return entries[:limit], total


def number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float | str) or value == "":
        return None
    try:
        return float(value)
    except ValueError:
        return None


def is_money(field: str | None) -> bool:
    lowered = (field or "").lower()
    return any(word in lowered for word in MONEY_WORDS)


def value_text(value: Any, field: str | None = None) -> str | None:
    """A value of an entry as a cell shows it: ``None`` stays blank, money in dollars, other numbers plain (a year is
    not 2,030), a list or object as its JSON."""
    if value is None:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        if is_money(field):
            return f"${value:,.0f}" if float(value).is_integer() else f"${value:,.2f}"
        return f"{int(value)}" if float(value).is_integer() else f"{value:g}"
    if isinstance(value, list | dict):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def price_steps(
    entries: Sequence[HistoryEntry], current: float | None, created: datetime | None, now: datetime
) -> pd.DataFrame:
    """The price over time from ``entries`` (of one record, any order): a point where its history starts
    (``created``, or its first change), one per change, and one now, each value holding until the next. Empty when
    nothing dates it."""
    changes = sorted(
        (e for e in entries if e.at is not None and e.change == "updated" and e.field == "startPrice"),
        key=lambda e: e.at or now,
    )
    points: list[tuple[datetime, float | None]] = []
    if changes:
        first = changes[0].at or now
        points.append((min(created, first) if created else first, number(changes[0].before)))
        points += [(e.at or now, number(e.after)) for e in changes]
        points.append((max(now, points[-1][0]), points[-1][1]))
    elif created is not None:
        points += [(created, current), (max(now, created), current)]
    return pd.DataFrame(points, columns=["at", "price"]).astype({"price": "float64"})


def status_marks(entries: Sequence[HistoryEntry]) -> pd.DataFrame:
    """The listing's changes of selling status: when, from what, to what."""
    rows = [
        {"at": e.at, "from": value_text(e.before) or MISSING, "to": value_text(e.after) or MISSING}
        for e in entries
        if e.scope == "listing" and e.field == "sellingStatus" and e.change == "updated" and e.at is not None
    ]
    return pd.DataFrame(rows, columns=["at", "from", "to"])


def history_chart(steps: pd.DataFrame, marks: pd.DataFrame, title: str) -> alt.LayerChart:
    line = (
        alt.Chart(steps)
        .mark_line(interpolate="step-after", strokeWidth=2.5, point=alt.OverlayMarkDef(size=30))
        .encode(
            x=alt.X("at:T", title=None),
            y=alt.Y("price:Q", title=title, scale=alt.Scale(zero=False), axis=alt.Axis(format="$,.0f")),
            tooltip=[alt.Tooltip("at:T", title="From", format="%Y-%m-%d"), alt.Tooltip("price:Q", format="$,.0f")],
        )
    )
    layers: list[Any] = [line]
    if not marks.empty:
        statuses = list(STATUS_COLOURS) + sorted(set(marks["to"]) - set(STATUS_COLOURS))
        layers.append(
            alt.Chart(marks)
            .mark_rule(strokeDash=[5, 3], strokeWidth=2)
            .encode(
                x="at:T",
                color=alt.Color(
                    "to:N",
                    title="Selling status became",
                    scale=alt.Scale(domain=statuses, range=[STATUS_COLOURS.get(s, "#7f7f7f") for s in statuses]),
                    legend=alt.Legend(orient="top"),
                ),
                tooltip=[
                    alt.Tooltip("at:T", title="When", format="%Y-%m-%d"),
                    alt.Tooltip("from:N", title="From"),
                    alt.Tooltip("to:N", title="To"),
                ],
            )
        )
    return alt.layer(*layers).properties(height=300)


def history_frame(entries: Sequence[HistoryEntry], plan_names: dict[str, str]) -> pd.DataFrame:
    """The entries as the table shows them, in their order (newest first), in people's words (``Floor plan``,
    ``Start price``, ``Changed``)."""
    rows = [
        {
            "when": entry.at,
            "scope": labels.scope_label(entry.scope),
            "plan": plan_names.get(entry.plan, entry.plan) if entry.plan else None,
            "unit_number": entry.unit,
            "field": labels.field_label(entry.field),
            "change": labels.change_label(entry.change),
            "from": value_text(entry.before, entry.field),
            "to": value_text(entry.after, entry.field),
        }
        for entry in entries
    ]
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    frame["when"] = pd.to_datetime(frame["when"], utc=True).dt.tz_localize(None)
    return frame


def recording_start(listing_id: str) -> datetime | None:
    """When the listing's history begins: its oldest entry (its creation, or the catalogue's first load)."""
    total = api.call(OPERATION, id=listing_id, per_page=0).total
    if not total:
        return None
    oldest: HistoryPage = api.call(OPERATION, id=listing_id, page=total - 1, per_page=1)
    return oldest.results[0].at if oldest.results else None


def _plan_options(plans: Sequence[FloorPlan]) -> dict[str, str]:
    options = {BUILDING: "The building (the listing's start price)"}
    options.update({plan.id: f"Plan {plan.name or plan.id}" for plan in plans if plan.id})
    return options


def render_price_history(listing: Listing, key: str) -> None:
    """The chosen start price over time, with the selling status's changes, from the listing's own entries."""
    plans = list(listing.floorPlans or [])
    options = _plan_options(plans)
    chosen = st.selectbox("Price of", list(options), format_func=options.get, key=f"{key}_plan") or BUILDING
    entries, _ = read_entries(listing.id or "", fields=PRICE_FIELDS)
    if chosen == BUILDING:
        own = [e for e in entries if e.scope == "listing"]
        current, title = listing.startPrice, "Start price (CAD)"
    else:
        own = [e for e in entries if e.scope == "floorPlan" and e.plan == chosen]
        plan = next((p for p in plans if p.id == chosen), None)
        current, title = (number(plan.startPrice) if plan else None), "Plan's start price (CAD)"
    steps = price_steps(own, current, recording_start(listing.id or ""), datetime.now(UTC))
    marks = status_marks(entries)
    if steps.empty or steps["price"].isna().all():
        st.caption(f"No price of this has been recorded over time (now {cad(current)}).")
        return
    changed = max(len(steps) - 2, 0)
    st.altair_chart(history_chart(steps, marks, title), width="stretch", key=f"{key}_chart")
    marked = " Dashed lines: the listing's selling status changed (hover for what to)." if not marks.empty else ""
    st.caption(f"{changed:,} price change{'s' if changed != 1 else ''} recorded; now {cad(current)}.{marked}")


def render_change_table(listing: Listing, key: str) -> None:
    """The listing's changes, newest first: the latest ones, or all of them on request."""
    show_all = st.toggle("Show all changes", key=f"{key}_all")
    entries, total = read_entries(listing.id or "", limit=MAX_ENTRIES if show_all else TABLE_ROWS)
    if not total:
        st.caption("No change to this listing has been recorded since it was created.")
        return
    names = {plan.id: plan.name or plan.id for plan in listing.floorPlans or [] if plan.id}
    frame = history_frame(entries, names)
    st.dataframe(
        frame, column_config=COLUMNS, hide_index=True, width="stretch", placeholder=MISSING, key=f"{key}_table"
    )
    more = f" (the newest {len(frame):,} shown)" if len(frame) < total else ""
    st.caption(f"{total:,} changes recorded, newest first{more}.")


def render_history(listing: Listing, key: str) -> None:
    """The price chart and the change table, or why there is no history here."""
    try:
        render_price_history(listing, key)
        render_change_table(listing, key)
    except HistoryUnavailable:
        st.info(NOT_OURS, icon=":material/history:")
    except PreconError as error:
        api.show_error(error)
