"""The Search page under AppTest, used the way people use it: journeys of several steps and seeded random sequences
of actions. After every step the address must hold clean values (never a label or a count), and what the page shows
(the result count, the counts beside each value, the chips) must equal what the API answers for the same filters."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from typing import Any

import pytest
import streamlit as st
from hypothesis import HealthCheck, settings
from hypothesis import strategies as hs
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule
from streamlit.testing.v1 import AppTest

from components import filter_chips
from components import filter_panel as panel
from components.api import connection
from components.result_cards import card_html, highlight_runs, runs_html
from precon.client.models import Listing
from precon.dashboard import labels
from precon.dashboard.filter_state import FACET_BY_PARAM, FACETS, PARAMS, FilterState
from precon.dashboard.listing_search import matched_plans
from precon.schema import SEARCHABLE_LISTING_FIELDS
from tests.dashboard_support import (  # noqa: F401
    DASHBOARD_LISTINGS,
    assert_readable_failure,
    dashboard_data,
    embedded_dashboard,
    failing_service,
    open_page,
    page_text,
    reset_caches,
)
from tests.production_like import production_like_service

SEARCH = "views/search.py"
COUNT_IN_TEXT = re.compile(r"\(\d[\d,]*\)|·\s*\d")
ANALYST = {"type": "Condo", "selling": "Selling Now", "beds": "2..", "price": "..800000"}


# -- reading the page ---------------------------------------------------------------------------------------------


def address(app: AppTest) -> dict[str, str]:
    return {k: v if isinstance(v, str) else v[-1] for k, v in app.query_params.items()}


def shown_state(app: AppTest) -> FilterState:
    state, problems = FilterState.from_params({k: v for k, v in address(app).items() if k in PARAMS})
    assert problems == [], problems
    return state


def shown_total(app: AppTest) -> int:
    for markdown in app.markdown:
        found = re.match(r"\*\*([\d,]+) results?\*\*", markdown.value)
        if found:
            return int(found.group(1).replace(",", ""))
    raise AssertionError(f"no result count on the page:\n{page_text(app)}")


def shown_ids(app: AppTest) -> list[str]:
    if not app.dataframe:
        return []
    return list(app.dataframe[0].value["id"])


def chips(app: AppTest) -> list[str]:
    return [b.label for b in app.button if b.key and b.key.startswith("search_chip_")]


def chip_keys(app: AppTest) -> list[str]:
    return [b.key for b in app.button if b.key and b.key.startswith("search_chip_")]


def value_boxes(app: AppTest, param: str) -> dict[str, tuple[str, bool]]:
    """The refinement list of one facet: value → (label, checked), read back through the keys' digests."""
    boxes = {b.key: b for b in app.checkbox if b.key and b.key.startswith(f"rf_{param}_")}
    found = {}
    for key, box in boxes.items():
        found[key] = (box.label, box.value)
    return found


def healthy(app: AppTest) -> AppTest:
    assert not app.exception, [e.value for e in app.exception]
    assert not app.error, [e.value for e in app.error]
    return app


def client() -> Any:
    return connection().client


def oracle_total(state: FilterState) -> int:
    return (
        client()
        .search_listings(
            state.text or None, per_page=0, filter=state.listing_expression(), unit_filter=state.unit_expression()
        )
        .total
    )


def label_value(label: str) -> tuple[str, int]:
    name, _, count = label.rpartition(" · ")
    return name, int(count.replace(",", ""))


def assert_clean(app: AppTest) -> None:
    """The address holds values only, the chips read without counts, and every number shown is the API's."""
    healthy(app)
    state = shown_state(app)
    for param, values in state.facets.items():
        for value in values:
            assert not COUNT_IN_TEXT.search(value), (param, value)
    for label in chips(app):
        assert not COUNT_IN_TEXT.search(label), label
    assert shown_total(app) == oracle_total(state)
    assert len(chips(app)) == state.count + (1 if state.text else 0)
    for facet in FACETS:
        boxes = value_boxes(app, facet.param)
        if not boxes:
            continue
        others = FilterState(state.text, {p: v for p, v in state.facets.items() if p != facet.param}, state.ranges)
        others = others.with_available(state.available)
        counts = client().facet_counts(
            [facet.attr], filter=others.listing_expression(), unit_filter=others.unit_expression(),
            search=state.text or None,
        ).get(facet.attr, {})  # fmt: skip
        chosen = set(state.facets.get(facet.param, ()))
        for key, (label, checked) in boxes.items():
            value = next(v for v in [*counts, *chosen] if key.startswith(panel._value_key(facet.param, v)))
            assert checked == (value in chosen), (facet.param, value)
            _, count = label_value(label)
            assert count == counts.get(value, 0), (facet.param, value, label)


