"""A listing opened from a search with unit filters keeps them: the address carries them, the floor plans' filters
are set from them, and the plans and units they match are marked, as the service matches them (the plans its
``_matchedFloorPlans`` names for the search's ``unitFilter``, the units it counts for the same filter naming the
units' own status and price); "Clear" takes them away. Each step checked against the service."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from precon import filters
from precon.client import Client
from precon.client.models import Listing
from precon.dashboard import unit_marks
from precon.dashboard.filter_state import FilterState
from precon.service.embedded import EmbeddedService
from tests.dashboard_support import DASHBOARD_LISTINGS, dashboard_data, embedded_dashboard, open_page  # noqa: F401

SEARCH = "views/search.py"
STATE = FilterState().with_range("beds", 2, None).with_range("price", None, 800_000).with_available(True)


@pytest.fixture(scope="module")
def oracle(dashboard_data: Path) -> Iterator[Client]:  # noqa: F811
    with EmbeddedService(dashboard_data, listings=DASHBOARD_LISTINGS) as service:
        yield service.client


def matched_in_service(client: Client, listing_id: str, unit_filter: filters.Expr | None) -> Listing:
    found = client.search_listings(unit_filter=unit_filter, filter=filters.eq("listingId", listing_id), per_page=5)
    assert [x.id for x in found.results] == [listing_id], "the listing is in the service's answer to the filter"
    return found.results[0]


def frames(app: AppTest) -> list[pd.DataFrame]:
    return [element.value for element in app.dataframe]


@pytest.mark.usefixtures("embedded_dashboard")
def test_a_listing_opened_from_a_search_with_unit_filters_marks_what_they_match(oracle: Client) -> None:
    app = open_page(SEARCH, {**STATE.to_params(), "view": "cards"})
    assert not app.exception, [e.value for e in app.exception]
    opening = [b for b in app.button if str(b.key).startswith("card_open_")]
    assert opening, "the search finds listings with such a plan"
    listing_id = str(opening[0].key).removeprefix("card_open_")
    opening[0].click().run()
    assert not app.exception, [e.value for e in app.exception]

    # The listing's address carries the search's unit filters (and no other).
    assert app.query_params.get("id") == listing_id
    assert {k: app.query_params.get(k) for k in unit_marks.UNIT_PARAMS if app.query_params.get(k)} == STATE.to_params()

    listing = oracle.get_listing(id=listing_id)
    plans = listing.floorPlans
    # The plans marked are the plans the service matched for the search's unitFilter.
    by_plans = matched_in_service(oracle, listing_id, STATE.unit_expression()).matched_floor_plans
    assert by_plans is not None and by_plans.count > 0
    plan_table = next(f for f in frames(app) if "match" in f.columns and "sqft" in f.columns)
    marked_plans = list(plan_table.loc[plan_table["match"], "name"])
    assert marked_plans == by_plans.names
    # The floor plans' filters are set from the search: 2 bedrooms or more, available plans, up to $800,000.
    beds = app.multiselect(key=f"plans:{listing_id}_beds").value
    assert beds and set(beds) == {p.numberOfBedrooms for p in plans if (p.numberOfBedrooms or 0) >= 2}
    assert app.multiselect(key=f"plans:{listing_id}_status").value == ["Available"]
    if len({p.startPrice for p in plans if p.startPrice}) > 1:
        slider = app.slider(key=f"plans:{listing_id}_max_price")
        assert slider.value == min(slider.max, 800_000), "the price limit at the search's (or the slider's end)"

    # The units marked are the units the service counts for the same filter over each unit's status and price ...
    by_units = matched_in_service(oracle, listing_id, unit_marks.unit_expression(STATE)).matched_floor_plans
    unit_table = next(f for f in frames(app) if "match" in f.columns and "unit" in f.columns)
    marked_units = unit_table[unit_table["match"]]
    shown_available = unit_table["status"].eq("Available").all()
    assert shown_available, "the units table starts on available units, and every marked unit is available"
    assert by_units is not None and len(marked_units) == by_units.units > 0
    assert len(marked_units) < sum(len(p.units) for p in plans), "not every unit matches: the marks tell them apart"
    # ... and exactly those the reference evaluator holds the filter for, unit by unit.
    expected = {
        (plan.name, unit.unitNumber)
        for plan in plans
        for unit in plan.units
        if filters.plan_matches(unit_marks.unit_expression(STATE), {**plan.model_dump(mode="json"),
                                                                      "units": [unit.model_dump(mode="json")]})
    }  # fmt: skip
    assert set(zip(marked_units["plan"], marked_units["unit"], strict=True)) == expected
    assert all((u.price or 0) <= 800_000 for p in plans for u in p.units if (p.name, u.unitNumber) in expected)
    said = "\n".join(i.value for i in app.info)
    assert f"{len(marked_plans)} floor plan" in said and f"{len(expected)} unit" in said

    # Clear: the filters leave the address, nothing is marked, the plans' filters are the person's again.
    app.button(key="listing_marks_clear").click().run()
    assert not any(app.query_params.get(k) for k in unit_marks.UNIT_PARAMS)
    assert not any("match" in f.columns for f in frames(app))
    assert "From your search" not in "\n".join(i.value for i in app.info)


@pytest.mark.usefixtures("embedded_dashboard")
def test_a_listing_opened_without_unit_filters_marks_nothing() -> None:
    app = open_page(SEARCH, {"view": "cards"})
    opening = [b for b in app.button if str(b.key).startswith("card_open_")]
    opening[0].click().run()
    assert not app.exception, [e.value for e in app.exception]
    assert not any(app.query_params.get(k) for k in unit_marks.UNIT_PARAMS)
    assert not any("match" in f.columns for f in frames(app))
    listing_id = app.query_params.get("id")
    assert app.multiselect(key=f"plans:{listing_id}_beds").value == []


@pytest.mark.usefixtures("embedded_dashboard")
def test_bad_unit_filters_in_a_listing_address_are_said(oracle: Client) -> None:
    listing_id = oracle.search_listings(per_page=1).results[0].id or ""
    app = open_page("views/listing.py", {"id": listing_id, "beds": "two..", "available": "maybe"})
    assert not app.exception, [e.value for e in app.exception]
    warned = "\n".join(w.value for w in app.warning)
    assert "Bedrooms (`beds`)" in warned and "“maybe” is not 1 or 0" in warned
