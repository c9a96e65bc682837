"""precon/dashboard/saved_searches.py: the dashboard's saved searches in their SQLite file, without Streamlit."""

from __future__ import annotations

import os
import sqlite3
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from precon import filters
from precon.dashboard.filter_state import FilterState
from precon.dashboard.saved_searches import (
    Answer,
    Match,
    Refused,
    SavedSearches,
    Unavailable,
    alert_fields,
    alert_problem,
    clean_name,
    compare,
    offers_filtered_subscriptions,
)

HERE = "embedded:/data"
MOMENT = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def store(tmp_path: Path) -> SavedSearches:
    return SavedSearches(tmp_path / "dashboard.sqlite3")


def a_state() -> FilterState:
    state = FilterState(text="rooftop").with_value("city", "Toronto").with_value("city", "Oak, Maple")
    return state.with_value("builder", "dckH8").with_range("beds", 2, None).with_range("price", None, 800_000.5)


def an_answer(**matches: tuple[float | None, str | None]) -> Answer:
    found = {key: Match(f"{key} Towers", price, status) for key, (price, status) in matches.items()}
    return Answer(MOMENT, found, len(found))


def test_a_saved_search_comes_back_exactly(store: SavedSearches) -> None:
    state = a_state().with_available(True)
    answer = an_answer(A=(500_000, "Selling Now"), B=(None, None))
    saved = store.save(
        "Toronto 2-beds", state, deployment=HERE, saved_by="Ann", version="v1-lite", province="on", answer=answer
    )
    again = store.get(saved.id)
    assert again == saved
    assert again.state == state
    assert again.params == state.to_params()
    assert (again.name, again.saved_by, again.version, again.province, again.deployment) == (
        "Toronto 2-beds", "Ann", "v1-lite", "on", HERE,
    )  # fmt: skip
    assert again.answer == answer and again.last_opened == MOMENT
    assert again.address() == {**state.to_params(), "version": "v1-lite", "province": "on"}
    assert [s.id for s in store.all()] == [saved.id]


def test_newest_first_rename_delete_and_the_answer_recorded(store: SavedSearches) -> None:
    first = store.save("first", FilterState(), deployment=HERE)
    second = store.save("second", FilterState(text="x"), deployment=HERE)
    assert [s.name for s in store.all()] == ["second", "first"]
    store.rename(first.id, "  renamed\n\tfirst  ")
    assert store.get(first.id).name == "renamed first"
    answer = an_answer(A=(1, "Pending"))
    store.record_answer(second.id, answer)
    assert store.get(second.id).answer == answer
    store.delete(first.id)
    assert [s.name for s in store.all()] == ["second"]
    with pytest.raises(KeyError):
        store.rename(first.id, "gone")


def test_a_watch_filters_its_one_listing(store: SavedSearches) -> None:
    watch = store.save("Watch: King West", FilterState(), deployment=HERE, listing_id="AB12")
    assert watch.listing_id == "AB12"
    assert filters.to_query(watch.listing_filter()) == filters.to_query(filters.eq("listingId", "AB12"))
    assert watch.unit_filter() is None
    both = store.save("x", FilterState().with_value("type", "Condo"), deployment=HERE, listing_id="AB12")
    assert "listingId" in filters.to_query(both.listing_filter()) and "type" in filters.to_query(both.listing_filter())


@pytest.mark.parametrize(
    ("name", "why"),
    [("", "Give the search a name"), ("   \n ", "Give the search a name"), ("x" * 10_000, "this one has 10,000")],
)
def test_a_bad_name_is_refused_and_nothing_is_lost(store: SavedSearches, name: str, why: str) -> None:
    kept = store.save("kept", FilterState(), deployment=HERE)
    with pytest.raises(Refused, match=why):
        store.save(name, FilterState(), deployment=HERE)
    with pytest.raises(Refused, match=why):
        store.rename(kept.id, name)
    assert [(s.id, s.name) for s in store.all()] == [(kept.id, "kept")]


def test_names_keep_markup_as_text_and_200_characters_fit(store: SavedSearches) -> None:
    markup = "<script>alert('x')</script> **bold** [link](javascript:x)"
    assert store.save(markup, FilterState(), deployment=HERE).name == markup
    assert clean_name("y" * 200) == "y" * 200
    with pytest.raises(Refused):
        clean_name("y" * 201)
    with pytest.raises(Refused, match="Saved by"):
        store.save("ok", FilterState(), deployment=HERE, saved_by="w" * 101)


