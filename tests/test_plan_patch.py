"""The floor plans' index (what a unitFilter is answered from) after a write: moved to the new generation by the
listings the write wrote (precon/service/search/plan_patch.py) where it can be, built whole where it cannot. Either
way it holds what a whole build holds, plan by plan, and unit filters answer as a store that builds it whole."""

from __future__ import annotations

import copy
import math
import random
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from prometheus_client import REGISTRY

from precon.filters import parse
from precon.service.search import plan_layers
from precon.service.search.plan_index import PlanIndex
from precon.service.search.plan_layers import MOST_LAYERS, LayeredPlans
from precon.service.stores.simulation import day_time, simulate
from precon.service.stores.sqlite.store import SQLiteStore
from precon.service.stores.types import ListingQuery, ProfileQuery
from tests.catalogues import random_moves, stored_catalogue

START = date(2025, 6, 1)
UNIT_FILTERS = [
    "numberOfBedrooms = 2",
    "units.status:Available AND units.price < 700000",
    "units.status:Available AND units.price < 900000 AND units.floor >= 5",
    "units.status:Reserved",
    "NOT units.status:Sold AND squareFeet >= 800",
    "floorPlanType:Townhouse OR numberOfBathrooms >= 2",
    'status:"Sold Out"',
    "units.floor >= 10 AND startPrice <= 800000",
    "units.status:Waitlist",
]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    opened = stored_catalogue(tmp_path / "plans.sqlite3", 80, 12, START)
    opened.search_listings(ListingQuery(unit_filter=parse(UNIT_FILTERS[0])))  # both indexes held, as when serving
    yield opened
    opened.close()


def patches() -> float:
    return REGISTRY.get_sample_value("precon_plan_index_patches_total", {"catalogue": "plans"}) or 0.0


def _number(value: float) -> float | None:
    return None if math.isnan(value) else value


def decoded(plans: PlanIndex) -> dict[str, Any]:
    """What a plan index holds, plan by plan, whatever codes it gave its terms and statuses (a patch gives a new
    one to a value it never held, where a whole build codes values in the order it reads them)."""
    term = {code: text for text, code in plans.terms.items()}
    status = {code: text for text, code in plans.units.terms.items()}
    fields = {}
    for name, columns in plans.fields.items():
        fields[name] = (
            sorted(zip(columns.text_plans.tolist(), [term[c] for c in columns.text_codes.tolist()], strict=True)),
            sorted(zip(columns.bool_plans.tolist(), columns.bool_values.tolist(), strict=True)),
            sorted(
                zip(
                    columns.number_plans.tolist(),
                    columns.number_values.tolist(),
                    columns.number_typed.tolist(),
                    strict=True,
                )
            ),
        )
    units = plans.units
    rows = sorted(
        (plan, status.get(code, ""), str(_number(n)), str(_number(p)), str(_number(f)))
        for plan, code, n, p, f in zip(
            units.plan.tolist(),
            units.status.tolist(),
            units.status_num.tolist(),
            units.price.tolist(),
            units.floor.tolist(),
            strict=True,
        )
    )
    steps = plans.steps
    floor_of = [None if h < 0 else float(steps.floors[h]) for h in steps.highest.tolist()]
    stepped = sorted(
        (plan, status.get(code, ""), str(_number(p)), str(_number(f)), str(h))
        for plan, code, p, f, h in zip(
            units.plan.tolist(),
            units.status.tolist(),
            units.price.tolist(),
            units.floor.tolist(),
            floor_of,
            strict=True,
        )
    )
    bounds = {}
    for code, found in plans.bounds.by_status.items():
        name = "any" if code < 0 else status[code]
        if not found.units.any() and name != "any":
            continue  # a status no unit has (any more): a whole build does not name it
        bounds[name] = [
            found.units.tolist(),
            *(column.tolist() for column in (found.low_price, found.high_price, found.low_floor, found.high_floor)),
            found.priced_floor.tolist(),
        ]
    return {
        "steps": stepped,
        "bounds": bounds,
        "plans": list(
            zip(
                plans.plan_rowid.tolist(),
                plans.plan_idx.tolist(),
                plans.known.tolist(),
                plans.owner.tolist(),
                strict=True,
            )
        ),
        "listings": (plans.listings, plans.listing_rowids.tolist()),
        "fields": fields,
        "units": rows,
        "listed": plans.units.listed.tolist(),
        "ranges": (plans._first_row.tolist(), plans._end_row.tolist()),
        "per listing": (plans._plan_start.tolist(), plans._plan_count.tolist()),
    }


