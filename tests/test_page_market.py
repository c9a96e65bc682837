"""The Market page under AppTest, over a catalogue with a year of simulated history: every table shows what the
service's ``market_stats`` answers for the same filters, period, interval and grouping (the service's figures are
held to a replay of ``changes`` by tests/test_service_market.py); its state round-trips through the address; values it
cannot use are said and the rest of the page works; a deployment without history is told what to do."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from components import market_stats as ms
from precon.client import Client
from precon.client.errors import NotFound
from precon.client.market_models import MarketStats
from precon.dashboard import labels as words
from precon.dashboard import market_view as mv
from precon.dashboard.filter_state import FilterState
from tests.dashboard_support import history_fixtures, open_page, page_text

PAGE = "views/market.py"
LISTINGS = 200
HISTORY_DAYS = 400


history_data, oracle, dashboard = history_fixtures("market-data", LISTINGS, HISTORY_DAYS)


def today() -> date:
    return datetime.now(UTC).date()


def asked(client: Client, request: mv.MarketRequest, state: FilterState, **more: Any) -> MarketStats:
    return client.market_stats(
        filter=state.listing_expression(), unit_filter=state.unit_expression(), search=state.text or None,
        interval=request.interval, since=request.since(), until=request.until(), **more,  # type: ignore[arg-type]
    )  # fmt: skip


def table_values(app: AppTest, index: int) -> pd.DataFrame:
    return app.dataframe[index].value


def column(stats: MarketStats, measure: str, group: int = 0) -> list[Any]:
    return [getattr(point, measure) for point in stats.series[group].points]


def same(shown: pd.Series, expected: list[Any]) -> bool:
    values = [None if pd.isna(v) else v for v in shown]
    return values == [None if v is None else v for v in expected]


SECTIONS = {
    0: [("unitsSold", "Units sold")],
    1: [("unitsAvailable", "Units available"), ("sellThrough", "Sell-through")],
    3: [("medianPrice", "Median price"), ("medianPricePerSqFt", "Median $/sq ft")],
    4: [("priceIncreases", "Increases"), ("priceCuts", "Cuts")],
}
"""The tables of measures by interval, in the page's order (table 2 is launches by quarter)."""


def assert_tables_match(app: AppTest, stats: MarketStats, request: mv.MarketRequest) -> None:
    assert not app.exception, [e.value for e in app.exception]
    labels = [mv.interval_label(date.fromisoformat(p.start[:10]), request.interval) for p in stats.series[0].points]
    for index, measures in SECTIONS.items():
        shown = table_values(app, index)
        assert list(shown["Interval"]) == labels
        for measure, label in measures:
            name = label if label in shown.columns else f"{label} · {ms.TOTAL}"
            assert same(shown[name], column(stats, measure)), (index, measure)
    launches = table_values(app, 2)
    by_quarter: dict[str, int] = {}
    for point in stats.series[0].points:
        key = mv.quarter_label(mv.quarter_of(date.fromisoformat(point.start[:10])))
        by_quarter[key] = by_quarter.get(key, 0) + point.launches
    assert dict(zip(launches["Quarter"], launches["Listings launched"], strict=True)) == by_quarter


def test_the_tables_are_the_services_figures(dashboard: None, oracle: Client) -> None:
    app = open_page(PAGE)
    request = mv.default_request(today())
    stats = asked(oracle, request, FilterState())
    assert_tables_match(app, stats, request)
    assert sum(column(stats, "unitsSold")) > 0 and sum(p.launches for p in stats.series[0].points) >= 0
    text = page_text(app)
    assert "Units whose status became Sold" in text and "replayed from history" in text


def test_filters_and_quarters(dashboard: None, oracle: Client) -> None:
    state = FilterState().with_value("type", "Condo")
    first = mv.add_months(today().replace(day=1), -11)
    request = mv.MarketRequest("quarter", first, today().replace(day=1))
    app = open_page(PAGE, {**state.to_params(), **request.to_params(today())})
    stats = asked(oracle, request, state)
    assert_tables_match(app, stats, request)
    everything = asked(oracle, request, FilterState())
    assert sum(column(stats, "unitsAvailable")) < sum(column(everything, "unitsAvailable")), "the filter narrowed"


def test_unit_filters_choose_the_units_counted(dashboard: None, oracle: Client) -> None:
    """Bedrooms on the Market page count the 2-bedroom units (the service's bedrooms group ``2``), not every unit of
    the listings having a 2-bedroom plan; the page says so."""
    state = FilterState().with_range("beds", 2, 2)
    first = mv.add_months(today().replace(day=1), -11)
    request = mv.MarketRequest("month", first, today().replace(day=1))
    app = open_page(PAGE, {**state.to_params(), **request.to_params(today())})
    stats = asked(oracle, request, state)
    assert_tables_match(app, stats, request)
    grouped = asked(oracle, request, FilterState(), group_by="floorPlans.numberOfBedrooms")
    two = next(k for k, series in enumerate(grouped.series) if series.group == "2")
    assert column(stats, "unitsSold") == column(grouped, "unitsSold", two)
    assert column(stats, "unitsAvailable") == column(grouped, "unitsAvailable", two)
    assert "units that meet the floor plan and unit filters" in page_text(app)


