"""The Market page's pieces: its controls (interval, period, grouping) kept in the address, the statistics fetched
(the market whole and, when grouped, per group, cached), and each section's chart, table, CSV and the sentence
saying how its figures are computed.

What the address means is :mod:`precon.dashboard.market_view`'s; the figures are the service's ``market_stats``.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime

import altair as alt
import pandas as pd
import streamlit as st

from components import api
from components.search_scope import SearchScope
from precon import filters
from precon.client.errors import BadRequest, NotFound
from precon.dashboard import labels
from precon.dashboard import market_view as mv

TOTAL = "All matching listings"
CHART_GROUPS = 8
"""Groups drawn in a chart (the service's first ones); the tables and CSVs keep every group."""
MEASURES = (
    "unitsSold", "unitsAvailable", "sellThrough", "launches", "medianPrice", "medianPricePerSqFt", "priceIncreases",
    "priceCuts",
)  # fmt: skip
INTERVAL_KEY, SINCE_KEY, UNTIL_KEY, GROUP_KEY = "market_interval", "market_since", "market_until", "market_group"


class StatsMissing(Exception):
    """The deployment has no ``market_stats`` (the production service): only ours keep the history it needs."""


# -- the controls --------------------------------------------------------------------------------------------------


def today() -> date:
    return datetime.now(UTC).date()


def read_request() -> tuple[mv.MarketRequest, list[str]]:
    params = {name: st.query_params[name] for name in mv.PARAMS if name in st.query_params}
    request, problems = mv.request_from_params(params, today())
    if problems:
        write_request(request)  # the address keeps what is in use; the messages say what was left out
    return request, problems


def write_request(request: mv.MarketRequest) -> None:
    wanted = request.to_params(today())
    for name in mv.PARAMS:
        if name in wanted:
            if st.query_params.get(name) != wanted[name]:
                st.query_params[name] = wanted[name]
        else:
            st.query_params.pop(name, None)


def _set(key: str, value: object) -> None:
    if st.session_state.get(key, None) != value:
        st.session_state[key] = value


def _month_choices() -> list[date]:
    last = today().replace(day=1)
    return [mv.add_months(last, -k) for k in range(12 * mv.MAX_YEARS)][::-1]


def _on_change() -> None:
    first, last = st.session_state.get(SINCE_KEY), st.session_state.get(UNTIL_KEY)
    interval = st.session_state.get(INTERVAL_KEY) or mv.MONTH
    group = st.session_state.get(GROUP_KEY) or None
    if first and last and first > last:
        first, last = last, first  # picking the end before the start means the period between them
    write_request(mv.MarketRequest(interval, first, last, group))


def controls(request: mv.MarketRequest) -> None:
    """Interval, first and last month, grouping, on one row."""
    months = _month_choices()
    if request.first not in months:
        months = sorted({*months, request.first, request.last})
    _set(INTERVAL_KEY, request.interval)
    _set(SINCE_KEY, request.first)
    _set(UNTIL_KEY, request.last)
    _set(GROUP_KEY, request.group)
    with st.container(horizontal=True, vertical_alignment="bottom", gap="small"):
        st.segmented_control(
            "Interval", mv.INTERVALS, format_func=lambda k: f"{k.title()}s", key=INTERVAL_KEY, required=True,
            on_change=_on_change,
        )  # fmt: skip
        label = "%b %Y"
        st.selectbox("From", months, key=SINCE_KEY, format_func=lambda d: f"{d:{label}}", on_change=_on_change,
                     width=130)  # fmt: skip
        st.selectbox("To", months, key=UNTIL_KEY, format_func=lambda d: f"{d:{label}}", on_change=_on_change,
                     width=130)  # fmt: skip
        st.selectbox(
            "Group by", list(mv.GROUPS), key=GROUP_KEY, index=None, placeholder="The market whole",
            format_func=lambda g: mv.GROUPS[g][1], on_change=_on_change, width=200,
        )  # fmt: skip


# -- the data ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Stats:
    """The statistics as frames: ``total`` for the market whole, ``groups`` per group (empty when not grouped);
    columns ``group``, ``start`` and each measure."""

    total: pd.DataFrame
    groups: pd.DataFrame
    group_problem: str | None = None
    """Why the deployment refused the grouping (a hidden attribute under v1-lite, say); the market whole stands."""

    @property
    def grouped(self) -> bool:
        return not self.groups.empty

    def recorded_from(self) -> pd.Timestamp | None:
        """The start of the first interval in which the history knows of any unit or launch: the intervals before
        it are zeros because nothing was recorded yet, not because nothing happened (None when all have figures)."""
        total = self.total
        known = (total["unitsAvailable"].fillna(0) > 0) | total["sellThrough"].notna() | (total["launches"] > 0)
        if known.all() or not known.any():
            return None
        return total["start"][known.idxmax()]

    def whole_from(self) -> pd.Timestamp | None:
        """The start of the first interval the history covers whole: the one after :meth:`recorded_from`'s, in
        which the recording began (its flows count a part of it, and its launches every listing first seen
        selling, which would draw it as a spike). None when every interval has figures."""
        start = self.recorded_from()
        if start is None:
            return None
        later = self.total["start"][self.total["start"] > start]
        return later.min() if not later.empty else start

    def chart_frame(self) -> pd.DataFrame:
        """The groups drawn (the first :data:`CHART_GROUPS`) and the market whole, from the first interval the
        history covers whole."""
        kept = list(dict.fromkeys(self.groups["group"]))[:CHART_GROUPS] if self.grouped else []
        frame = pd.concat([self.groups[self.groups["group"].isin(kept)], self.total], ignore_index=True)
        start = self.whole_from()
        return frame if start is None else frame[frame["start"] >= start]

    def in_progress(self, interval: str) -> pd.Timestamp | None:
        """The start of the interval holding today (its figures partial, to today), if the period reaches it."""
        starts = [start for start in self.total["start"] if mv.in_progress(start.date(), interval, today())]
        return starts[0] if starts else None

    def group_count(self) -> int:
        return self.groups["group"].nunique() if self.grouped else 0


def frame_of(answer: object, names: Mapping[str, str], total: bool, group_by: str | None = None) -> pd.DataFrame:
    """An answer of ``market_stats`` as rows of (group, start, measures...), the groups named in people's words
    and ordered as people count them (bedrooms by number: Studio, 1 bed, 1 bed + den, 2 bed…)."""
    rows = []
    every = getattr(answer, "series", None) or ()
    for series in sorted(every, key=lambda s: labels.group_order(group_by, s.group)) if not total else every:
        group = TOTAL if total else _group_name(series.group, names, group_by)
        for point in series.points:
            values = point.model_dump() if hasattr(point, "model_dump") else dict(point)
            rows.append({"group": group, "start": values.get("start"), **{m: values.get(m) for m in MEASURES}})
    frame = pd.DataFrame(rows, columns=["group", "start", *MEASURES])
    frame["start"] = pd.to_datetime(frame["start"], utc=True)
    return frame


def _group_name(value: object, names: Mapping[str, str], group_by: str | None) -> str:
    if labels.blank(value):
        return labels.NOT_GIVEN
    text = str(value)
    return names.get(text) or names.get(text.rpartition("/")[2]) or labels.group_label(group_by, value)


def fetch(scope: SearchScope, request: mv.MarketRequest, names: Mapping[str, str]) -> Stats:
    """The market whole and, when grouped, each group, for the listings ``scope`` matches.

    Raises :class:`StatsMissing` where the deployment has no ``market_stats`` (remembered, so not asked again).
    """
    if not api.offers("market_stats"):
        raise StatsMissing
    asked = {
        "filter": filters.to_query(scope.filter) if scope.filter is not None else None,
        "unit_filter": filters.to_query(scope.unit_filter) if scope.unit_filter is not None else None,
        "search": scope.text or None,
        "interval": request.interval,
        "since": request.since(),
        "until": request.until(),
    }
    try:
        total = frame_of(api.call("market_stats", **asked), names, total=True)
    except NotFound:
        api.lacks("market_stats")
        raise StatsMissing from None
    grouped, problem = None, None
    if request.group_by:
        try:
            grouped = api.call("market_stats", group_by=request.group_by, **asked)
        except BadRequest as error:
            problem = error.message
    return Stats(total, frame_of(grouped, names, total=False, group_by=request.group_by), problem)


def launch_frame(stats: Stats) -> pd.DataFrame:
    """Listings launched per quarter (months added up): the market whole, then each group."""
    frames = [("launches", stats.total)] + [
        (f"Listings launched · {group}", rows) for group, rows in stats.groups.groupby("group", sort=False)
    ]
    columns: dict[str, pd.Series] = {}
    for name, rows in frames:
        quarters = [mv.quarter_label(mv.quarter_of(start.date())) for start in rows["start"]]
        columns[name] = rows["launches"].fillna(0).astype(int).groupby(quarters, sort=False).sum()
    frame = pd.DataFrame(columns).fillna(0).astype(int)
    return frame.rename_axis("when").reset_index()


# -- charts, tables, CSVs ------------------------------------------------------------------------------------------


def _labels(frame: pd.DataFrame, interval: str) -> list[str]:
    return [mv.interval_label(start.date(), interval) for start in frame["start"]]


def when_labels(frame: pd.DataFrame, interval: str) -> list[str]:
    """The intervals' labels, the one in progress marked ``(so far)``."""
    return [
        mv.interval_label(start.date(), interval)
        + (mv.SO_FAR if mv.in_progress(start.date(), interval, today()) else "")
        for start in frame["start"]
    ]


def line_chart(
    stats: Stats, measure: str, title: str, axis: str, fmt: str, interval: str, key: str, zero: bool = True
) -> None:
    """``measure`` over time, a line per group drawn and, when not grouped, the market whole in black (beside groups
    it would flatten them: its figures are in the table). The interval in progress is drawn dashed, its point
    hollow, its label "(so far)"; ``title`` may be empty where the section's heading says it."""
    data = stats.chart_frame()[["group", "start", measure]].copy()
    if stats.grouped:
        data = data[data["group"] != TOTAL]
    data["when"] = when_labels(data, interval)
    current = stats.in_progress(interval)
    data["partial"] = data["start"] == current if current is not None else False
    order = list(dict.fromkeys(when_labels(data.sort_values("start"), interval)))
    groups = list(dict.fromkeys(data["group"]))
    colours = alt.Scale(domain=groups, range=_palette(groups))
    last_whole = data.loc[~data["partial"], "start"].max() if data["partial"].any() else None
    data["tail"] = data["partial"] | (data["start"] == last_whole)  # the dashed stretch: into the interval in progress
    base = alt.Chart(data, title=title).encode(
        x=alt.X("when:O", title=None, sort=order, axis=alt.Axis(labelAngle=-45 if len(order) > 12 else 0)),
        y=alt.Y(f"{measure}:Q", title=axis, scale=alt.Scale(zero=zero)),
        color=alt.Color(
            "group:N", title=None, scale=colours, sort=groups, legend=alt.Legend(orient="bottom", columns=4)
        ),
        tooltip=[
            alt.Tooltip("group:N", title="Group"),
            alt.Tooltip("when:N", title="Interval"),
            alt.Tooltip(f"{measure}:Q", title=axis, format=fmt),
        ],
    )
    width = alt.condition(alt.datum.group == TOTAL, alt.value(3), alt.value(2))
    layers = [
        base.transform_filter(~alt.datum.partial).mark_line(point=True).encode(strokeWidth=width),
    ]
    if last_whole is not None:
        layers += [
            base.transform_filter(alt.datum.tail).mark_line(strokeDash=[6, 4]).encode(strokeWidth=width),
            base.transform_filter(alt.datum.partial).mark_point(filled=False, size=70, strokeWidth=2),
        ]
    st.altair_chart(alt.layer(*layers).properties(height=300), width="stretch", key=key)


PALETTE = ["#3d5a80", "#e76f51", "#2a9d8f", "#e9c46a", "#98c1d9", "#9c6644", "#8338ec", "#f4a261"]


def _palette(groups: Sequence[str]) -> list[str]:
    """A colour per group, the market whole black."""
    colours, others = [], iter(PALETTE * 2)
    for group in groups:
        colours.append("#222222" if group == TOTAL else next(others))
    return colours


def bar_chart(frame: pd.DataFrame, columns: Sequence[tuple[str, str, str]], title: str, axis: str, key: str) -> None:
    """Counts per interval as bars, one colour per column (a negative sign draws a column below the axis); an
    interval whose label ends "(so far)" (in progress) drawn pale."""
    rows = [
        {"when": when, "order": k, "what": label, "count": sign_value(sign, value), "partial": when.endswith(mv.SO_FAR)}
        for k, when in enumerate(frame["when"])
        for column, label, sign in columns
        for value in [frame[column].iloc[k]]
    ]
    data = pd.DataFrame(rows, columns=["when", "order", "what", "count", "partial"])
    order = list(dict.fromkeys(frame["when"]))
    chart = (
        alt.Chart(data, title=title)
        .mark_bar()
        .encode(
            x=alt.X("when:O", title=None, sort=order, axis=alt.Axis(labelAngle=-45 if len(order) > 12 else 0)),
            y=alt.Y("count:Q", title=axis),
            color=alt.Color(
                "what:N",
                title=None,
                scale=alt.Scale(domain=[c[1] for c in columns], range=PALETTE[: len(columns)]),
                legend=alt.Legend(orient="bottom"),
            ),
            opacity=alt.condition(alt.datum.partial, alt.value(0.35), alt.value(1.0)),
            tooltip=[
                alt.Tooltip("when:O", title="Interval"),
                alt.Tooltip("what:N", title=" "),
                alt.Tooltip("count:Q", title=axis, format=",d"),
            ],
        )
        .properties(height=300)
    )
    st.altair_chart(chart, width="stretch", key=key)


def in_progress_note(stats: Stats, interval: str) -> str | None:
    """The sentence saying which interval is in progress, or None when the period ends before today."""
    current = stats.in_progress(interval)
    if current is None:
        return None
    name = mv.interval_label(current.date(), interval)
    return (
        f"{name} is in progress: its figures run to {today():%-d %b %Y}, so they are partial. The charts draw it "
        f"dashed (a hollow point, a pale bar) and mark it “{mv.SO_FAR.strip()}”; the tables and CSVs hold it as it "
        "stands."
    )


def first_whole_quarter(stats: Stats) -> date | None:
    """The first quarter the history covers whole (the quarter of :meth:`Stats.whole_from`, or the next)."""
    start = stats.whole_from()
    if start is None:
        return None
    quarter = mv.quarter_of(start.date())
    return quarter if quarter >= start.date() else mv.add_months(quarter, 3)


def sign_value(sign: str, value: object) -> float:
    number = float(value or 0)  # type: ignore[arg-type]
    return -number if sign == "-" else number


def table(stats: Stats, measures: Sequence[tuple[str, str]], interval: str) -> pd.DataFrame:
    """A row per interval, a column per (measure, group) with the market whole first."""
    frame = pd.concat([stats.total, stats.groups], ignore_index=True)
    frame["interval"] = _labels(frame, interval)
    columns: dict[str, list[object]] = {}
    order = list(dict.fromkeys(frame["interval"]))
    for measure, label in measures:
        for group in dict.fromkeys(frame["group"]):
            rows = frame[frame["group"] == group].set_index("interval")[measure]
            name = label if not stats.grouped else f"{label} · {group}"
            columns[name] = [_plain(rows.get(when)) for when in order]
    return pd.DataFrame({"Interval": order, **columns})


def _plain(value: object) -> object:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return None
    return value


def table_and_csv(shown: pd.DataFrame, name: str, key: str) -> None:
    with st.expander("Table", icon=":material/table:"):
        st.dataframe(shown, hide_index=True, width="stretch", key=f"{key}_table", placeholder="—")
    out = io.StringIO()
    shown.to_csv(out, index=False)
    st.download_button(
        "Download CSV", data=out.getvalue().encode(), file_name=f"precon-market-{name}.csv", mime="text/csv",
        key=f"{key}_csv", icon=":material/download:", on_click="ignore",
    )  # fmt: skip


def missing_note() -> str:
    return (
        "**This deployment keeps no history of the market.** The Market page reads `market_stats`, which only our "
        f"own service answers, from the history it records; the deployment in use ({api.connection().url}) has "
        "none.\n\n"
        "Point the dashboard at a deployment of ours: a mirror of the catalogue refreshed every day by "
        "`precon catalogue mirror --from URL --key KEY --product ID --data DIR` (a systemd timer for it is in "
        "docs/deploy.md), served by `precon serve --data DIR`, with `PRECON_API_URL` set to it. Each day's mirror "
        "records what changed, so the figures start on the first day it runs. Without `PRECON_API_URL` the "
        "dashboard's embedded service has two years of simulated history."
    )
