"""Charts of the dashboard, in Altair, each with its numbers readable on it: ranked bars with a label at the end of
each bar, a donut with the count on each slice, a heatmap with the count in each cell, a price histogram; and the
data they draw from when facet counts are not enough (every listing in view, a few attributes each).

Every chart carries its data as one dataset with a ``value`` column (the raw facet value, as the API keys it) and
a ``label`` column (what the reader sees), so what the chart shows can be read back and checked.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import altair as alt
import pandas as pd
import streamlit as st

from components import api
from precon.client import Filter
from precon.client.models import Listing

BAR_COLOUR = "#2a7f62"
"""The theme's primary colour."""
MEDIAN_COLOUR = "#e76f51"
ROW_HEIGHT = 24
LABEL_LIMIT = 240
SHORT_DOLLARS = (
    "datum.value >= 1e6 ? '$' + format(datum.value / 1e6, '.3~f') + 'M' "
    ": datum.value >= 1e3 ? '$' + format(datum.value / 1e3, '.0f') + 'K' : '$' + format(datum.value, ',.0f')"
)
"""A Vega expression writing an axis value as $650K or $1.2M."""
STATUS_COLOURS = {"Selling Now": "#2a9d8f", "Pending": "#e9c46a", "Sold Out": "#e76f51"}
"""Selling statuses in the colours the map draws them in."""
OTHER_COLOURS = ["#3d5a80", "#98c1d9", "#8d99ae", "#6d597a", "#b56576"]

FETCH_PAGE_SIZE = 1000
"""Listings per request when every listing in view is fetched (the API's maximum)."""
PRICE_ATTRIBUTES = ("startPrice", "cityOrDistrict", "averagePricePerSqFeet")
"""What the price charts need of each listing; the pages ask for the same list so they share the cached pages."""


def listings(count: int) -> str:
    """``1 listing``, ``1,234 listings``."""
    return f"{count:,} listing{'' if count == 1 else 's'}"


# -- data --------------------------------------------------------------------------------------------------


def counts_frame(
    counts: Mapping[str, int], labels: Mapping[str, str] | None = None, top: int | None = None
) -> pd.DataFrame:
    """Facet counts as rows of ``value``, ``label``, ``count``: highest count first, ties by label; the first
    ``top`` rows. Labels are made unique (two builders of one name are told apart by their key)."""
    rows = [(value, (labels or {}).get(value) or value, int(count)) for value, count in counts.items()]
    rows.sort(key=lambda row: (-row[2], row[1].casefold(), row[0]))
    if top is not None:
        rows = rows[:top]
    seen: dict[str, int] = {}
    for label in (row[1] for row in rows):
        seen[label] = seen.get(label, 0) + 1
    unique = [(value, f"{label} ({value})" if seen[label] > 1 else label, count) for value, label, count in rows]
    return pd.DataFrame(unique, columns=["value", "label", "count"])


def listing_values(
    attributes: Sequence[str],
    *,
    filter: Filter = None,
    search: str | None = None,
    unit_filter: Filter = None,
    what: str = "listings",
) -> pd.DataFrame:
    """Every listing in view (the sidebar's version and province, the search words, ``filter`` and, where given, one
    floor plan meeting ``unit_filter``) with only these attributes, one row each, columns ``id`` and the attributes.
    Fetched a page of 1000 at a time, each page through :func:`components.api.call` (so cached), with a progress
    bar while there is more than one page.

    Must run inside :func:`components.api.guarded`.
    """
    arguments: dict[str, Any] = {
        "retrieve_attributes": list(attributes),
        "per_page": FETCH_PAGE_SIZE,
        "filter": filter,
        "search": search or None,
        "unit_filter": unit_filter,
    }
    first = api.call("search_listings", page=0, **arguments)
    pages = [first]
    if first.pages > 1:
        bar = st.progress(0.0, text=f"Fetching {what}…")
        done = len(first.results)
        for number in range(1, first.pages):
            bar.progress(min(done / max(first.total, 1), 1.0), text=f"Fetching {what}: {done:,} of {first.total:,}")
            page = api.call("search_listings", page=number, **arguments)
            if not page.results:
                break
            pages.append(page)
            done += len(page.results)
        bar.empty()
    return listings_frame([listing for page in pages for listing in page.results], attributes)


