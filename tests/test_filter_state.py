"""The filter state: values only, one encoding in the address, changes that never corrupt it, and the unit filter."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from precon import filters
from precon.dashboard.filter_state import (
    FACETS,
    RANGES,
    FilterState,
    decode_list,
    encode_list,
    necessary_listing_filter,
)

TEXTS = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=12)
VALUES = TEXTS.map(str.strip).filter(bool)
BOUNDS = st.one_of(st.none(), st.integers(0, 2_000_000).map(float), st.sampled_from([0.5, 1.5, 2.5]))


@st.composite
def states(draw: st.DrawFn) -> FilterState:
    state = FilterState(text=draw(st.sampled_from(["", "rooftop", "Québec lofts"])))
    for facet in draw(st.lists(st.sampled_from(FACETS), max_size=4)):
        for value in draw(st.lists(VALUES.filter(lambda v: "/" not in v), min_size=1, max_size=3)):
            state = state.with_value(facet.param, value)
    for spec in draw(st.lists(st.sampled_from(RANGES), max_size=3)):
        state = state.with_range(spec.param, draw(BOUNDS), draw(BOUNDS))
    return state.with_available(draw(st.booleans()))


@given(states())
@settings(max_examples=200)
def test_the_address_round_trips_every_state(state: FilterState) -> None:
    again, problems = FilterState.from_params(state.to_params())
    assert problems == []
    assert again == state
    assert again.to_params() == state.to_params()


@given(st.lists(VALUES, max_size=5))
def test_lists_round_trip_any_text(values: list[str]) -> None:
    assert decode_list(encode_list(values)) == list(dict.fromkeys(values))


def test_a_chosen_value_is_stored_as_the_value_never_its_label() -> None:
    state = FilterState().with_value("type", "Condo").with_value("selling", "Selling Now").with_value("city", "Toronto")
    assert state.to_params() == {"type": "Condo", "selling": "Selling Now", "city": "Toronto"}
    state = state.with_value("type", "Condo", chosen=False)
    assert state.to_params() == {"selling": "Selling Now", "city": "Toronto"}


def test_builders_are_ids_in_the_address_and_paths_in_the_state() -> None:
    state, problems = FilterState.from_params({"builder": "abc,Builders/def"})
    assert problems == []
    assert state.facets["builder"] == ("Builders/abc", "Builders/def")
    assert state.to_params() == {"builder": "abc,def"}


def test_repeated_parameters_are_read_too() -> None:
    state, _ = FilterState.from_params({"type": ["Condo", "Townhouse"]})
    assert state.facets["type"] == ("Condo", "Townhouse")


def test_bad_values_in_the_address_are_reported_and_left_out() -> None:
    state, problems = FilterState.from_params({"price": "abc", "beds": "9..2", "year": "2026..", "available": "maybe"})
    assert state == FilterState(ranges={"year": (2026.0, None)})
    assert len(problems) == 3
    assert "Bedrooms (`beds`): “9..2” runs backwards" in problems[0]
    assert "Price (`price`): “abc” is not a number" in problems[1]
    assert "`available`" in problems[2]


def test_unit_ranges_ask_for_one_floor_plan_and_year_stays_on_the_listing() -> None:
    state, _ = FilterState.from_params(
        {"type": "Condo", "beds": "2..", "price": "..800000", "year": "2026..2028", "available": "1"}
    )
    assert filters.to_query(state.listing_expression()) == "completionYear:2026 TO 2028 AND type:Condo"
    assert filters.to_query(state.unit_expression()) == (
        "numberOfBedrooms >= 2 AND startPrice <= 800000 AND status:Available"
    )
    assert filters.to_query(state.listing_expression(unit_level=False)) == (
        "completionYear:2026 TO 2028 AND maxBeds >= 2 AND startPrice <= 800000 AND type:Condo"
    )


PLAN = st.fixed_dictionaries(
    {
        "numberOfBedrooms": st.integers(0, 4),
        "numberOfBathrooms": st.sampled_from([1, 1.5, 2, 3]),
        "squareFeet": st.integers(300, 2000),
        "startPrice": st.one_of(st.just(""), st.integers(200_000, 2_000_000)),
        "status": st.sampled_from(["Available", "Sold Out"]),
    }
)


@given(states(), st.lists(PLAN, max_size=6))
@settings(max_examples=300)
def test_the_lifted_filter_never_loses_a_listing_with_a_matching_plan(state: FilterState, plans: list[dict]) -> None:
    unit = state.unit_expression()
    listing = {"floorPlans": plans}
    if unit is not None and any(filters.evaluate(unit, plan) for plan in plans):
        assert filters.evaluate(necessary_listing_filter(unit), listing)


def test_a_negation_narrows_nothing() -> None:
    unit = filters.and_(filters.compare("numberOfBedrooms", ">=", 2), filters.not_(filters.eq("status", "Sold Out")))
    assert filters.to_query(necessary_listing_filter(unit)) == "floorPlans.numberOfBedrooms >= 2"
