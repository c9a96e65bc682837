"""The Changes page under AppTest, over a catalogue with 120 days of simulated market history: its counts and its
table are the service's history for the same window and filters, read here entry by entry; the window round-trips
through the address; bad windows are said, not failed on. And the classification itself, on entries made by hand."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any
from urllib.parse import unquote

import pytest

from precon.client import Client
from precon.client.errors import NotFound
from precon.client.models import HistoryEntry
from precon.dashboard import market_changes as mc
from precon.dashboard.filter_state import FilterState
from tests.dashboard_support import history_fixtures, open_page, page_text

PAGE = "views/changes.py"
LISTINGS = 200
HISTORY_DAYS = 120
PRICE_KINDS = "launch,sellout,increase,cut"


# -- the pure module, on entries made by hand ----------------------------------------------------------------------


def entry(scope: str, field: str | None, before: Any, after: Any, change: str = "updated", **more: Any) -> HistoryEntry:
    return HistoryEntry.model_validate(
        {"at": "2026-11-04T14:00:00Z", "listingId": "L1", "scope": scope, "field": field, "change": change,
         "from": before, "to": after, **more}
    )  # fmt: skip


def kind_of(item: HistoryEntry) -> str | None:
    found = mc.classify(item)
    return None if found is None else found.kind


def test_classification_of_hand_made_entries() -> None:
    assert kind_of(entry("listing", "sellingStatus", "Pending", "Selling Now")) == mc.LAUNCH
    assert kind_of(entry("listing", "sellingStatus", "Selling Now", "Sold Out")) == mc.SELL_OUT
    assert kind_of(entry("listing", "sellingStatus", "Pending", "Sold Out")) == mc.SELL_OUT
    assert kind_of(entry("listing", "sellingStatus", "Selling Now", "Pending")) is None, "a slip is no launch"
    assert kind_of(entry("listing", "sellingStatus", None, "Selling Now")) is None
    assert kind_of(entry("listing", "startPrice", 500_000, 525_000)) == mc.INCREASE
    assert kind_of(entry("listing", "startPrice", 500_000, 450_000)) == mc.CUT
    assert kind_of(entry("listing", "startPrice", None, 450_000)) is None, "a price that appears is no move"
    assert kind_of(entry("listing", "startPrice", 450_000, 0)) is None, "nor one that goes (contact for pricing)"
    assert kind_of(entry("listing", "startPrice", True, 2)) is None
    assert kind_of(entry("floorPlan", "startPrice", 500_000, 525_000)) is None, "a plan's price is not the listing's"
    assert kind_of(entry("unit", "status", "Available", "Sold", unit="1203")) == mc.UNIT_SOLD
    assert kind_of(entry("unit", "status", "Reserved", "Sold", unit="1203")) == mc.UNIT_SOLD
    assert kind_of(entry("unit", "status", "Available", "Reserved")) is None
    assert kind_of(entry("unit", "price", 1, 2)) is None
    assert kind_of(entry("listing", None, None, None, change="created")) is None
    assert mc.classify(entry("listing", "startPrice", 400_000, 500_000)).percent == pytest.approx(25.0)  # type: ignore[union-attr]


def test_summary_medians_and_weeks() -> None:
    entries = [
        entry("listing", "startPrice", 100, 110),
        entry("listing", "startPrice", 100, 120),
        entry("listing", "startPrice", 100, 130),
        entry("listing", "startPrice", 200, 150),
        entry("unit", "status", "Available", "Sold", at="2026-11-09T00:00:00Z"),
        entry("unit", "status", "Available", "Sold", at="2026-11-08T23:59:59Z"),
    ]
    changes = mc.market_changes(entries)
    assert [c.entry.at for c in changes] == sorted((c.entry.at for c in changes), reverse=True)
    summary = mc.summarize(changes)
    assert summary.counts == {mc.LAUNCH: 0, mc.SELL_OUT: 0, mc.INCREASE: 3, mc.CUT: 1, mc.UNIT_SOLD: 2}
    assert summary.median_increase == pytest.approx(20.0) and summary.median_cut == pytest.approx(-25.0)
    weeks = mc.weekly(changes)
    assert weeks[(date(2026, 11, 9), mc.UNIT_SOLD)] == 1, "Monday 9 November starts a week"
    assert weeks[(date(2026, 11, 2), mc.UNIT_SOLD)] == 1 and weeks[(date(2026, 11, 2), mc.INCREASE)] == 3
    assert mc.week_starts(date(2026, 11, 4), date(2026, 11, 16)) == [date(2026, 11, 2), date(2026, 11, 9),
                                                                      date(2026, 11, 16)]  # fmt: skip


def test_windows_from_the_address() -> None:
    assert mc.window_from_params({}) == (mc.Window(30), [])
    assert mc.window_from_params({"window": "365"}) == (mc.Window(365), [])
    window, problems = mc.window_from_params({"from": "2026-10-01", "to": "2026-10-31"})
    assert window == mc.Window(None, date(2026, 10, 1), date(2026, 10, 31)) and problems == []
    assert mc.window_from_params(window.to_params())[0] == window
    assert mc.Window(30).to_params() == {} and mc.Window(7).to_params() == {"window": "7"}
    since, until = window.bounds(date(2026, 11, 27))
    assert mc.iso(since) == "2026-10-01T00:00:00.000Z" and mc.iso(until) == "2026-10-31T23:59:59.999Z"
    assert mc.Window(7).bounds(date(2026, 11, 27)) == (datetime(2026, 11, 20, tzinfo=UTC), None)
    window, problems = mc.window_from_params({"from": "2026-11-20", "to": "2026-11-01"})
    assert window == mc.Window(30) and "ends (1 Nov 2026) before it starts (20 Nov 2026)" in problems[0]
    window, problems = mc.window_from_params({"from": "yesterday"})
    assert window == mc.Window(30) and "“yesterday” is not a date" in problems[0]
    window, problems = mc.window_from_params({"window": "12"})
    assert window == mc.Window(30) and "not one of 7, 30, 90, 365 days" in problems[0]


# -- the page against the service's history ------------------------------------------------------------------------


history_data, oracle, dashboard = history_fixtures("changes-data", LISTINGS, HISTORY_DAYS)


def since_of(days: int) -> str:
    return (datetime.combine(datetime.now(UTC).date() - timedelta(days=days), datetime.min.time(), UTC)).isoformat()


def oracle_changes(client: Client, state: FilterState, **window: str) -> list[tuple[str, HistoryEntry]]:
    """Every entry of the window (not narrowed by field), classified by the page's stated definitions."""
    found = []
    for item in client.iter_changes(
        **window, filter=state.listing_expression(), unit_filter=state.unit_expression(), search=state.text or None
    ):
        pair = (item.scope, item.field) if item.change == "updated" else None
        before, after = item.before, item.after
        if pair == ("listing", "sellingStatus") and (before, after) == ("Pending", "Selling Now"):
            found.append(("launch", item))
        elif pair == ("listing", "sellingStatus") and after == "Sold Out" != before:
            found.append(("sellout", item))
        elif pair == ("listing", "startPrice") and all(isinstance(v, int | float) and v > 0 for v in (before, after)):
            if before != after:
                found.append(("increase" if after > before else "cut", item))
        elif pair == ("unit", "status") and after == "Sold" != before:
            found.append(("unitsold", item))
    return found


