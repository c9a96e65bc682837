"""The Changes page's weekly chart shows what "Show" picks, as the table does: with launches and cuts picked, the
chart holds no "Units sold" (which outnumber everything else and flatten the rest), its totals per kind are the
service's history for the window, and its subtitle says which kinds it shows. Over 120 days of simulated market."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df
from streamlit.testing.v1 import AppTest

from precon.client import Client
from precon.dashboard import market_changes as mc
from precon.dashboard.filter_state import FilterState
from tests.dashboard_support import history_fixtures, open_page
from tests.test_page_changes import expected_counts, oracle_changes, since_of

PAGE = "views/changes.py"
LISTINGS = 200
HISTORY_DAYS = 120


history_data, oracle, dashboard = history_fixtures("changes-chart-data", LISTINGS, HISTORY_DAYS)


def weekly_chart(app: AppTest) -> tuple[dict[str, Any], pd.DataFrame]:
    for element in app.get("vega_lite_chart"):
        spec = json.loads(element.proto.spec)
        if spec.get("title", {}).get("text") == "Changes per week":
            return spec, convert_arrow_bytes_to_pandas_df(element.proto.datasets[0].data.data)
    raise AssertionError("no weekly chart")


def chart_totals(data: pd.DataFrame) -> dict[str, int]:
    kinds = {label: kind for kind, label in mc.KIND_LABELS.items()}
    return {kinds[label]: int(total) for label, total in data.groupby("kind")["count"].sum().items()}


def table_total(app: AppTest) -> int:
    """The number of changes the table lists, from its pager ("changes 1–25 of N")."""
    pager = next(m.value for m in app.markdown if "Page " in m.value and " of " in m.value)
    return int(pager.rsplit(" of ", 1)[1].split("<", 1)[0].replace(",", ""))


def test_the_chart_shows_the_kinds_show_picks(dashboard: None, oracle: Client) -> None:
    app = open_page(PAGE, {"window": "90", "show": "launch,cut"})
    assert not app.exception, [e.value for e in app.exception]
    found = expected_counts(oracle_changes(oracle, FilterState(), since=since_of(90)))
    assert found[mc.UNIT_SOLD] > 0 and found[mc.LAUNCH] + found[mc.CUT] > 0, "the history has both to tell apart"

    spec, data = weekly_chart(app)
    assert mc.KIND_LABELS[mc.UNIT_SOLD] not in set(data["kind"]), "no units sold when Show leaves them out"
    assert set(data["kind"]) <= {mc.KIND_LABELS[mc.LAUNCH], mc.KIND_LABELS[mc.CUT]}
    totals = chart_totals(data)
    assert {kind: totals.get(kind, 0) for kind in (mc.LAUNCH, mc.CUT)} == {k: found[k] for k in (mc.LAUNCH, mc.CUT)}
    assert sum(totals.values()) == table_total(app), "the chart counts what the table lists"
    assert "Showing Launches and Price cuts" in spec["title"]["subtitle"]
    assert spec["encoding"]["color"]["scale"]["domain"] == ["Launches", "Price cuts"], "the legend names only them"

    # Picking units sold again, on the page: the chart follows the pills.
    app.pills(key="changes_show").set_value(["launch", "cut", "unitsold"]).run()
    assert app.query_params.get("show") == "launch,cut,unitsold"
    spec, data = weekly_chart(app)
    assert chart_totals(data) == {k: found[k] for k in (mc.LAUNCH, mc.CUT, mc.UNIT_SOLD) if found[k]}
    assert sum(chart_totals(data).values()) == table_total(app)

    app = open_page(PAGE, {"window": "90"})
    spec, data = weekly_chart(app)
    assert chart_totals(data) == {kind: count for kind, count in found.items() if count}, "every kind by default"
    assert "Showing all kinds" in spec["title"]["subtitle"]