def test_what_changed_between_two_answers() -> None:
    before = an_answer(A=(500_000, "Selling Now"), B=(600_000, "Selling Now"), C=(700_000, "Pending"))
    after = an_answer(A=(510_000, "Selling Now"), C=(700_000, "Sold Out"), D=(400_000, "Selling Now"))
    changed = compare(before, after)
    assert [key for key, _ in changed.new] == ["D"]
    assert [key for key, _ in changed.gone] == ["B"]
    assert [(m.listing_id, m.before, m.after) for m in changed.prices] == [("A", 500_000, 510_000)]
    assert [(m.listing_id, m.before, m.after) for m in changed.statuses] == [("C", "Pending", "Sold Out")]
    assert changed.summary() == "1 new, 1 gone, 1 price change, 1 status change"
    assert compare(after, after).summary() == "nothing changed"
    assert compare(after, Answer(MOMENT)).gone[0][1].name == "A Towers", "a deleted listing is shown as gone"


def test_changes_start_after_what_the_last_answer_had_seen(store: SavedSearches) -> None:
    future = MOMENT + timedelta(days=30)
    saved = store.save("s", FilterState(), deployment=HERE, answer=Answer(MOMENT, {}, 0, future))
    assert saved.changes_since == future + timedelta(milliseconds=1)
    plain = store.save("p", FilterState(), deployment=HERE, answer=Answer(MOMENT, {}, 0, MOMENT - timedelta(days=1)))
    assert plain.changes_since == MOMENT