def shown_counts(app: Any) -> dict[str, int]:
    labels = {label: kind for kind, label in mc.KIND_LABELS.items()}
    return {labels[m.label]: int(str(m.value).replace(",", "")) for m in app.metric if m.label in labels}


def expected_counts(found: list[tuple[str, HistoryEntry]]) -> dict[str, int]:
    return {kind: sum(1 for k, _ in found if k == kind) for kind in mc.KINDS}


def test_counts_and_table_are_the_history_of_the_window(dashboard: None, oracle: Client) -> None:
    app = open_page(PAGE, {"show": PRICE_KINDS})
    assert not app.exception, [e.value for e in app.exception]
    found = oracle_changes(oracle, FilterState(), since=since_of(30))
    assert shown_counts(app) == expected_counts(found)
    assert sum(expected_counts(found).values()) > 0, "the simulated history has changes in 30 days"

    app = open_page(PAGE, {"window": "90", "show": PRICE_KINDS})
    found = oracle_changes(oracle, FilterState(), since=since_of(90))
    assert shown_counts(app) == expected_counts(found)
    listed = [(kind, item) for kind, item in found if kind != mc.UNIT_SOLD]
    assert 0 < len(listed) <= 25, "a page of the table holds them all"
    table = app.dataframe[0].value
    ids = [unquote(link.split("id=", 1)[1].split("#", 1)[0]) for link in table["listing"]]
    assert sorted(zip(ids, table["at"], strict=True)) == sorted((i.listingId, i.at) for _, i in listed)
    assert list(table["at"]) == sorted(table["at"], reverse=True), "newest first"
    names = {x.id: x.name for x in oracle.multiple_listings(sorted(set(ids)), retrieve_attributes=["name"])}
    assert all(link.endswith(f"#{names.get(i, i)}") for i, link in zip(ids, table["listing"], strict=True))