def listings_frame(found: Sequence[Listing], attributes: Sequence[str]) -> pd.DataFrame:
    """Listings as rows: columns ``id`` and these attributes."""
    rows = [{"id": listing.id, **{name: getattr(listing, name, None) for name in attributes}} for listing in found]
    return pd.DataFrame(rows, columns=["id", *attributes])


def nice_width(span: float, bins: int) -> float:
    """A round bin width (1, 2, 2.5 or 5 times a power of ten) giving about ``bins`` bins over ``span``."""
    raw = max(span, 1.0) / max(bins, 1)
    power = 10 ** math.floor(math.log10(raw))
    for step in (1, 2, 2.5, 5, 10):
        if raw <= step * power:
            return step * power
    return 10 * power  # pragma: no cover - the loop always returns


def histogram_frame(values: pd.Series, bins: int) -> pd.DataFrame:
    """Values counted in bins of a round width, edges on multiples of it: ``start``, ``end``, ``count``, ``label``
    (a bin holds ``start <= v < end``); empty bins inside the range are kept."""
    values = pd.to_numeric(values, errors="coerce").dropna()
    if values.empty:
        return pd.DataFrame(columns=["start", "end", "count", "label"])
    low, high = float(values.min()), float(values.max())
    width = nice_width(high - low, bins)
    first = math.floor(low / width) * width
    count = math.floor((high - first) / width) + 1
    index = ((values - first) // width).astype(int).clip(0, count - 1)
    tally = index.value_counts().reindex(range(count), fill_value=0).sort_index()
    starts = [first + width * i for i in range(count)]
    return pd.DataFrame(
        {
            "start": starts,
            "end": [start + width for start in starts],
            "count": tally.to_numpy(dtype=int),
            "label": [f"${start:,.0f} – ${start + width:,.0f}" for start in starts],
        }
    )


# -- charts ------------------------------------------------------------------------------------------------


def _title(title: str, subtitle: str | None = None) -> alt.TitleParams:
    return alt.TitleParams(title, subtitle=subtitle or "", anchor="start", fontSize=15, subtitleColor="#6b7280")


def ranked_bars(
    frame: pd.DataFrame,
    *,
    title: str,
    subtitle: str | None = None,
    value: str = "count",
    value_title: str = "Listings",
    value_format: str = ",d",
    axis_format: str = ",d",
    tooltip: Sequence[alt.Tooltip] = (),
    colour: str = BAR_COLOUR,
) -> alt.LayerChart:
    """Horizontal bars in the frame's order (the caller sorts, highest first), each labelled with its number."""
    order = list(frame["label"])
    top = float(frame[value].max()) if len(frame) else 1.0
    tips = [alt.Tooltip("label:N", title="Value"), alt.Tooltip(f"{value}:Q", title=value_title, format=value_format)]
    base = alt.Chart(frame).encode(
        y=alt.Y("label:N", sort=order, title=None, axis=alt.Axis(labelLimit=LABEL_LIMIT)),
        x=alt.X(
            f"{value}:Q",
            title=value_title,
            scale=alt.Scale(domain=[0, top * 1.18 if top > 0 else 1], nice=False),
            axis=alt.Axis(format=axis_format, grid=True, tickMinStep=1, labelFlush=True),
        ),
        tooltip=[*tips, *tooltip],
    )
    bars = base.mark_bar(color=colour, cornerRadiusEnd=2)
    labels = base.mark_text(align="left", baseline="middle", dx=4, fontSize=12, color="#1f2937").encode(
        text=alt.Text(f"{value}:Q", format=value_format)
    )
    return alt.layer(bars, labels).properties(title=_title(title, subtitle), height=alt.Step(ROW_HEIGHT))


def donut(
    frame: pd.DataFrame, *, title: str, subtitle: str | None = None, colours: Mapping[str, str] | None = None
) -> alt.LayerChart:
    """Shares of a whole, each slice labelled with its count, the legend naming the slices."""
    total = int(frame["count"].sum()) or 1
    frame = frame.assign(share=frame["count"] / total)
    labels = list(frame["label"])
    palette = dict(colours or {})
    spare = iter(OTHER_COLOURS * (len(labels) // len(OTHER_COLOURS) + 1))
    scale = alt.Scale(domain=labels, range=[palette.get(label) or next(spare) for label in labels])
    base = alt.Chart(frame).encode(
        theta=alt.Theta("count:Q", stack=True),
        order=alt.Order("count:Q", sort="descending"),
        color=alt.Color("label:N", scale=scale, sort=labels, legend=alt.Legend(title=None, orient="right")),
        tooltip=[
            alt.Tooltip("label:N", title="Value"),
            alt.Tooltip("count:Q", title="Listings", format=",d"),
            alt.Tooltip("share:Q", title="Share", format=".0%"),
        ],
    )
    arcs = base.mark_arc(innerRadius=62, outerRadius=122, stroke="white", strokeWidth=2)
    text = base.mark_text(radius=92, fontSize=13, fontWeight="bold").encode(
        text=alt.Text("count:Q", format=",d"), color=alt.value("#1f2937")
    )
    return alt.layer(arcs, text).properties(
        title=_title(title, subtitle), height=320, padding={"left": 12, "top": 6, "right": 6, "bottom": 6}
    )


def heatmap(
    frame: pd.DataFrame,
    *,
    title: str,
    subtitle: str | None = None,
    row_title: str,
    column_title: str,
    row_order: Sequence[str],
    column_order: Sequence[str],
) -> alt.LayerChart:
    """Counts of ``row_label`` × ``column_label`` as coloured cells, each with its count written in it."""
    top = float(frame["count"].max()) if len(frame) else 1.0
    base = alt.Chart(frame).encode(
        x=alt.X(
            "column_label:N",
            sort=list(column_order),
            title=column_title,
            axis=alt.Axis(orient="top", labelAngle=-35, labelLimit=160),
        ),
        y=alt.Y("row_label:N", sort=list(row_order), title=row_title, axis=alt.Axis(labelLimit=LABEL_LIMIT)),
        tooltip=[
            alt.Tooltip("row_label:N", title=row_title),
            alt.Tooltip("column_label:N", title=column_title),
            alt.Tooltip("count:Q", title="Listings", format=",d"),
        ],
    )
    cells = base.mark_rect(stroke="white", strokeWidth=1).encode(
        color=alt.Color(
            "count:Q", scale=alt.Scale(scheme="greens"), legend=alt.Legend(title="Listings", format=",d", tickMinStep=1)
        )
    )
    text = base.mark_text(fontSize=12).encode(
        text=alt.Text("count:Q", format=",d"),
        color=alt.condition(alt.datum.count > top * 0.55, alt.value("white"), alt.value("#1f2937")),
    )
    return alt.layer(cells, text).properties(title=_title(title, subtitle), height=alt.Step(round(ROW_HEIGHT * 1.3)))


def price_histogram(
    frame: pd.DataFrame, *, title: str, subtitle: str | None = None, median: float | None = None
) -> alt.LayerChart:
    """Binned prices (``start``, ``end``, ``count``, ``label``) as touching bars, each non-empty bar labelled with
    its count, and a dashed rule at the median (named in the subtitle)."""
    tooltip = [alt.Tooltip("label:N", title="Start price"), alt.Tooltip("count:Q", title="Listings", format=",d")]
    chart = alt.Chart(frame)
    bars = chart.mark_bar(color=BAR_COLOUR, stroke="white", strokeWidth=0.5).encode(
        x=alt.X("start:Q", bin="binned", title="Start price", axis=alt.Axis(labelExpr=SHORT_DOLLARS)),
        x2="end:Q",
        y=alt.Y("count:Q", title="Listings", axis=alt.Axis(tickMinStep=1)),
        tooltip=tooltip,
    )
    counts = (
        chart.transform_filter(alt.datum.count > 0)
        .transform_calculate(middle="(datum.start + datum.end) / 2")
        .mark_text(baseline="bottom", dy=-2, fontSize=10, color="#1f2937")
        .encode(x="middle:Q", y="count:Q", text=alt.Text("count:Q", format=",d"), tooltip=tooltip)
    )
    layers: list[Any] = [bars, counts]
    if median is not None:
        rule = (
            chart.transform_aggregate(n="count()")
            .transform_calculate(median=f"{float(median)}")
            .mark_rule(color=MEDIAN_COLOUR, strokeDash=[5, 4], strokeWidth=2)
            .encode(x="median:Q", tooltip=[alt.Tooltip("median:Q", title="Median start price", format="$,.0f")])
        )
        layers.append(rule)
    return alt.layer(*layers).properties(title=_title(title, subtitle), height=360)


def show(chart: alt.TopLevelMixin, *, key: str | None = None) -> None:
    """Draws a chart across its container, in the app's theme."""
    st.altair_chart(chart, width="stretch", key=key)