def pick(app: AppTest, param: str, value: str) -> AppTest:
    app.checkbox(key=panel._value_key(param, value)).check().run()
    return app


def first_unchecked(app: AppTest, param: str) -> str:
    state = shown_state(app)
    counts = (
        client()
        .facet_counts(
            [FACET_BY_PARAM[param].attr],
            filter=state.listing_expression(without=param),
            unit_filter=state.unit_expression(),
        )
        .get(FACET_BY_PARAM[param].attr, {})
    )
    keys = {b.key for b in app.checkbox if b.key and b.key.startswith(f"rf_{param}_") and not b.value}
    for value in counts:
        if panel._value_key(param, value) in keys:
            return value
    raise AssertionError(f"no value of {param} to pick")


# -- journeys -----------------------------------------------------------------------------------------------------


@pytest.mark.usefixtures("embedded_dashboard")
def test_pick_pick_pick_slide_remove_page_sort_keeps_every_value_clean() -> None:
    app = healthy(open_page(SEARCH))
    assert_clean(app)
    pick(app, "type", "Condo")
    assert_clean(app)
    assert address(app)["type"] == "Condo"
    selling = first_unchecked(app, "selling")
    pick(app, "selling", selling)
    assert_clean(app)
    city = first_unchecked(app, "city")
    pick(app, "city", city)
    assert_clean(app)
    assert shown_state(app).facets == {"type": ("Condo",), "selling": (selling,), "city": (city,)}
    # the next action of any kind must leave the chosen values as they were
    slider = app.select_slider(key="rf_range_beds")
    slider.set_value((1.0, slider.value[1])).run()
    assert_clean(app)
    assert address(app)["beds"] == "1.."
    assert shown_state(app).facets == {"type": ("Condo",), "selling": (selling,), "city": (city,)}
    app.button(key=filter_chips.chip_key("search", "type", "Condo")).click().run()
    assert_clean(app)
    assert shown_state(app).facets == {"selling": (selling,), "city": (city,)}
    assert "type" not in address(app)
    if not app.button(key="search_next").disabled:
        app.button(key="search_next").click().run()
        assert_clean(app)
        assert address(app)["page"] == "2"
    app.selectbox(key="search_sort").set_value("price_asc").run()
    assert_clean(app)
    assert address(app)["sort"] == "price_asc" and "page" not in address(app)
    assert shown_state(app).facets == {"selling": (selling,), "city": (city,)}
    app.button(key=filter_chips.clear_key("search")).click().run()
    assert_clean(app)
    assert not {k for k in address(app) if k in PARAMS}


@pytest.mark.usefixtures("embedded_dashboard")
def test_show_more_and_the_search_box_reach_every_builder() -> None:
    builders = list(client().iter_profiles(collection="Builders", per_page=1000))
    counts = client().facet_counts(["builders"]).get("builders", {})
    app = healthy(open_page(SEARCH))
    shown = len(value_boxes(app, "builder"))
    app.button(key="rf_more_button_builder").click().run()
    assert len(value_boxes(healthy(app), "builder")) > shown
    # a builder with listings but not among the shown values is found by a word of its name
    listed = {b.path: b for b in builders if b.path in counts}
    visible = {v for v in counts if panel._value_key("builder", v) in {b.key for b in app.checkbox}}
    target = next(b for path, b in sorted(listed.items()) if path not in visible)
    word = target.name.split()[0]
    app.text_input(key="rf_find_builder").input(word).run()
    healthy(app)
    assert not shown_state(app).facets, "searching values selects nothing by itself"
    key = panel._value_key("builder", target.path) + "_found"
    box = app.checkbox(key=key)
    assert target.name in box.label
    box.check().run()
    assert_clean(app)
    assert shown_state(app).facets == {"builder": (target.path,)}
    assert address(app)["builder"] == target.path.removeprefix("Builders/")


