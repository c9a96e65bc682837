"""Figures that must not contradict each other: a sold unit shows no deposits due from today; a completion already
behind a listing is no "soonest completion" on Compare and reads as completed or passed in its key facts, never as
upcoming. Each listing is the API's, and what is passed is judged here from its years alone."""

from __future__ import annotations

from datetime import date

import pytest
from streamlit.testing.v1 import AppTest

from components import api
from components.compare_table import BEST
from components.formatting import cad, completion
from precon.client.models import Listing
from precon.dashboard.completion import last_day
from tests.dashboard_support import dashboard_data, embedded_dashboard, open_page  # noqa: F401

LISTING = "views/listing.py"
COMPARE = "views/compare.py"
THIS_YEAR = date.today().year


def healthy(app: AppTest) -> AppTest:
    assert not app.exception, [e.value for e in app.exception]
    return app


def listings() -> list[Listing]:
    return list(api.connection().client.search_listings(per_page=300).results)


def year_of(listing: Listing) -> int | None:
    """The year the listing completes by its latest word: the estimate, else the completion year."""
    return listing.estimatedCompletionYear or listing.completionYear


def behind(listing: Listing) -> bool:
    """Complete, or completing in a year already over (judged from the years, apart from the page's reading)."""
    year = year_of(listing)
    return listing.constructionStatus == "Complete" or (year is not None and year < THIS_YEAR)


def ahead(listing: Listing) -> bool:
    year = year_of(listing)
    return listing.constructionStatus != "Complete" and year is not None and year > THIS_YEAR


def key_fact(app: AppTest, fact: str) -> str:
    """A row of the key facts table (markdown), its escapes undone."""
    table = next(m.value for m in app.markdown if m.value.startswith("| Fact | Value |"))
    line = next(line for line in table.splitlines() if line.startswith(f"| {fact} |"))
    return line.removeprefix(f"| {fact} |").removesuffix("|").strip().replace("\\", "")


def test_dates_read_to_the_last_day_they_can_mean() -> None:
    assert last_day("2027-06-30") == date(2027, 6, 30)
    assert last_day("August 2026") == date(2026, 8, 31)
    assert last_day("Q4 2030") == last_day("Fall 2030") == last_day("2030") == date(2030, 12, 31)
    assert last_day("Spring 2028") == date(2028, 6, 30) and last_day("Q1 2025") == date(2025, 3, 31)
    assert last_day("TBD") is None and last_day(None) is None


@pytest.mark.usefixtures("embedded_dashboard")
def test_a_sold_unit_shows_no_deposits_due_and_an_available_one_does() -> None:
    open_page(LISTING)  # starts the embedded service
    tower = next(
        x for x in listings()
        if x.paymentStructures and {"Sold", "Available"} <= {u.status for p in x.floorPlans for u in p.units}
    )  # fmt: skip
    app = healthy(open_page(LISTING, {"id": tower.id}))
    for wanted in ("Sold", "Available"):
        plan, unit = next((p, u) for p in tower.floorPlans for u in p.units if u.status == wanted)
        label = f"{unit.unitNumber} · {plan.name} · {unit.status} · {cad(unit.price)}"
        app = healthy(app.selectbox(key=f"units:{tower.id}_grid_unit").set_value(label).run())
        said = "\n".join(m.value for m in app.markdown) + "\n".join(c.value for c in app.caption)
        if wanted == "Sold":
            assert "Deposits for this unit" not in said and "This unit is sold: no deposits are due on it" in said
            sold_schedules = schedules(app)
        else:
            assert "Deposits for this unit" in said
            assert schedules(app) == sold_schedules + len(tower.paymentStructures), "the unit's own schedules"


def schedules(app: AppTest) -> int:
    """How many deposit schedules the page shows (the listing's own, and a picked unit's)."""
    return sum(1 for frame in app.dataframe if "running" in frame.value.columns)


@pytest.mark.usefixtures("embedded_dashboard")
def test_a_completion_behind_a_listing_reads_so_and_is_no_soonest_completion() -> None:
    open_page(LISTING)
    found = listings()
    done = next(x for x in found if x.constructionStatus == "Complete" and year_of(x))
    passed = next(x for x in found if behind(x) and x.constructionStatus != "Complete" and x.completionDate)
    upcoming = [x for x in found if ahead(x)][:2]
    assert len(upcoming) == 2

    # Key facts, and the figure at the top of the page.
    app = healthy(open_page(LISTING, {"id": done.id}))
    assert key_fact(app, "Completion") == f"{completion(done)} (completed)"
    assert {m.label: m.value for m in app.metric}["Completion"] == f"{completion(done)} (completed)"
    app = healthy(open_page(LISTING, {"id": passed.id}))
    assert key_fact(app, "Completion") == f"{completion(passed)} (completion date passed)"
    app = healthy(open_page(LISTING, {"id": upcoming[0].id}))
    assert key_fact(app, "Completion") == completion(upcoming[0]), "an upcoming date is said as it is"

    # Compare: the star goes to the soonest of the upcoming completions, never to one behind its listing.
    compared = [done, passed, *upcoming]
    app = healthy(open_page(COMPARE, {"ids": ",".join(x.id or "" for x in compared)}))
    table = next(frame.value for frame in app.table if "Completion" in list(frame.value.index))
    row = dict(zip(table.columns, table.loc["Completion"], strict=True))
    starred = [name for name, text in row.items() if str(text).endswith(BEST)]
    assert done.name not in starred and passed.name not in starred
    soonest = min(upcoming, key=lambda x: year_of(x) or 0)
    if (year_of(upcoming[0]) or 0) != (year_of(upcoming[1]) or 0):
        assert starred == [soonest.name]
    assert "(completed)" in str(row[done.name]) and "(completion date passed)" in str(row[passed.name])


@pytest.mark.usefixtures("embedded_dashboard")
def test_a_towers_floors_are_as_high_as_its_units_go() -> None:
    """The key facts said "Floors 60" where the inventory's units stop at floor 22: a tower with a stack per floor
    plan reached only so high. Its floors are now its highest unit's, for every tower, and the page says so."""
    open_page(LISTING)  # starts the embedded service
    towers = [
        x for x in listings() if x.type and x.type[0] != "Townhouse" and any(p.units for p in x.floorPlans or [])
    ]  # fmt: skip
    assert towers
    for tower in towers:
        highest = max(int(float(u.floor)) for p in tower.floorPlans or [] for u in p.units if u.floor is not None)
        assert tower.numberOfFloors == highest, (tower.id, tower.numberOfFloors, highest)
    tallest = max(towers, key=lambda x: (len(x.floorPlans), x.numberOfUnits or 0))
    app = healthy(open_page(LISTING, {"id": tallest.id}))
    assert key_fact(app, "Floors") == f"{tallest.numberOfFloors:,}"
