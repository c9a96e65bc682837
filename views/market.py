"""Market: the numbers analysts of this market publish every quarter, for any filter: units sold (absorption),
unsold inventory and sell-through, launches, median prices and price per square foot of what is left, and price
moves, month by month or quarter by quarter, for the market whole and per city, builder, type or bedrooms.

Under the shared filters of Search, Map and Facets (in the address as theirs are); the page's own address
parameters are ``interval`` (``quarter``; months are left out), ``since`` and ``until`` (months, ``2025-03``) and
``groupBy`` (``city``, ``builder``, ``type``, ``bedrooms``). The figures are the service's ``market_stats``; the work
is :mod:`precon.dashboard.market_view` and :mod:`components.market_stats`.
"""

from __future__ import annotations

import streamlit as st

from components import api, freshness, history_filters, shared_filters
from components import market_stats as ms
from components.formatting import plural
from precon.dashboard import market_view as mv

st.title("Market")
state, problems = shared_filters.current("market")
request, request_problems = ms.read_request()
for problem in problems:
    st.warning(f"This link had a value that could not be used. {problem}", icon=":material/link_off:")
for problem in request_problems:
    st.warning(problem, icon=":material/date_range:")

history_filters.search_box("market", state)
ms.controls(request)

matched = history_filters.chips_and_panel("market", state)
scope, total, names = matched.scope, matched.total, matched.names

try:
    with api.guarded(), st.spinner("Counting the market…"):
        stats = ms.fetch(scope, request, names)
except ms.StatsMissing:
    st.warning(ms.missing_note(), icon=":material/history_toggle_off:")
    st.stop()
freshness.show()
if stats.group_problem:
    st.warning(
        f"The service could not group by {request.group_label.lower()}: {stats.group_problem} The market whole is "
        "shown.", icon=":material/rule:",
    )  # fmt: skip

grouped = f", {plural(stats.group_count(), 'group')}" if stats.grouped else ""
drawn = f"the first {ms.CHART_GROUPS} groups" if stats.group_count() > ms.CHART_GROUPS else "each group"
over = (
    "over the units that meet the floor plan and unit filters, each in its state when counted (a sale by its state "
    f"just before it), in the listings matching the other filters now{grouped}" if scope.unit_filter is not None else
    f"over the units of the {plural(total, 'listing')} matching the filters now{grouped}"
)  # fmt: skip
st.caption(
    f"{request.describe()} (UTC), {over}."
    + (f" Charts draw {drawn} on a scale of its own; the market whole (and every group) is in the tables." if
       stats.grouped else "")
)  # fmt: skip
recorded, whole = stats.recorded_from(), stats.whole_from()
if recorded is not None and whole is not None:
    st.caption(
        f"The history of these listings starts in {mv.interval_label(recorded.date(), request.interval)}, part way "
        f"through it: the charts start with {mv.interval_label(whole.date(), request.interval)}, the first "
        f"{request.interval} it covers whole (the first one would count only part of its sales, and every listing "
        "first seen selling as a launch). The tables and CSVs keep every interval asked for (zeros before it)."
    )
if (progress := ms.in_progress_note(stats, request.interval)) is not None:
    st.caption(progress)
if stats.total.empty:
    st.info("No interval in this period: widen it.", icon=":material/event_busy:")
    st.stop()

interval = request.interval
st.subheader("Units sold")
ms.line_chart(stats, "unitsSold", "", "Units sold", ",d", interval, "market_sold_chart")
st.caption(
    f"Units whose status became Sold in each {interval}, from the history of the listings matching now. A unit first "
    "seen already sold (sold before its listing was recorded) is not counted."
)
ms.table_and_csv(ms.table(stats, [("unitsSold", "Units sold")], interval), "units-sold", "market_sold")

st.subheader("Unsold inventory and sell-through")
left, right = st.columns(2)
with left:
    ms.line_chart(stats, "unitsAvailable", "Units available", "Units available", ",d", interval, "market_avail_chart")
with right:
    ms.line_chart(stats, "sellThrough", "Sell-through", "Sold / all units", ".0%", interval, "market_through_chart")
st.caption(
    f"At each {interval}'s end, replayed from history: units Available then, and units Sold then over all units that "
    "existed then (reserved units count as neither available nor sold)."
)
ms.table_and_csv(
    ms.table(stats, [("unitsAvailable", "Units available"), ("sellThrough", "Sell-through")], interval),
    "inventory", "market_inventory",
)  # fmt: skip

st.subheader("Launches per quarter")
launches = ms.launch_frame(stats)
first_quarter = ms.first_whole_quarter(stats)
drawn_launches = launches.assign(
    when=[q + (mv.SO_FAR if q == mv.quarter_label(mv.quarter_of(ms.today())) else "") for q in launches["when"]]
)
if first_quarter is not None:
    quarters = list(launches["when"])
    label = mv.quarter_label(first_quarter)
    drawn_launches = drawn_launches.iloc[quarters.index(label) if label in quarters else len(quarters) :]
ms.bar_chart(drawn_launches, [("launches", "Listings launched", "+")], "", "Listings", "market_launch")
st.caption(
    "Listings whose selling status became Selling Now in each quarter; a listing first recorded as Selling Now counts "
    "in the quarter it was recorded."
)
ms.table_and_csv(launches.rename(columns={"when": "Quarter", "launches": "Listings launched"}), "launches",
                 "market_launches")  # fmt: skip

st.subheader("Prices of what is left")
left, right = st.columns(2)
with left:
    ms.line_chart(
        stats, "medianPrice", "Median price", "Median price ($)", "$,.0f", interval, "market_price_chart", zero=False
    )
with right:
    ms.line_chart(
        stats, "medianPricePerSqFt", "Median price per sq ft", "$ per sq ft", "$,.0f", interval, "market_psf_chart",
        zero=False,
    )  # fmt: skip
st.caption(
    f"Over the units Available at each {interval}'s end, at their price then: the median price, and the median of "
    "each unit's price over its floor plan's square feet (units without a price or a size are left out). Blank where "
    "no unit was available."
)
ms.table_and_csv(
    ms.table(stats, [("medianPrice", "Median price"), ("medianPricePerSqFt", "Median $/sq ft")], interval),
    "prices", "market_prices",
)  # fmt: skip

st.subheader("Price changes")
moves = stats.total.assign(when=ms.when_labels(stats.total, interval))
moves = moves if whole is None else moves[moves["start"] >= whole]
ms.bar_chart(
    moves, [("priceIncreases", "Increases", "+"), ("priceCuts", "Cuts", "-")], f"Unit price changes per {interval}",
    "Units", "market_moves",
)  # fmt: skip
st.caption(
    f"Unit price entries in each {interval}: a unit whose price went up counts as an increase, down as a cut (cuts "
    "drawn below the axis), for the market whole; the table has each group."
)
ms.table_and_csv(
    ms.table(stats, [("priceIncreases", "Increases"), ("priceCuts", "Cuts")], interval), "price-changes",
    "market_price_changes",
)  # fmt: skip