@pytest.mark.usefixtures("embedded_dashboard")
def test_bad_values_in_the_address_are_reported_and_the_address_cleaned() -> None:
    app = healthy(open_page(SEARCH, {"price": "abc", "beds": "9..2", "sort": "cheapest", "type": "Condo"}))
    warnings = "\n".join(w.value for w in app.warning)
    assert "“abc” is not a number" in warnings
    assert "“9..2” runs backwards" in warnings
    assert "Sort “cheapest”" in warnings
    assert address(app) == {"type": "Condo"}
    assert_clean(app)
    app = healthy(open_page(SEARCH, {"page": "500"}))
    assert "Page 500 is past the end" in "\n".join(w.value for w in app.warning)
    assert f"Page {-(-client().search_listings(per_page=0).total // 20)} of" in page_text(app)


@pytest.mark.usefixtures("embedded_dashboard")
@pytest.mark.parametrize("sort", ["relevance", "price_asc"])
def test_the_analyst_question_every_result_has_a_matching_plan(sort: str) -> None:
    app = healthy(open_page(SEARCH, {**ANALYST, "per": "100", "sort": sort}))
    assert_analyst_answer(app)


def assert_analyst_answer(app: AppTest) -> None:
    state = shown_state(app)
    unit = state.unit_expression()
    assert unit is not None
    every = list(client().iter_listings(per_page=1000, filter=state.listing_expression()))
    expected = [lst.id for lst in every if matched_plans(lst, unit).count]
    assert 0 < len(expected) < len(every), "the answer must differ from the listing-level one"
    assert shown_total(app) == len(expected)
    assert sorted(shown_ids(app)) == sorted(expected[:100])
    units = list(app.dataframe[0].value["units"])
    assert all(re.match(r"\d+ of \d+ · (from \$[\d,]+|price on request)$", text) for text in units), units
    for listing_id in shown_ids(app):
        plans = client().get_listing(listing_id).floorPlans
        assert any((p.numberOfBedrooms or 0) >= 2 and p.startPrice and p.startPrice <= 800_000 for p in plans)


