"""The Market page's charts as people read them, over a catalogue with a year of simulated history: the interval in
progress is drawn as partial (dashed, marked "so far") and said in words; the charts start with the first interval
the history covers whole, which is no spike; grouped by bedrooms the groups are named and ordered as people count
them, on a scale of their own. Each checked against the service's ``market_stats``."""

from __future__ import annotations

import json
import statistics
from datetime import UTC, date, datetime
from typing import Any

import pandas as pd
from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df
from streamlit.testing.v1 import AppTest

from precon.client import Client
from precon.dashboard import market_view as mv
from tests.dashboard_support import history_fixtures, open_page, page_text

PAGE = "views/market.py"
LISTINGS = 200
HISTORY_DAYS = 400


history_data, oracle, dashboard = history_fixtures("market-charts-data", LISTINGS, HISTORY_DAYS)


def today() -> date:
    return datetime.now(UTC).date()


def chart(app: AppTest, field: str) -> tuple[dict[str, Any], pd.DataFrame]:
    """The spec and data of the chart whose y axis is ``field`` (a measure, or ``count`` for the bar charts' first)."""
    for element in app.get("vega_lite_chart"):
        spec = json.loads(element.proto.spec)
        layers = spec.get("layer") or [spec]
        if any(layer.get("encoding", {}).get("y", {}).get("field") == field for layer in layers):
            return spec, convert_arrow_bytes_to_pandas_df(element.proto.datasets[0].data.data)
    raise AssertionError(f"no chart of {field}")


def marks(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [layer["mark"] if isinstance(layer["mark"], dict) else {"type": layer["mark"]} for layer in spec["layer"]]


def asked(client: Client, request: mv.MarketRequest, **more: Any) -> Any:
    return client.market_stats(interval=request.interval, since=request.since(), until=request.until(), **more)


def test_the_interval_in_progress_is_drawn_partial_and_said_in_words(dashboard: None) -> None:
    app = open_page(PAGE)
    assert not app.exception, [e.value for e in app.exception]
    month = f"{today():%b %Y}"
    assert f"{month} is in progress: its figures run to {today():%-d %b %Y}" in page_text(app)
    spec, data = chart(app, "unitsSold")
    assert list(data.loc[data["partial"], "when"].unique()) == [f"{month} (so far)"]
    assert not any(label.endswith("(so far)") for label in data.loc[~data["partial"], "when"])
    dashed = [m for m in marks(spec) if m.get("strokeDash")]
    assert dashed and any(m["type"] == "point" and m.get("filled") is False for m in marks(spec))
    bars, launches = chart(app, "count")  # launches per quarter: the quarter in progress pale
    assert launches.loc[launches["partial"], "when"].unique().tolist() == [
        f"{mv.quarter_label(mv.quarter_of(today()))} (so far)"
    ]
    assert bars["encoding"]["opacity"]["condition"]["test"] == "datum.partial"

    app = open_page(PAGE, {"interval": "quarter"})
    _, data = chart(app, "unitsSold")
    assert list(data.loc[data["partial"], "when"].unique()) == [f"{mv.quarter_label(mv.quarter_of(today()))} (so far)"]
    assert f"{mv.quarter_label(mv.quarter_of(today()))} is in progress" in page_text(app)


def test_a_period_that_ended_has_no_interval_in_progress(dashboard: None) -> None:
    last = mv.add_months(today().replace(day=1), -2)
    app = open_page(PAGE, mv.MarketRequest("month", mv.add_months(last, -8), last).to_params(today()))
    _, data = chart(app, "unitsSold")
    assert not data["partial"].any() and "is in progress" not in page_text(app)


def test_the_charts_start_with_the_first_whole_interval_and_it_is_no_spike(dashboard: None, oracle: Client) -> None:
    app = open_page(PAGE)
    request = mv.default_request(today())
    points = asked(oracle, request).series[0].points
    known = [k for k, p in enumerate(points) if (p.unitsAvailable or 0) > 0 or p.launches > 0]
    recorded = date.fromisoformat(points[known[0]].start[:10])  # the month in which the history began
    whole = date.fromisoformat(points[known[0] + 1].start[:10])
    _, data = chart(app, "unitsSold")
    drawn = list(dict.fromkeys(data["when"]))
    assert drawn[0] == mv.interval_label(whole, "month"), drawn
    assert f"the charts start with {whole:%b %Y}, the first month it covers whole" in page_text(app)
    sold = [p.unitsSold for p in points[known[0] + 1 :]]
    whole_months = sold[:-1] if mv.in_progress(today().replace(day=1), "month", today()) else sold
    assert list(data[~data["partial"]]["unitsSold"]) == whole_months  # the service's figures
    assert whole_months[0] <= 2 * statistics.median(whole_months[1:]), whole_months  # no spike where it starts
    _, launches = chart(app, "count")
    assert launches["when"].iloc[0] != mv.quarter_label(mv.quarter_of(recorded)), "the quarter it began is left out"


def test_grouped_by_bedrooms_the_legend_reads_studio_1_bed_2_bed_in_order_on_its_own_scale(
    dashboard: None, oracle: Client
) -> None:
    request = mv.MarketRequest("month", mv.add_months(today().replace(day=1), -5), today().replace(day=1), "bedrooms")
    app = open_page(PAGE, request.to_params(today()))
    assert not app.exception, [e.value for e in app.exception]
    counts = sorted(float(s.group) for s in asked(oracle, request, group_by="floorPlans.numberOfBedrooms").series)
    spec, data = chart(app, "unitsSold")
    legend = spec["layer"][0]["encoding"]["color"]["scale"]["domain"]
    named = ["Studio" if n == 0 else f"{int(n)} bed + den" if n % 1 else f"{n:g} bed" for n in counts]
    assert legend == named[: len(legend)] and legend[:2] == named[:2]
    assert "All matching listings" not in set(data["group"]), "the market whole is not drawn over the groups"
    assert "the market whole (and every group) is in the tables" in page_text(app)
