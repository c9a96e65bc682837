"""Saved searches under AppTest: saving on Search, Map and a listing, the Saved searches page (what changed, open,
mark as seen, rename, delete), alerts as filtered subscriptions, and bad input, over a data directory of its own."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from components import api, saved_alerts
from precon.client import Client
from precon.dashboard.filter_state import FilterState
from precon.dashboard.saved_searches import Answer, Match, SavedSearch, SavedSearches
from precon.service.config import DEV_API_KEY
from tests.dashboard_support import (  # noqa: F401
    dashboard_data,
    embedded_dashboard,
    open_page,
    page_text,
    reset_caches,
)

SAVED = "views/saved.py"


@pytest.fixture(scope="module")
def saved_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("saved-dashboard-data")


@pytest.fixture
def oracle(request: pytest.FixtureRequest, saved_data: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Client]:
    """The dashboard on its embedded service over this module's data directory, no saved search and no
    subscription yet; a client of the same service, past every cache, to check the pages against."""
    request.getfixturevalue("embedded_dashboard")
    monkeypatch.setenv("PRECON_SERVICE_DATA_DIR", str(saved_data))
    monkeypatch.delenv("PRECON_DASHBOARD_DB", raising=False)
    reset_caches()
    (saved_data / "dashboard.sqlite3").unlink(missing_ok=True)
    with Client(api.connection().url, DEV_API_KEY, cache=False, max_retries=0) as client:
        for subscription in client.list_webhooks():
            client.delete_webhook(subscription.id)
        yield client


@pytest.fixture
def store(oracle: Client, saved_data: Path) -> SavedSearches:
    return SavedSearches(saved_data / "dashboard.sqlite3")


def ok(app: AppTest) -> AppTest:
    assert not app.exception, [e.value for e in app.exception]
    return app


def save_on(app: AppTest, where: str, name: str, who: str = "") -> AppTest:
    app.text_input(key=f"saved_name_{where}").set_value(name)
    app.text_input(key=f"saved_who_{where}").set_value(who)
    [button] = [b for b in app.button if b.label in ("Save", "Watch this listing")]
    return ok(button.click().run())


def a_city(oracle: Client) -> str:
    counts = oracle.facet_counts(["cityOrDistrict"])
    return max(counts["cityOrDistrict"], key=lambda city: counts["cityOrDistrict"][city])


def test_save_a_search_on_search_and_on_map(oracle: Client, store: SavedSearches) -> None:
    city = a_city(oracle)
    state = FilterState().with_value("city", city).with_range("beds", 2, None)
    app = ok(open_page("views/search.py", state.to_params()))
    save_on(app, "search", f"{city} 2+ beds", "Ann")
    assert any("Saved **" in m.value and "matching now" in m.value for m in app.success)
    [saved] = store.all()
    assert (saved.name, saved.saved_by, saved.state, saved.version, saved.province) == (
        f"{city} 2+ beds", "Ann", state, "v1", "all",
    )  # fmt: skip
    expected = oracle.search_listings(
        per_page=0, filter=state.listing_expression(), unit_filter=state.unit_expression()
    ).total
    assert saved.answer is not None and saved.answer.total == expected == len(saved.answer.matches)

    app = ok(open_page("views/map.py", {"type": "Condo"}))
    save_on(app, "map", "Condos")
    assert [s.name for s in store.all()] == ["Condos", f"{city} 2+ beds"]
    assert store.all()[0].params == {"type": "Condo"}


@pytest.mark.parametrize(("name", "said"), [("", "Give the search a name"), ("n" * 10_000, "this one has 10,000")])
def test_a_bad_name_says_why_and_saves_nothing(oracle: Client, store: SavedSearches, name: str, said: str) -> None:
    store.save("kept", FilterState(), deployment="x")
    app = ok(open_page("views/search.py"))
    save_on(app, "search", name)
    assert any(said in w.value for w in app.warning), [w.value for w in app.warning]
    assert [s.name for s in store.all()] == ["kept"]


def test_the_page_lists_them_with_markup_as_text_and_what_matches_now(oracle: Client, store: SavedSearches) -> None:
    app = ok(open_page("views/search.py", {"type": "Condo"}))
    markup = "<b>bold</b> **stars** <script>x</script>"
    save_on(app, "search", markup, "<i>me</i>")
    app = ok(open_page(SAVED))
    text = page_text(app)
    assert "<b>" not in text and "\\<b\\>bold\\</b\\>" in text, text
    assert "\\*\\*stars\\*\\*" in text and "Saved by \\<i\\>me\\</i\\>" in text
    condos = oracle.search_listings(per_page=0, filter="type:Condo").total
    assert f"**{condos:,} matching now**" in text
    assert "Not opened yet" not in text and "nothing changed" in text


def doctored(saved: SavedSearch, oracle: Client) -> Answer:
    """What it answered "before", made to differ from now: one listing missing (new), one that does not exist
    (gone: a deleted listing), one price and one status not as they are."""
    assert saved.answer is not None
    matches = dict(saved.answer.matches)
    new_id, moved_id = list(matches)[:2]
    del matches[new_id]
    moved = matches[moved_id]
    matches[moved_id] = Match(moved.name, (moved.start_price or 0) + 1000, "Pending-ish")
    matches["DELETED-1"] = Match("Gone Towers", 1, "Sold Out")
    return replace(saved.answer, matches=matches, total=len(matches))


def test_what_changed_since_last_opened_then_mark_as_seen(oracle: Client, store: SavedSearches) -> None:
    app = ok(open_page("views/search.py", {"type": "Condo"}))
    save_on(app, "search", "Condos")
    [saved] = store.all()
    store.record_answer(saved.id, doctored(saved, oracle))
    app = ok(open_page(SAVED))
    assert "1 new, 1 gone, 1 price change, 1 status change" in page_text(app)
    [diff] = [d.value for d in app.dataframe if "What" in d.value.columns]
    assert sorted(diff["What"]) == ["Match gone", "New match", "Price", "Selling status"]
    assert "Gone Towers" in set(diff["Name"])
    ok(app.button(key=f"saved_seen_{saved.id}").click().run())
    assert "Marked as seen" in page_text(app) and "nothing changed" in page_text(app)
    assert store.get(saved.id).answer.total == store.get(saved.id).answer.total  # type: ignore[union-attr]
    assert "DELETED-1" not in store.get(saved.id).answer.matches  # type: ignore[union-attr]


def test_a_watched_listing_that_is_deleted_shows_as_gone(oracle: Client, store: SavedSearches) -> None:
    watch = store.save(
        "Watch: a listing now deleted", FilterState(), deployment="embedded:x", listing_id="NO-SUCH-LISTING",
        answer=Answer(Answer(api_now()).at, {"NO-SUCH-LISTING": Match("Gone Towers", 500_000, "Selling Now")}, 1),
    )  # fmt: skip
    app = ok(open_page(SAVED))
    text = page_text(app)
    assert "1 gone" in text and "**0 matching now**" in text and "watching listing" in text, text
    assert not app.error, [e.value for e in app.error]
    assert store.get(watch.id).listing_id == "NO-SUCH-LISTING"


def api_now() -> Any:
    from precon.dashboard.saved_searches import now

    return now()


def test_watch_a_listing_from_its_page(oracle: Client, store: SavedSearches) -> None:
    [listing] = oracle.search_listings(per_page=1).results
    app = ok(open_page("views/listing.py", {"id": listing.id or ""}))
    save_on(app, "watch_" + (listing.id or ""), "Watching it", "Bo")
    [watch] = store.all()
    assert watch.listing_id == listing.id and watch.answer is not None
    assert list(watch.answer.matches) == [listing.id]
    app = ok(open_page("views/listing.py", {"id": listing.id or ""}))
    assert any("Watched (1)" in link.label for link in app.get("page_link")), "the page says it is watched"


def test_open_goes_to_search_with_the_saved_state(oracle: Client, store: SavedSearches) -> None:
    state = FilterState().with_value("type", "Condo").with_range("price", None, 900_000)
    saved = store.save("Open me", state, deployment="x", province="on", version="v1")
    app = ok(open_page(SAVED))
    ok(app.button(key=f"saved_open_{saved.id}").click().run())
    params = {k: app.query_params[k] for k in app.query_params}
    assert params.get("type") == "Condo" and params.get("price") == "..900000" and params.get("province") == "on"
    assert store.get(saved.id).answer is not None, "opening records what it answers now"


def test_rename_refuses_a_bad_name_and_delete_removes(oracle: Client, store: SavedSearches) -> None:
    saved = store.save("Before", FilterState(), deployment="x")
    app = ok(open_page(SAVED))
    app.text_input(key=f"saved_rename_{saved.id}").set_value("x" * 10_000)
    ok(app.button(key=f"saved_rename_go_{saved.id}").click().run())
    assert "this one has 10,000" in page_text(app)
    assert store.get(saved.id).name == "Before"
    app.text_input(key=f"saved_rename_{saved.id}").set_value("After")
    ok(app.button(key=f"saved_rename_go_{saved.id}").click().run())
    assert store.get(saved.id).name == "After"
    ok(app.button(key=f"saved_delete_{saved.id}").click().run())
    assert store.all() == [] and "Deleted the saved search" in page_text(app)


def test_an_unreadable_file_is_a_message_and_the_pages_work(
    oracle: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    damaged = tmp_path / "damaged.sqlite3"
    damaged.write_bytes(b"not sqlite " * 200)
    monkeypatch.setenv("PRECON_DASHBOARD_DB", str(damaged))
    app = ok(open_page(SAVED))
    assert any("not a readable SQLite file" in e.value for e in app.error), [e.value for e in app.error]
    app = ok(open_page("views/search.py", {"type": "Condo"}))
    save_on(app, "search", "anything")
    assert any("could not be written" in e.value for e in app.error)
    assert "results" in page_text(app), "the search itself still works"
    assert damaged.read_bytes() == b"not sqlite " * 200


def test_alert_me_makes_filtered_subscriptions_shown_on_webhooks(oracle: Client, store: SavedSearches) -> None:
    saved = store.save("Alerting condos", FilterState().with_value("type", "Condo"), deployment=deployment_here())
    app = ok(open_page(SAVED))
    where = f"alert_{saved.id}"
    app.text_input(key=f"{where}_url").set_value("http://127.0.0.1:9/hooks")
    app.checkbox(key=f"{where}_status").uncheck()
    ok(app.button(key=f"FormSubmitter:{where}_form-Turn alerts on").click().run())
    assert "Alerts on: 2 subscriptions" in page_text(app), page_text(app)
    subscriptions = {s.event: s for s in oracle.list_webhooks()}
    assert set(subscriptions) == {"listing.matched", "listing.updated"}
    for subscription in subscriptions.values():
        assert (subscription.filterQuery, subscription.fields) == ("type:Condo", ["startPrice", "price"])
    assert {a.subscription_id for a in store.alerts()} == {s.id for s in subscriptions.values()}
    assert len([c for c in app.code if c.value.startswith("whsec_")]) == 2, "the secrets are shown once"

    hooks = ok(open_page("views/webhooks.py"))
    [table] = [d.value for d in hooks.dataframe if "saved_search" in d.value.columns]
    assert set(table["saved_search"]) == {"Alerting condos"}

    app = ok(open_page(SAVED))
    ok(app.button(key=f"{where}_stop").click().run())
    assert oracle.list_webhooks() == [] and store.alerts() == []


def deployment_here() -> str:
    return f"embedded:{api.connection().data_dir.resolve()}"  # type: ignore[union-attr]


def test_alert_me_is_off_and_says_why_where_it_cannot_be(
    oracle: Client, store: SavedSearches, monkeypatch: pytest.MonkeyPatch
) -> None:
    words = store.save("With words", FilterState(text="park").with_value("type", "Condo"), deployment=deployment_here())
    app = ok(open_page(SAVED))
    assert "Alerts off: It has search words" in page_text(app)
    assert not any(w.key == f"alert_{words.id}_url" for w in app.text_input)

    import httpx

    class Plain:
        def raise_for_status(self) -> None:
            pass

        def json(self) -> dict[str, Any]:
            return {"paths": {"/v1/on/webhooks": {"post": {}}}}

    monkeypatch.setattr(httpx, "get", lambda *args, **kwargs: Plain())
    saved_alerts._capability.clear()
    store.rename(words.id, "still here")
    app = ok(open_page(SAVED))
    assert "does not take filtered webhook subscriptions" in page_text(app)