def test_two_connections_writing_at_once_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite3"
    one, two = SavedSearches(path), SavedSearches(path)
    errors: list[BaseException] = []

    def writer(store: SavedSearches, who: str) -> None:
        try:
            for number in range(25):
                saved = store.save(f"{who} {number}", FilterState(), deployment=HERE, saved_by=who)
                store.record_answer(saved.id, an_answer(A=(number, who)))
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=writer, args=(s, w)) for s, w in ((one, "one"), (two, "two"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    names = {s.name for s in SavedSearches(path).all()}
    assert names == {f"{w} {n}" for w in ("one", "two") for n in range(25)}
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_two_first_writes_to_a_new_file_at_the_same_moment_both_land(tmp_path: Path) -> None:
    # Both switch the new file to WAL mode: SQLite can refuse one at once, without its busy timeout.
    for round_ in range(40):
        path = tmp_path / f"new-{round_}.sqlite3"
        start = threading.Barrier(2)
        errors: list[BaseException] = []

        def first_write(
            who: str, path: Path = path, start: threading.Barrier = start, errors: list[BaseException] = errors
        ) -> None:
            store = SavedSearches(path)
            start.wait()
            try:
                store.save(who, FilterState(), deployment=HERE, saved_by=who)
            except BaseException as error:
                errors.append(error)

        threads = [threading.Thread(target=first_write, args=(who,)) for who in ("one", "two")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == [], f"round {round_}"
        assert {s.name for s in SavedSearches(path).all()} == {"one", "two"}


def test_a_writer_waits_for_another_transaction(tmp_path: Path) -> None:
    path = tmp_path / "busy.sqlite3"
    store = SavedSearches(path)
    store.save("first", FilterState(), deployment=HERE)
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    timer = threading.Timer(0.5, lambda: holder.execute("COMMIT"))
    timer.start()
    store.save("second", FilterState(), deployment=HERE)  # waits for the other writer, then writes
    timer.join()
    holder.close()
    assert {s.name for s in store.all()} == {"first", "second"}


def test_a_damaged_file_is_a_message_and_is_left_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "dashboard.sqlite3"
    path.write_bytes(b"this is not a database " * 100)
    before = path.read_bytes()
    store = SavedSearches(path)
    with pytest.raises(Unavailable, match="not a readable SQLite file"):
        store.all()
    with pytest.raises(Unavailable, match="Nothing in it was changed"):
        store.save("x", FilterState(), deployment=HERE)
    assert path.read_bytes() == before


def test_a_missing_file_reads_as_none_saved_and_is_made_on_first_write(tmp_path: Path) -> None:
    store = SavedSearches(tmp_path / "deeper" / "dashboard.sqlite3")
    assert store.all() == [] and store.alerts() == []
    assert not store.path.exists()
    store.save("x", FilterState(), deployment=HERE)
    assert store.path.exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write a read-only folder")
def test_a_read_only_place_is_a_message_and_what_is_there_still_reads(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    store = SavedSearches(folder / "dashboard.sqlite3")
    store.save("kept", FilterState(), deployment=HERE)
    with sqlite3.connect(store.path) as db:  # a file handed over as it would be copied: not in WAL mode
        db.execute("PRAGMA journal_mode=DELETE")
    folder.chmod(0o555)
    store.path.chmod(0o444)
    try:
        assert [s.name for s in store.all()] == ["kept"]
        with pytest.raises(Unavailable, match="could not be written"):
            store.save("new", FilterState(), deployment=HERE)
        assert [s.name for s in store.all()] == ["kept"]
    finally:
        folder.chmod(0o755)
        store.path.chmod(0o644)


@pytest.mark.parametrize("place", ["/proc/precon-saved/dashboard.sqlite3", "/proc/dashboard.sqlite3"])
def test_a_path_nobody_may_write_is_a_message(place: str) -> None:
    store = SavedSearches(Path(place))
    assert store.all() == []
    with pytest.raises(Unavailable, match="could not be written"):
        store.save("x", FilterState(), deployment=HERE)


def test_unreadable_folder_is_a_message(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    store = SavedSearches(blocker / "dashboard.sqlite3")
    with pytest.raises(Unavailable, match="could not be written"):
        store.save("x", FilterState(), deployment=HERE)


def test_alerts_are_kept_per_saved_search_and_go_with_it(store: SavedSearches) -> None:
    saved = store.save("alerting", FilterState().with_value("city", "Toronto"), deployment=HERE)
    for event, sub in (("listing.matched", "s1"), ("listing.updated", "s2")):
        store.add_alert(
            saved.id, deployment=HERE, subscription_id=sub, event=event, target_url="http://h", fields=["price"]
        )
    assert [(a.subscription_id, a.event, a.fields) for a in store.alerts(HERE)] == [
        ("s1", "listing.matched", ("price",)),
        ("s2", "listing.updated", ("price",)),
    ]
    assert store.alerts("remote:x") == []
    store.forget_alert(HERE, "s1")
    assert [a.subscription_id for a in store.alerts()] == ["s2"]
    store.delete(saved.id)
    assert store.alerts() == []


def test_what_an_alert_asks_for() -> None:
    assert alert_fields(["price"]) == ["startPrice", "price"]
    assert alert_fields(["price", "status"]) == ["startPrice", "price", "sellingStatus", "status"]
    assert alert_fields(["price"], everything=True) is None
    with pytest.raises(Refused):
        alert_fields([])
    store_free = SavedSearches(Path("/nonexistent/never-written.sqlite3"))
    assert store_free.all() == []


def test_which_saved_searches_can_alert(store: SavedSearches) -> None:
    assert alert_problem(store.save("a", FilterState().with_value("city", "Toronto"), deployment=HERE)) is None
    assert alert_problem(store.save("b", FilterState().with_range("beds", 2, None), deployment=HERE)) is None
    assert alert_problem(store.save("w", FilterState(), deployment=HERE, listing_id="X")) is None
    assert "search words" in (alert_problem(store.save("c", FilterState(text="park"), deployment=HERE)) or "")
    assert "no filter" in (alert_problem(store.save("d", FilterState(), deployment=HERE)) or "")


def test_the_capability_is_read_from_the_openapi_document() -> None:
    ours = {
        "paths": {"/{version}/{province}/webhooks": {"post": {"requestBody": {"content": {"application/json": {
            "schema": {"$ref": "#/components/schemas/NewSubscriptionBody"}}}}}}},
        "components": {"schemas": {"NewSubscriptionBody": {"properties": {"targetUrl": {}, "filterQuery": {}}}}},
    }  # fmt: skip
    assert offers_filtered_subscriptions(ours)
    plain = {**ours, "components": {"schemas": {"NewSubscriptionBody": {"properties": {"targetUrl": {}}}}}}
    assert not offers_filtered_subscriptions(plain)
    assert not offers_filtered_subscriptions({})


def test_the_served_openapi_document_offers_filtered_subscriptions() -> None:
    import json

    document = json.loads((Path(__file__).resolve().parent.parent / "docs" / "openapi.json").read_text())
    assert offers_filtered_subscriptions(document)