def test_grouped_by_city_a_column_per_group(dashboard: None, oracle: Client) -> None:
    request = mv.MarketRequest("month", mv.add_months(today().replace(day=1), -5), today().replace(day=1), "city")
    app = open_page(PAGE, request.to_params(today()))
    assert not app.exception, [e.value for e in app.exception]
    grouped = asked(oracle, request, FilterState(), group_by="cityOrDistrict")
    total = asked(oracle, mv.MarketRequest(request.interval, request.first, request.last), FilterState())
    shown = table_values(app, 0)
    assert same(shown["Units sold · All matching listings"], column(total, "unitsSold"))
    for k, series in enumerate(grouped.series):
        assert same(shown[f"Units sold · {series.group}"], column(grouped, "unitsSold", k)), series.group
    assert len(shown.columns) == 2 + len(grouped.series)


def test_grouped_by_bedrooms_a_column_per_bedroom_count_named_and_ordered_as_people_say_them(
    dashboard: None, oracle: Client
) -> None:
    request = mv.MarketRequest("month", mv.add_months(today().replace(day=1), -5), today().replace(day=1), "bedrooms")
    app = open_page(PAGE, request.to_params(today()))
    assert not app.exception, [e.value for e in app.exception]
    assert not [w.value for w in app.warning]
    grouped = asked(oracle, request, FilterState(), group_by="floorPlans.numberOfBedrooms")
    assert len(grouped.series) > 1 and all(float(s.group or "x") >= 0 for s in grouped.series)
    counts = sorted(float(s.group or "0") for s in grouped.series)
    named = ["Studio" if n == 0 else f"{int(n)} bed + den" if n % 1 == 0.5 else f"{n:g} bed" for n in counts]
    for index, measures in SECTIONS.items():
        shown = table_values(app, index)
        assert [c.partition(" · ")[2] for c in shown.columns[2:]][: len(named)] == named, "in bedroom order"
        for k, series in enumerate(grouped.series):
            group = words.group_label("floorPlans.numberOfBedrooms", series.group)
            assert group.endswith(("bed", "Studio", "den")), group
            for measure, label in measures:
                assert same(shown[f"{label} · {group}"], column(grouped, measure, k)), (label, series.group)


def test_the_controls_write_the_address(dashboard: None, oracle: Client) -> None:
    app = open_page(PAGE)
    assert not app.query_params.get("interval")
    app.segmented_control(key="market_interval").set_value("quarter").run()
    assert app.query_params.get("interval") == "quarter"
    app.selectbox(key="market_group").set_value("type").run()
    assert app.query_params.get("groupBy") == "type"
    first = mv.add_months(today().replace(day=1), -3)
    app.selectbox(key="market_since").set_value(first).run()
    assert app.query_params.get("since") == f"{first:%Y-%m}"
    request = mv.MarketRequest("quarter", first, today().replace(day=1), "type")
    assert_tables_match(app, asked(oracle, request, FilterState()), request)
    app.segmented_control(key="market_interval").set_value("month").run()
    assert "interval" not in app.query_params, "the default is left out"


@pytest.mark.parametrize(
    ("query", "said"),
    [
        ({"interval": "week"}, "“week” is not one of month or quarter"),
        ({"since": "2025-06", "until": "2025-01"}, "starts after it ends"),
        ({"since": "1990-01"}, "longer than 10 years"),
        ({"groupBy": "postalCode"}, "not a grouping this page offers"),
    ],
)
def test_values_it_cannot_use_are_said_and_the_page_works(dashboard: None, query: dict[str, str], said: str) -> None:
    app = open_page(PAGE, query)
    assert not app.exception, [e.value for e in app.exception]
    assert said in "\n".join(w.value for w in app.warning)
    assert len(app.dataframe) == 5, "every section is there, for the defaults"
    assert not set(query) & set(app.query_params), "the address keeps only what is in use"


def test_a_grouping_the_version_hides_is_said_and_the_market_whole_shown(dashboard: None) -> None:
    app = open_page(PAGE, {"groupBy": "bedrooms"})
    assert not app.exception, [e.value for e in app.exception]
    assert not [w.value for w in app.warning], "v1 groups by bedrooms"
    app.selectbox(key="_version_choice").set_value("v1-lite").run()  # the sidebar's choice, as a user makes it
    assert not app.exception, [e.value for e in app.exception]
    warned = "\n".join(w.value for w in app.warning)
    assert "could not group by bedrooms" in warned, warned
    assert len(app.dataframe) == 5


def test_a_deployment_without_market_stats_is_told_what_to_do(dashboard: None, monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(self: Client, **asked: Any) -> Any:
        raise NotFound("Not Found", status=404)

    monkeypatch.setattr(Client, "market_stats", missing)
    app = open_page(PAGE)
    assert not app.exception, [e.value for e in app.exception]
    text = page_text(app)
    assert "keeps no history of the market" in text and "precon catalogue mirror" in text
    assert not app.dataframe