def test_counts_follow_the_shared_filters(dashboard: None, oracle: Client) -> None:
    state = FilterState().with_value("type", "Condo").with_value("selling", "Selling Now")
    app = open_page(PAGE, {**state.to_params(), "window": "90"})
    assert not app.exception, [e.value for e in app.exception]
    found = oracle_changes(oracle, state, since=since_of(90))
    assert shown_counts(app) == expected_counts(found)
    everything = oracle_changes(oracle, FilterState(), since=since_of(90))
    assert len(found) < len(everything), "the filters narrowed the changes"


def test_the_window_round_trips_through_the_address(dashboard: None, oracle: Client) -> None:
    app = open_page(PAGE, {"window": "7"})
    assert app.query_params.get("window") == "7"
    assert app.session_state["changes_window"] == "7"
    app.segmented_control(key="changes_window").set_value("365").run()
    assert app.query_params.get("window") == "365"
    assert shown_counts(app) == expected_counts(oracle_changes(oracle, FilterState(), since=since_of(365)))
    app.segmented_control(key="changes_window").set_value("30").run()
    assert "window" not in app.query_params, "the default is left out"
    app.segmented_control(key="changes_window").set_value("dates").run()
    assert {"from", "to"} <= set(app.query_params)
    app = open_page(PAGE, {"from": "2026-10-01", "to": "2026-10-31"})
    assert app.date_input(key="changes_from").value == date(2026, 10, 1)
    assert app.date_input(key="changes_to").value == date(2026, 10, 31)
    found = oracle_changes(oracle, FilterState(), since="2026-10-01T00:00:00Z", until="2026-10-31T23:59:59.999Z")
    assert shown_counts(app) == expected_counts(found)


@pytest.mark.parametrize(
    ("query", "said"),
    [
        ({"from": "2026-11-20", "to": "2026-11-01"}, "ends (1 Nov 2026) before it starts (20 Nov 2026)"),
        ({"from": "not-a-date"}, "“not-a-date” is not a date like 2026-11-01"),
        ({"to": "2026-02-30"}, "“2026-02-30” is not a date"),
        ({"window": "12"}, "not one of 7, 30, 90, 365 days"),
    ],
)
def test_bad_windows_are_said_and_the_page_still_works(dashboard: None, query: dict[str, str], said: str) -> None:
    app = open_page(PAGE, query)
    assert not app.exception, [e.value for e in app.exception]
    assert said in "\n".join(w.value for w in app.warning)
    assert len(shown_counts(app)) == len(mc.KINDS), "the counts are there, for the default window"
    assert not set(query) & set(app.query_params), "the address keeps only what is in use"


def test_a_deployment_without_changes_is_told_what_to_do(dashboard: None, monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(self: Client, **asked: Any) -> Any:
        raise NotFound("Not Found", status=404)

    monkeypatch.setattr(Client, "iter_changes", missing)
    app = open_page(PAGE)
    assert not app.exception, [e.value for e in app.exception]
    text = page_text(app)
    assert "keeps no history of the market" in text and "precon catalogue mirror" in text
    assert not app.metric