def whole(store: SQLiteStore) -> PlanIndex:
    index = store._columns()
    return PlanIndex(store._db(), index.rowids, index.generation)


def unit_answers(store: SQLiteStore) -> list[Any]:
    found = []
    for text in UNIT_FILTERS:
        page = store.search_listings(ListingQuery(unit_filter=parse(text), limit=100))
        found.append((text, page.total, [doc["listingId"] for doc in page.documents], page.matched))
    return found


def assert_as_built_whole(store: SQLiteStore) -> None:
    """The held plans answer as a whole build: a patched index holds what it holds, plan by plan; a layered one
    (the held index and a layer of the listings written since) answers every filter, listing and page alike."""
    answered = unit_answers(store)
    held = store._plan_index
    assert held is not None and held.generation == store._read_generation()
    built = whole(store)
    positions = np.arange(built.listings)
    for text in UNIT_FILTERS:
        expr = parse(text)
        assert (held.listings_matching(expr) == built.listings_matching(expr)).all(), text
        among = positions % 3 == 0
        assert (held.listings_matching(expr, among) == built.listings_matching(expr, among)).all(), text
        assert held.page_matches(expr, positions) == built.page_matches(expr, positions), text
    alone = SQLiteStore(store.path)  # a store of its own, which builds both indexes whole
    try:
        assert answered == unit_answers(alone)
    finally:
        alone.close()
    for plans in (held.base, *held.layers) if isinstance(held, LayeredPlans) else (held,):
        assert_well_formed(plans)
    if not isinstance(held, LayeredPlans):
        assert decoded(held) == decoded(built)


def assert_well_formed(held: PlanIndex) -> None:
    units = held.units  # grouped as a build groups them: by plan, then status, then price
    assert (np.lexsort((units.price, units.status, units.plan)) == np.arange(len(units.plan))).all()
    for code, found in held.bounds.by_status.items():  # each status's first row of a plan starts its group there
        if code >= 0:
            some = found.units > 0
            assert (units.status[found.first[some]] == code).all()
            starts = found.first[some]
            assert ((starts == held._first_row[some]) | (units.status[np.maximum(starts - 1, 0)] != code)).all()


def sold_and_raised(_: str, doc: dict[str, Any]) -> dict[str, Any]:
    changed = copy.deepcopy(doc)
    units = [u for plan in changed.get("floorPlans") or [] for u in plan.get("units") or []]
    if units:
        units[0]["status"] = "Sold"
        units[-1]["price"] = (units[-1].get("price") or 500_000) + 25_000
    return changed


def test_a_day_of_sales_patches_the_plan_index(store: SQLiteStore) -> None:
    before = patches()
    store.update_listings(store.listing_ids()[:10], sold_and_raised, at=day_time(START) + 86_400)
    assert_as_built_whole(store)
    assert patches() == before + 1


def test_plans_taken_off_and_added_move_the_plans_after_them(store: SQLiteStore) -> None:
    """A listing that loses a plan and one that gains two: every plan after them changes position."""
    ids = store.listing_ids()
    docs = store.get_listings(ids[2:4], None)
    first, second = (copy.deepcopy(docs[i]) for i in ids[2:4])
    first["floorPlans"] = first["floorPlans"][1:]
    extra = copy.deepcopy(second["floorPlans"][0])
    extra.update(id=None, name="Penthouse Added", numberOfBedrooms=4)
    for unit in extra.get("units") or []:
        unit["status"] = "Waitlist"  # a status no unit had: a new code
    second["floorPlans"] = [*second["floorPlans"], extra, {"name": "Suite Without Units", "numberOfBedrooms": 1}]
    before = patches()
    store.upsert_listings([first, second], at=day_time(START) + 2 * 86_400)
    assert_as_built_whole(store)
    assert patches() == before + 1
    waitlisted = store.search_listings(ListingQuery(unit_filter=parse("units.status:Waitlist")))
    assert [d["listingId"] for d in waitlisted.documents] == [ids[3]]