@pytest.fixture
def production_like_dashboard(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[str]:
    with production_like_service(tmp_path_factory.mktemp("standin"), DASHBOARD_LISTINGS) as url:
        from precon.service.config import DEV_API_KEY, DEV_PRODUCT_ID

        monkeypatch.setenv("PRECON_API_URL", url)
        monkeypatch.setenv("PRECON_API_KEY", DEV_API_KEY)
        monkeypatch.setenv("PRECON_PRODUCT_ID", DEV_PRODUCT_ID)
        monkeypatch.setenv("PRECON_CACHE_URL", "memory:")
        reset_caches()
        yield url
        reset_caches()


@pytest.mark.usefixtures("production_like_dashboard")
def test_without_unit_filter_the_dashboard_checks_floor_plans_itself_and_says_so() -> None:
    app = healthy(open_page(SEARCH, {**ANALYST, "per": "100"}))
    assert "checked them itself" in page_text(app)
    state = shown_state(app)
    every = list(client().iter_listings(per_page=1000, filter=state.listing_expression()))
    expected = [lst.id for lst in every if matched_plans(lst, state.unit_expression()).count]  # type: ignore[arg-type]
    assert shown_total(app) == len(expected) > 0
    assert shown_ids(app) == expected[:100]
    again = healthy(open_page(SEARCH, address(app)))  # a copied link reopens the same view
    assert shown_ids(again) == shown_ids(app)
    # the builder search falls back to finding profiles by name
    app.text_input(key="rf_find_builder").input("a").run()
    assert any(b.key.endswith("_found") for b in healthy(app).checkbox if b.key)


@pytest.mark.usefixtures("embedded_dashboard")
def test_each_result_says_where_the_search_words_were_found() -> None:
    """A word found in most listings ("park"): each row of the table names the fields it was found in and the text
    found there, checked against the listing's own fields from the API; many were found off the table."""
    app = healthy(open_page(SEARCH, {"q": "park"}))
    frame = app.dataframe[0].value
    assert "matched" in frame.columns and "size" not in frame.columns
    fields = {labels.field_label(name): name for name in SEARCHABLE_LISTING_FIELDS}
    off_the_name = 0
    for listing_id, said in zip(frame["id"], frame["matched"], strict=True):
        document, _ = client().call("GET", "listing", params={"id": listing_id})
        places = [part for part in said.split(" · ") if not part.startswith("+")]
        assert places, (listing_id, said)
        for place in places:
            label = place.partition(" “")[0]
            assert label != "Name" or place == places[-1], said  # the name, beside it on the table, comes last
            value = document.get(fields[label])
            text = " ".join(value) if isinstance(value, list) else str(value)
            for word in re.findall(r"“([^”]*)”", place):
                assert word.casefold().startswith("park") and word in text, (listing_id, label, word)
        off_the_name += said != "Name"
    assert off_the_name > 0, "every match was in a name: the column would say nothing the name does not"
    assert "matched" not in healthy(open_page(SEARCH, {"type": "Condo"})).dataframe[0].value.columns


@pytest.mark.usefixtures("embedded_dashboard")
def test_cards_show_what_matched_and_the_csv_has_every_match_with_links(monkeypatch: pytest.MonkeyPatch) -> None:
    downloads: list[Any] = []
    original = st.download_button

    def keep(label: str, data: Any, *args: Any, **kwargs: Any) -> Any:
        downloads.append(data)
        return original(label, data, *args, **kwargs)

    monkeypatch.setattr(st, "download_button", keep)
    app = healthy(open_page(SEARCH, {"q": "condo", "view": "cards", "beds": "2..", "sort": "price_desc"}))
    cards = [m.value for m in app.markdown if "precon-card-title" in m.value]
    assert cards and all("plans match" in card for card in cards)
    assert any("<mark>" in card for card in cards)
    rows = list(csv.DictReader(io.StringIO(downloads[-1]().decode("utf-8-sig"))))
    state = shown_state(app)
    assert len(rows) == oracle_total(state)
    assert all(row["Link"].endswith(f"/listing?id={row['Id']}") for row in rows)
    prices = [float(row["Price from (CAD)"]) for row in rows if row["Price from (CAD)"]]
    assert prices == sorted(prices, reverse=True), "the CSV comes in the page's order"
    assert all("plans match" in row["Matching plans"] for row in rows)


@pytest.mark.usefixtures("embedded_dashboard")
def test_missing_prices_read_on_request_or_unknown_never_none() -> None:
    app = healthy(open_page(SEARCH, {"per": "100"}))
    prices = set(app.dataframe[0].value["price"])
    assert "None" not in prices and "nan" not in prices
    assert all(p == "On request" or p == "—" or p.startswith("$") for p in prices)
    assert {"type", "builder", "size", "rooms"} <= set(app.dataframe[0].value.columns)


@pytest.mark.usefixtures("embedded_dashboard")
def test_lite_version_matches_the_listing_ranges() -> None:
    app = healthy(open_page(SEARCH, {"version": "v1-lite", "q": "condo", "beds": "2.."}))
    state = shown_state(app)
    expected = client().search_listings(
        "condo", per_page=0, filter=state.listing_expression(unit_level=False), version="v1-lite"
    )
    assert shown_total(app) == expected.total
    assert app.toggle(key="rf_available").disabled


def test_lite_version_leaves_out_what_it_hides_and_says_so() -> None:
    app = healthy(open_page(SEARCH, {"version": "v1-lite", "amenity": "Gym", "type": "Condo"}))
    assert any("Amenities are not part of v1-lite" in w.value for w in app.warning), [w.value for w in app.warning]
    assert "amenity" not in app.query_params and app.query_params["type"] == "Condo"
    assert not [key for key in app.session_state if str(key).startswith("rf_amenity_")], "no Amenities list"
    expected = client().search_listings(
        None, per_page=0, filter=shown_state(app).listing_expression(), version="v1-lite"
    )
    assert shown_total(app) == expected.total


@pytest.mark.parametrize(
    ("status", "shown"),
    [(403, "req-forbidden-1"), (500, "req-failing-42"), (None, "cannot be reached")],
)
def test_failures_are_readable(status: int | None, shown: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with failing_service(status, monkeypatch):
        app = open_page(SEARCH, {"q": "condo", "type": "Condo"})
        assert_readable_failure(app, shown)


# -- seeded random sequences ----------------------------------------------------------------------------------------


class SearchSession(RuleBasedStateMachine):
    """A person clicking around: every step is a real widget action, and the page is checked after each."""

    longest = 0

    def __init__(self) -> None:
        super().__init__()
        reset_caches()
        self.app = healthy(open_page(SEARCH))
        self.steps = 0

    @rule(data=hs.data(), param=hs.sampled_from([f.param for f in FACETS if f.param != "builder"]))
    def pick_a_value(self, data: hs.DataObject, param: str) -> None:
        boxes = sorted(k for k, (_, checked) in value_boxes(self.app, param).items() if not checked)
        if boxes:
            self.app.checkbox(key=data.draw(hs.sampled_from(boxes))).check().run()

    @rule(data=hs.data())
    def remove_a_chip(self, data: hs.DataObject) -> None:
        keys = chip_keys(self.app)
        if keys:
            self.app.button(key=data.draw(hs.sampled_from(keys))).click().run()

    @rule(data=hs.data(), param=hs.sampled_from(["beds", "baths", "price", "size", "year"]))
    def slide(self, data: hs.DataObject, param: str) -> None:
        sliders = [s for s in self.app.select_slider if s.key == f"rf_range_{param}"]
        if sliders:
            stops = [float(re.sub(r"[^\d.]", "", text)) for text in sliders[0].options]
            low = data.draw(hs.integers(0, len(stops) - 1))
            high = data.draw(hs.integers(low, len(stops) - 1))
            sliders[0].set_value((stops[low], stops[high])).run()

    @rule()
    def toggle_available(self) -> None:
        toggle = self.app.toggle(key="rf_available")
        toggle.set_value(not toggle.value).run()

    @rule(sort=hs.sampled_from(["relevance", "newest", "price_asc", "price_desc", "completion"]))
    def sort(self, sort: str) -> None:
        self.app.selectbox(key="search_sort").set_value(sort).run()

    @rule()
    def next_page(self) -> None:
        if not self.app.button(key="search_next").disabled:
            self.app.button(key="search_next").click().run()

    @rule(words=hs.sampled_from(["", "condo", "park", "toronto"]))
    def type_words(self, words: str) -> None:
        self.app.text_input(key="search_q").input(words).run()

    @invariant()
    def clean(self) -> None:
        assert_clean(self.app)
        SearchSession.longest = max(SearchSession.longest, self.steps)
        self.steps += 1


@pytest.mark.usefixtures("embedded_dashboard")
def test_random_sequences_of_actions_keep_the_state_clean() -> None:
    from hypothesis.stateful import run_state_machine_as_test

    run_state_machine_as_test(
        SearchSession,
        settings=settings(
            max_examples=3,
            stateful_step_count=20,
            deadline=None,
            derandomize=True,
            suppress_health_check=list(HealthCheck),
        ),
    )
    assert SearchSession.longest >= 12, f"the longest sequence had only {SearchSession.longest} actions"


# -- the pieces ---------------------------------------------------------------------------------------------------


def test_highlights_only_ever_let_the_dashboards_own_tags_through() -> None:
    escaped = "&lt;script&gt;alert(1)&lt;/script&gt; <em>Lofts</em> &amp; *more*"
    runs = highlight_runs(escaped)
    assert runs == [("<script>alert(1)</script> ", False), ("Lofts", True), (" & *more*", False)]
    rendered = runs_html(runs)
    assert "<script" not in rendered and "<mark>Lofts</mark>" in rendered and "*" not in rendered
    for hostile in ("<img src=x onerror=alert(1)> <em>a</em>", "<em>open", "a</em>", "<EM>x</EM>", 42):
        assert highlight_runs(hostile) is None
    listing = Listing.model_validate(
        {
            "listingId": "XSS0A1",
            "name": "<script>alert(1)</script> Lofts",
            "_highlightResult": {"name": {"value": "<img src=x onerror=alert(1)> <em>Lofts</em>"}},
        }
    )
    html = card_html(listing)
    assert "<img" not in html and "<script" not in html and "&#60;script&#62;" in html
