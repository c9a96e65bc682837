"""The companies directory and one company's page under AppTest, against the client's answers."""

from __future__ import annotations

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from components import api
from components.formatting import markdown_text
from precon.client.models import Profile
from tests.dashboard_support import (  # noqa: F401
    assert_readable_failure,
    dashboard_data,
    embedded_dashboard,
    failing_service,
    open_page,
    page_text,
)

DIRECTORY = "views/profiles.py"
PROFILE = "views/profile.py"
PER_PAGE = 10


@pytest.fixture
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("precon.client.retries.RETRY_INITIAL_WAIT_S", 0.01)
    monkeypatch.setattr("precon.client.retries.RETRY_MAX_WAIT_S", 0.02)


def names(app: AppTest) -> list[str]:
    """The names in the directory's table, in order."""
    (table,) = app.dataframe
    return list(table.value["name"])


def builders(page: int, sort: str) -> list[str]:
    result = api.connection().client.search_profiles(
        collection="Builders", sort_by_name=sort, page=page, per_page=PER_PAGE
    )
    return [profile.name or "" for profile in result.results]


def button(app: AppTest, label: str) -> object:
    (found,) = [b for b in app.button if b.label == label]
    return found


@pytest.mark.usefixtures("embedded_dashboard")
def test_directory_sorts_pages_and_keeps_its_state_in_the_address() -> None:
    app = open_page(DIRECTORY, {"collection": "Builders", "per_page": str(PER_PAGE)})
    assert not app.exception, [e.value for e in app.exception]
    total = api.connection().client.search_profiles(collection="Builders", per_page=0).total
    pages = -(-total // PER_PAGE)
    assert pages >= 2, "the test needs more than one page of builders"
    ascending = builders(0, "asc")
    assert names(app) == ascending == sorted(ascending, key=str.casefold)
    assert set(app.dataframe[0].value["collection"]) == {"Builders"}
    assert f"Page **1** of **{pages}**" in page_text(app)

    app = app.radio(key="profiles_sort").set_value("dsc").run()
    assert names(app) == builders(0, "dsc")
    assert app.query_params["sort"] == "dsc"

    app = button(app, "Next").click().run()  # type: ignore[attr-defined]
    assert not app.exception, [e.value for e in app.exception]
    second = builders(1, "dsc")
    assert names(app) == second
    assert f"Page **2** of **{pages}**" in page_text(app)
    assert app.query_params["page"] == "2"

    # The address alone reopens the same view.
    address = {name: app.query_params[name] for name in ("collection", "sort", "page", "per_page")}
    assert address == {"collection": "Builders", "sort": "dsc", "page": "2", "per_page": str(PER_PAGE)}
    again = open_page(DIRECTORY, address)
    assert names(again) == second
    assert again.radio(key="profiles_sort").value == "dsc"

    # Previous goes back; another collection starts again at page 1.
    app = button(app, "Previous").click().run()  # type: ignore[attr-defined]
    assert names(app) == builders(0, "dsc")
    app = app.selectbox(key="profiles_collection").set_value("Architects").run()
    assert set(app.dataframe[0].value["collection"]) == {"Architects"}
    assert "page" not in app.query_params and app.query_params["collection"] == "Architects"


@pytest.mark.usefixtures("embedded_dashboard")
def test_directory_search_and_nonsense_in_the_address() -> None:
    app = open_page(DIRECTORY, {"collection": "Nonsense", "page": "999", "per_page": "7", "sort": "up"})
    assert not app.exception, [e.value for e in app.exception]
    assert not app.error
    client = api.connection().client
    pages = client.search_profiles(per_page=25).pages
    last = client.search_profiles(sort_by_name="asc", per_page=25, page=pages - 1)
    assert names(app) == [profile.name for profile in last.results]  # every collection, 25 a page, the last page
    assert f"Page **{pages}** of **{pages}**" in page_text(app)
    assert app.query_params["page"] == str(pages)
    word = (last.results[0].name or "").split()[0]
    app = app.text_input(key="profiles_q").input(word).run()
    expected = api.connection().client.search_profiles(word, sort_by_name="asc", per_page=25).results
    assert names(app) == [profile.name for profile in expected]
    assert app.query_params["q"] == word


def a_builder_with_listings() -> Profile:
    found = api.connection().client.search_profiles(collection="Builders", sort_by_name="asc", per_page=50)
    return max(found.results, key=lambda profile: len(profile.listings))


@pytest.mark.usefixtures("embedded_dashboard")
def test_profile_page_shows_the_company_and_its_listings() -> None:
    open_page(DIRECTORY)
    builder = a_builder_with_listings()
    assert builder.profile_id and len(builder.listings) > 1
    app = open_page(PROFILE, {"collection": "Builders", "id": builder.profile_id})
    assert not app.exception, [e.value for e in app.exception]
    assert markdown_text(builder.name) in [t.value for t in app.title]
    text = page_text(app)
    count = len(builder.listings)
    assert f"{count:,} listings" in [s.value for s in app.subheader]
    (table,) = app.dataframe
    linked = list(table.value["id"])
    assert linked == [path.split("/", 1)[1] for path in builder.listings]
    assert isinstance(table.value, pd.DataFrame) and len(table.value) == count
    if builder.website:
        assert f"]({builder.website})" in text
    assert app.get("deck_gl_json_chart"), "no map of the listings"


@pytest.mark.usefixtures("embedded_dashboard")
def test_profile_not_found_and_no_profile_chosen() -> None:
    app = open_page(PROFILE, {"collection": "Builders", "id": "no-such-builder"})
    assert not app.exception, [e.value for e in app.exception]
    assert "Company not found" in [t.value for t in app.title]
    assert "no\\-such\\-builder" in "\n".join(e.value for e in app.error)

    app = open_page(PROFILE)
    assert not app.exception, [e.value for e in app.exception]
    assert not app.error
    assert "Search a company by name" in page_text(app), "without an id, a picker"


@pytest.mark.usefixtures("embedded_dashboard")
def test_profile_without_an_id_is_a_picker_that_opens_the_company() -> None:
    app = open_page(PROFILE)
    assert not app.exception, [e.value for e in app.exception]
    assert not app.error
    builder = a_builder_with_listings()
    word = max((builder.name or "").split(), key=len)
    app = app.text_input(key="profile_search").input(word).run()
    pick = app.selectbox(key="profile_pick")
    chosen = next(i for i, label in enumerate(pick.options) if label.startswith(builder.name or ""))
    app = pick.select_index(chosen).run()
    app = button(app, "Open company").click().run()  # type: ignore[attr-defined]
    assert not app.exception, [e.value for e in app.exception]
    assert app.query_params["id"] == builder.profile_id and app.query_params["collection"] == "Builders"
    assert markdown_text(builder.name) in [t.value for t in app.title]
    assert f"{len(builder.listings):,} listings" in [s.value for s in app.subheader]


@pytest.mark.usefixtures("embedded_dashboard")
def test_directory_offers_owners_and_sorts_by_listings_then_opens_a_profile() -> None:
    app = open_page(DIRECTORY, {"per_page": str(PER_PAGE)})
    assert "Owners" in app.selectbox(key="profiles_collection").options
    app = app.selectbox(key="profiles_collection").set_value("Owners").run()
    client = api.connection().client
    owners = client.search_profiles(collection="Owners", sort_by_name="asc", per_page=PER_PAGE)
    assert owners.total > 0, "the catalogue lists owners"
    assert names(app) == [profile.name for profile in owners.results]
    assert set(app.dataframe[0].value["collection"]) == {"Owners"}
    assert app.query_params["collection"] == "Owners"

    app = app.selectbox(key="profiles_collection").set_value("Builders").run()
    app = app.radio(key="profiles_sort").set_value("listings").run()
    assert not app.exception, [e.value for e in app.exception]
    most = client.search_profiles(collection="Builders", sort_by_listings="desc", per_page=PER_PAGE)
    assert names(app) == [profile.name for profile in most.results]
    counts = list(app.dataframe[0].value["listings"])
    assert counts == sorted(counts, reverse=True) and counts[0] == len(most.results[0].listings)
    assert app.query_params["sort"] == "listings"

    app = button(app, "Next").click().run()  # type: ignore[attr-defined]
    second = client.search_profiles(collection="Builders", sort_by_listings="desc", page=1, per_page=PER_PAGE)
    assert names(app) == [profile.name for profile in second.results]
    assert app.query_params["page"] == "2"
    app = app.selectbox(key="profiles_per_page").set_value(25).run()
    assert len(names(app)) == 25 and "page" not in app.query_params

    # A click on a name opens the company's page (clicked in tests/test_browser_journeys.py); its address opens it.
    top = most.results[0]
    app = open_page(PROFILE, {"collection": "Builders", "id": top.profile_id or ""})
    assert markdown_text(top.name) in [t.value for t in app.title]


@pytest.mark.usefixtures("quick_retries")
@pytest.mark.parametrize(
    ("status", "fragment"),
    [(403, "Access refused"), (500, "The listings service failed"), (None, "cannot be reached")],
)
def test_failures_read_as_messages(status: int | None, fragment: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with failing_service(status, monkeypatch):
        assert_readable_failure(open_page(DIRECTORY), fragment)
        assert_readable_failure(open_page(PROFILE, {"collection": "Builders", "id": "abc"}), fragment)