def test_a_listing_created_is_patched_in(store: SQLiteStore) -> None:
    template = copy.deepcopy(store.get_listings([store.listing_ids()[7]], None)[store.listing_ids()[7]])
    template.update(listingId="PLANS-NEW-1", name="Planned Anew")
    for plan in template.get("floorPlans") or []:
        plan.pop("id", None)
    before = patches()
    store.upsert_listings([template], at=day_time(START) + 3 * 86_400)
    assert_as_built_whole(store)
    assert patches() == before + 1


def test_a_listing_created_after_a_layer_is_in_the_next(store: SQLiteStore) -> None:
    """A layer made before a listing was created holds fewer listings than the column index after it."""
    ids = store.listing_ids()
    store.update_listings(ids[:6], sold_and_raised, at=day_time(START) + 86_400)
    assert_as_built_whole(store)  # a layer is made when a question needs the new generation
    template = copy.deepcopy(store.get_listings([ids[7]], None)[ids[7]])
    template.update(listingId="PLANS-NEW-2", name="Layered Anew")
    for plan in template.get("floorPlans") or []:
        plan.pop("id", None)
    store.upsert_listings([template], at=day_time(START) + 2 * 86_400)
    assert_as_built_whole(store)
    store.update_listings(ids[3:9], sold_and_raised, at=day_time(START) + 3 * 86_400)
    assert_as_built_whole(store)
    held = store._plan_index
    assert isinstance(held, LayeredPlans) and len(held.layers) == 3


def test_a_write_of_profiles_alone_makes_an_empty_layer(store: SQLiteStore) -> None:
    """A generation with no listing written (a profile renamed) still answers: its layer holds no plan."""
    profile = store.search_profiles(ProfileQuery(limit=1)).documents[0]
    store.upsert_profiles([{**profile, "name": f"{profile.get('name', '')} Renamed"}])
    assert_as_built_whole(store)
    held = store._plan_index
    assert isinstance(held, LayeredPlans) and held.layers[-1].size == 0


def test_a_deleted_listing_builds_it_whole(store: SQLiteStore) -> None:
    before = patches()
    store.delete_listing(store.listing_ids()[4], at=day_time(START) + 4 * 86_400)
    assert_as_built_whole(store)
    assert patches() == before


def test_days_of_simulated_market_and_random_writes_stay_as_built_whole(store: SQLiteStore) -> None:
    rng = random.Random(3)
    ids = store.listing_ids()
    before = patches()

    moved = random_moves(rng, move_floors=True)

    for day in range(6):
        store.update_listings(rng.sample(ids, k=rng.randint(1, 6)), moved, at=day_time(START) + (day + 5) * 86_400)
        assert_as_built_whole(store)
    simulate(store, 3, seed=9)
    assert_as_built_whole(store)
    assert patches() >= before + 6


def test_a_layer_holds_the_listings_written_since_the_held_index_until_too_many_are(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each write adds a layer of the listings it wrote (one written again answers from its newest layer); at the
    most layers they are merged into one; past the most listings in them, the held index is patched with them and
    has no layer again."""
    ids = store.listing_ids()
    base = store._plan_index
    assert isinstance(base, PlanIndex)
    for day in range(MOST_LAYERS):
        written = ids[5 * day : 5 * day + 10]  # half of them written the day before too
        store.update_listings(written, sold_and_raised, at=day_time(START) + (day + 1) * 86_400)
        assert_as_built_whole(store)
        held = store._plan_index
        assert isinstance(held, LayeredPlans) and held.base is base and len(held.layers) == day + 1
        assert int(np.count_nonzero(held.source == day + 1)) == 10
        assert int(np.count_nonzero(held.source)) == 5 * day + 10
    store.update_listings(ids[60:63], sold_and_raised, at=day_time(START) + 10 * 86_400)
    assert_as_built_whole(store)
    held = store._plan_index
    assert isinstance(held, LayeredPlans) and held.base is base and len(held.layers) == 1  # merged into one
    assert int(np.count_nonzero(held.source == 1)) == 5 * MOST_LAYERS + 5 + 3
    monkeypatch.setattr(plan_layers, "LAYER_LEAST", 40)
    before = patches()
    store.update_listings(ids[70:72], sold_and_raised, at=day_time(START) + 11 * 86_400)
    assert_as_built_whole(store)
    assert isinstance(store._plan_index, PlanIndex) and store._plan_index is not base and patches() == before + 1
