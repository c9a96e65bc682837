"""precon.service.stores.importer: classifying records and reading JSON or NDJSON files with line numbers."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from precon.cli import main
from precon.client.models import COLLECTIONS
from precon.service.media_links import MediaPaths
from precon.service.runtime import load
from precon.service.stores.importer import PROFILE_COLLECTIONS, ImportReport, classify, read_file
from precon.service.stores.mirror import staged_record
from precon.service.stores.records import nul_in
from precon.service.stores.sqlite.store import SQLiteStore

NEITHER = "neither a listing (no listingId) nor a profile (no '<Collection>/<id>' path)"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# ----------------------------------------------------------------------------------------------------------
# classify
# ----------------------------------------------------------------------------------------------------------


def test_classify_listing_with_listing_id() -> None:
    record = {"listingId": "ABC123", "path": "Listings/ABC123", "name": "Tower", "numberOfUnits": "312"}
    assert classify(record) == ("listing", record)


def test_classify_listing_id_is_trimmed() -> None:
    assert classify({"listingId": " ABC123 ", "name": "Tower"}) == ("listing", {"listingId": "ABC123", "name": "Tower"})


def test_classify_listing_from_its_path_alone() -> None:
    assert classify({"path": "Listings/ABC123", "name": "Tower"}) == (
        "listing",
        {"path": "Listings/ABC123", "name": "Tower", "listingId": "ABC123"},
    )


def test_classify_listing_from_object_id_and_path() -> None:
    # A search result carries objectID; it is the listing id when listingId is absent.
    record = {"objectID": "XYZ789", "path": "Listings/XYZ789", "_score": 1.5}
    assert classify(record) == ("listing", {**record, "listingId": "XYZ789"})


def test_profile_collections_are_the_models_plus_owners() -> None:
    assert PROFILE_COLLECTIONS == (
        "Architects",
        "Builders",
        "InteriorDesigners",
        "Marketers",
        "SalesCentres",
        "SalesCompanies",
        "Owners",
    )
    assert PROFILE_COLLECTIONS[:-1] == COLLECTIONS


@pytest.mark.parametrize("collection", [*COLLECTIONS, "Owners"])
def test_classify_profile_of_every_collection(collection: str) -> None:
    record = {"path": f"{collection}/5fH9abcDEF0123456789", "name": "Some Company", "listings": ["Listings/A1"]}
    assert classify(record) == ("profile", record)


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"path": "Developers/x1", "name": "?"}, "unknown profile collection 'Developers' in path 'Developers/x1'"),
        ({"path": "builders/x1"}, "unknown profile collection 'builders' in path 'builders/x1'"),
        ({"path": "Builders/"}, "profile path 'Builders/' has no id"),
        ({"path": "Listings/"}, "a listing needs a listingId"),
        ({"listingId": "   "}, "a listing needs a listingId"),
        ({"listingId": 12345}, "a listing needs a listingId"),
        ({"name": "No identity"}, NEITHER),
        ({"path": "Builders"}, NEITHER),
        ({"path": 42}, NEITHER),
        ({}, NEITHER),
    ],
)
def test_classify_refuses_what_is_neither(record: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as raised:
        classify(record)
    assert str(raised.value) == message


@pytest.mark.parametrize(
    ("record", "kind"),
    [([], "list"), ("Listings/ABC123", "str"), (5, "int"), (1.5, "float"), (None, "NoneType"), (True, "bool")],
)
def test_classify_refuses_a_non_object(record: Any, kind: str) -> None:
    with pytest.raises(ValueError) as raised:
        classify(record)
    assert str(raised.value) == f"expected a JSON object, got {kind}"


def test_classify_reports_the_first_invalid_field() -> None:
    with pytest.raises(ValueError) as raised:
        classify({"listingId": "ABC123", "isFeatured": "perhaps"})
    assert str(raised.value) == "isFeatured: Input should be a valid boolean, unable to interpret input"
    with pytest.raises(ValueError) as raised:
        classify({"path": "Builders/b1", "name": 12})
    assert str(raised.value) == "name: Input should be a valid string"


# ----------------------------------------------------------------------------------------------------------
# read_file
# ----------------------------------------------------------------------------------------------------------


def test_read_ndjson_reports_lines_as_they_are_in_the_file(tmp_path: Path) -> None:
    listing = {"listingId": "AAA111", "name": "One"}
    builder = {"path": "Builders/b1", "name": "Builder"}
    lines = [
        json.dumps(builder),  # 1
        "",  # 2
        json.dumps(listing),  # 3
        "{not json",  # 4
        "   ",  # 5
        json.dumps({"name": "orphan"}),  # 6
        json.dumps([listing]),  # 7
        json.dumps({"listingId": "BBB222", "isFeatured": "maybe"}),  # 8
    ]
    report = read_file(write(tmp_path, "r.ndjson", "\n".join(lines) + "\n"))
    assert report.listings == [listing]
    assert report.profiles == [builder]
    assert [line for line, _ in report.problems] == [4, 6, 7, 8]
    assert report.problems[0][1].startswith("not valid JSON: ")
    assert report.problems[1:] == [
        (6, NEITHER),
        (7, "expected a JSON object, got list"),
        (8, "isFeatured: Input should be a valid boolean, unable to interpret input"),
    ]


def test_read_ndjson_with_crlf_line_endings(tmp_path: Path) -> None:
    text = '{"listingId": "AAA111"}\r\n\r\n{"listingId": "BBB222"\r\n{"path": "Owners/o1"}\r\n'
    report = read_file(write(tmp_path, "r.ndjson", text))
    assert report.listings == [{"listingId": "AAA111"}]
    assert report.profiles == [{"path": "Owners/o1"}]
    assert [line for line, _ in report.problems] == [3]


def test_read_single_object_document(tmp_path: Path) -> None:
    record = {"listingId": "AAA111", "name": "One", "type": ["Condo"]}
    report = read_file(write(tmp_path, "one.json", json.dumps(record, indent=2)))
    assert report == ImportReport(listings=[record], profiles=[], problems=[])


def test_read_json_array_element_lines(tmp_path: Path) -> None:
    text = "\n".join(
        [
            "[",  # 1
            '  {"listingId": "AAA111",',  # 2
            '   "name": "One"},',  # 3
            "",  # 4
            '  {"path": "Architects/a1",',  # 5
            '   "name": "Arch"},',  # 6
            '  {"name": "neither"},',  # 7
            '  17, {"listingId": "BBB222"}, [',  # 8
            "  1]",  # 9
            "]",  # 10
        ]
    )
    report = read_file(write(tmp_path, "r.json", text))
    assert report.listings == [{"listingId": "AAA111", "name": "One"}, {"listingId": "BBB222"}]
    assert report.profiles == [{"path": "Architects/a1", "name": "Arch"}]
    assert report.problems == [
        (7, NEITHER),
        (8, "expected a JSON object, got int"),
        (8, "expected a JSON object, got list"),
    ]


def test_read_pretty_printed_array_reports_where_each_element_starts(tmp_path: Path) -> None:
    records: list[Any] = [{"listingId": f"L{n:05d}", "type": ["Condo"]} for n in range(3)]
    records.insert(2, {"bad": True})
    text = json.dumps(records, indent=2)
    starts = [n for n, line in enumerate(text.splitlines(), start=1) if line == "  {"]
    report = read_file(write(tmp_path, "r.json", text))
    assert len(starts) == 4
    assert report.problems == [(starts[2], NEITHER)]
    assert [r["listingId"] for r in report.listings] == ["L00000", "L00001", "L00002"]


def test_read_envelopes(tmp_path: Path) -> None:
    listing = {"listingId": "AAA111", "objectID": "AAA111", "name": "One"}
    results_text = '{"results": [\n  ' + json.dumps(listing) + ',\n  "junk"\n], "total": 2, "page": 0}'
    report = read_file(write(tmp_path, "search.json", results_text))
    assert report == ImportReport(listings=[listing], profiles=[], problems=[(3, "expected a JSON object, got str")])

    profile = {"path": "SalesCentres/s1", "name": "Centre"}
    both = '{\n"profiles": [\n' + json.dumps(profile) + '\n],\n"listings": [\n' + json.dumps(listing) + ",\n3]}"
    report = read_file(write(tmp_path, "both.json", both))
    assert report == ImportReport(
        listings=[listing], profiles=[profile], problems=[(7, "expected a JSON object, got int")]
    )


def test_read_malformed_json_document_is_one_problem(tmp_path: Path) -> None:
    report = read_file(write(tmp_path, "broken.json", '[\n  {"listingId": "AAA111"},\n  {"listingId": \n]'))
    assert report.listings == [] and report.profiles == []
    assert len(report.problems) == 1
    line, message = report.problems[0]
    assert line == 4
    assert message.startswith("not valid JSON: ") and "line 4" in message


def test_read_empty_file(tmp_path: Path) -> None:
    assert read_file(write(tmp_path, "empty.ndjson", "")) == ImportReport()
    assert read_file(write(tmp_path, "empty.json", "[]")) == ImportReport()


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\x85"])
def test_read_ndjson_with_unicode_line_separators_inside_strings(tmp_path: Path, separator: str) -> None:
    records = [
        {"listingId": "AAA111", "summary": f"Phase one{separator}Phase two"},
        {"listingId": "BBB222", "name": "Next"},
        {"name": "orphan"},
    ]
    path = tmp_path / "r.ndjson"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))  # orjson leaves these characters raw
    report = read_file(path)
    assert report == ImportReport(listings=records[:2], profiles=[], problems=[(3, NEITHER)])


def test_read_envelope_with_another_array_before_results(tmp_path: Path) -> None:
    listing = {"listingId": "AAA111", "name": "One"}
    text = '{"ids": ["AAA111"],\n "results": [\n  ' + json.dumps(listing) + "\n]}"
    assert read_file(write(tmp_path, "search.json", text)) == ImportReport(listings=[listing])


def test_read_envelope_with_a_bracket_in_a_string_before_results(tmp_path: Path) -> None:
    listing = {"listingId": "AAA111", "name": "One"}
    text = '{"query": "[draft]",\n "results": [\n  ' + json.dumps(listing) + "\n]}"
    assert read_file(write(tmp_path, "search.json", text)) == ImportReport(listings=[listing])


PROFILE_WITH_LISTINGS = {
    "id": "b1",
    "path": "Builders/b1",
    "name": "Brick Builders",
    "listings": ["Listings/AAA111", "Listings/BBB222"],
}


def test_read_single_profile_document(tmp_path: Path) -> None:
    report = read_file(write(tmp_path, "profile.json", json.dumps(PROFILE_WITH_LISTINGS, indent=2)))
    assert report == ImportReport(profiles=[PROFILE_WITH_LISTINGS])


def test_read_ndjson_of_one_profile(tmp_path: Path) -> None:
    report = read_file(write(tmp_path, "profile.ndjson", json.dumps(PROFILE_WITH_LISTINGS) + "\n"))
    assert report == ImportReport(profiles=[PROFILE_WITH_LISTINGS])


def test_read_ndjson_of_profiles_with_listings(tmp_path: Path) -> None:
    # With more than one line the file is NDJSON and the profiles load: the failure above is the one-record case.
    other = {**PROFILE_WITH_LISTINGS, "id": "b2", "path": "Builders/b2"}
    text = json.dumps(PROFILE_WITH_LISTINGS) + "\n" + json.dumps(other) + "\n"
    assert read_file(write(tmp_path, "profiles.ndjson", text)) == ImportReport(profiles=[PROFILE_WITH_LISTINGS, other])


# ----------------------------------------------------------------------------------------------------------
# floor-plan ids: unique within a listing and across listings (the file's and the store's)
# ----------------------------------------------------------------------------------------------------------


def plan(plan_id: str | None, name: str) -> dict[str, Any]:
    return {"name": name, "squareFeet": "700"} if plan_id is None else {"id": plan_id, "name": name}


def listing_with_plans(listing_id: str, *plan_ids: str | None) -> dict[str, Any]:
    plans = [plan(plan_id, f"Plan {n}") for n, plan_id in enumerate(plan_ids, start=1)]
    return {
        "listingId": listing_id,
        "path": f"Listings/{listing_id}",
        "name": f"Tower {listing_id}",
        "floorPlans": plans,
    }


def ndjson(tmp_path: Path, name: str, *records: dict[str, Any]) -> Path:
    return write(tmp_path, name, "".join(json.dumps(record) + "\n" for record in records))


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    opened = SQLiteStore(tmp_path / "catalogue.sqlite3")
    yield opened
    opened.close()


def import_into(store: SQLiteStore, path: Path) -> ImportReport:
    """What ``precon catalogue import`` does: read the file against the store, then load what passed."""
    report = read_file(path, plan_holders=store.listings_holding_plans)
    load(store, report.listings, report.profiles)
    return report


def stored_plan_ids(store: SQLiteStore, *listing_ids: str) -> dict[str, list[str]]:
    found = store.get_listings(list(listing_ids), None)
    return {lid: [p["id"] for p in record["floorPlans"]] for lid, record in found.items()}


def test_a_listing_repeating_a_plan_id_is_refused_and_the_others_import(tmp_path: Path, store: SQLiteStore) -> None:
    builder = {"id": "b1", "path": "Builders/b1", "name": "Brick Builders"}
    path = ndjson(
        tmp_path,
        "records.ndjson",
        builder,
        listing_with_plans("AAA111", "p1", "p2", "p1", None),
        listing_with_plans("BBB222", "q1", "q2"),
    )
    report = import_into(store, path)
    assert report.problems == [
        (2, "listing AAA111: floor plan id 'p1' is repeated (floorPlans positions 1, 3); plan ids must be unique")
    ]
    assert [record["listingId"] for record in report.listings] == ["BBB222"]
    assert store.counts() == {"listings": 1, "profiles": 1}
    assert stored_plan_ids(store, "AAA111", "BBB222") == {"BBB222": ["q1", "q2"]}


def test_a_listing_repeating_a_unit_number_within_a_plan_is_refused_saying_where(
    tmp_path: Path, store: SQLiteStore
) -> None:
    """A unit is known by its plan and number: two units of one plan under one number are refused, with the line
    and the positions; the same number in two plans is fine, as is a plan's unit without a number."""

    def unit(number: Any) -> dict[str, Any]:
        return {"unitNumber": number, "floor": "3", "status": "Available", "price": 500000}

    repeating = listing_with_plans("AAA111", "p1", "p2")
    repeating["floorPlans"][0]["units"] = [unit("301"), unit("302")]
    repeating["floorPlans"][1].update(name="Two Bed", units=[unit("303"), unit(304), unit(" 304 "), unit(None)])
    fine = listing_with_plans("BBB222", "q1", "q2")
    fine["floorPlans"][0]["units"] = [unit("101"), {"floor": "1"}, {"floor": "1"}]
    fine["floorPlans"][1]["units"] = [unit("101")]
    path = ndjson(tmp_path, "records.ndjson", fine, repeating)
    report = import_into(store, path)
    assert report.problems == [
        (
            2,
            "listing AAA111: floor plan 'Two Bed' (floorPlans position 2) repeats unit number '304' (units positions "
            "2, 3); a unit is known by its plan and number, which must be unique within the plan",
        )
    ]
    assert [record["listingId"] for record in report.listings] == ["BBB222"]
    assert store.counts()["listings"] == 1


def test_ids_given_as_number_and_text_are_the_same_id(tmp_path: Path, store: SQLiteStore) -> None:
    record = listing_with_plans("AAA111", "7")
    record["floorPlans"].append({"id": 7, "name": "Plan 7 again"})
    report = import_into(store, ndjson(tmp_path, "records.ndjson", record))
    assert report.problems == [
        (1, "listing AAA111: floor plan id '7' is repeated (floorPlans positions 1, 2); plan ids must be unique")
    ]


def test_a_plan_id_of_an_earlier_listing_of_the_file_is_refused(tmp_path: Path, store: SQLiteStore) -> None:
    path = ndjson(
        tmp_path,
        "records.ndjson",
        listing_with_plans("AAA111", "p1", "p2"),
        listing_with_plans("BBB222", "q1", "p2"),
        listing_with_plans("CCC333", "r1"),
    )
    report = import_into(store, path)
    assert report.problems == [
        (
            2,
            "listing BBB222: floor plan id 'p2' (floorPlans position 2) is already used by listing AAA111; "
            "plan ids must be unique across listings",
        )
    ]
    assert stored_plan_ids(store, "AAA111", "BBB222", "CCC333") == {"AAA111": ["p1", "p2"], "CCC333": ["r1"]}


def test_a_plan_id_a_stored_listing_holds_is_refused(tmp_path: Path, store: SQLiteStore) -> None:
    import_into(store, ndjson(tmp_path, "first.ndjson", listing_with_plans("AAA111", "p1", "p2")))
    report = import_into(
        store,
        ndjson(tmp_path, "second.ndjson", listing_with_plans("CCC333", "r1"), listing_with_plans("BBB222", "p2")),
    )
    assert report.problems == [
        (
            2,
            "listing BBB222: floor plan id 'p2' (floorPlans position 1) is already used by listing AAA111; "
            "plan ids must be unique across listings",
        )
    ]
    assert stored_plan_ids(store, "AAA111", "BBB222", "CCC333") == {"AAA111": ["p1", "p2"], "CCC333": ["r1"]}


def test_reimporting_a_listing_with_its_own_ids_is_fine(tmp_path: Path, store: SQLiteStore) -> None:
    records = (listing_with_plans("AAA111", "p1", "p2"), listing_with_plans("BBB222", "q1", None))
    first = import_into(store, ndjson(tmp_path, "first.ndjson", *records))
    again = import_into(store, ndjson(tmp_path, "again.ndjson", *records, records[0]))
    assert first.problems == again.problems == []
    ids = stored_plan_ids(store, "AAA111", "BBB222")
    assert ids["AAA111"] == ["p1", "p2"] and ids["BBB222"][0] == "q1"
    assert ids == stored_plan_ids(store, "AAA111", "BBB222")  # the generated id is stable across re-imports
    assert first.listings[1]["floorPlans"][1]["id"] == ids["BBB222"][1]


def test_an_id_released_earlier_in_the_file_may_be_taken_but_not_before(tmp_path: Path, store: SQLiteStore) -> None:
    import_into(store, ndjson(tmp_path, "first.ndjson", listing_with_plans("AAA111", "p1")))
    # BBB222 comes before AAA111 gives up p1: refused; DDD444 comes after: accepted.
    report = import_into(
        store,
        ndjson(
            tmp_path,
            "second.ndjson",
            listing_with_plans("BBB222", "p1"),
            listing_with_plans("AAA111", "p9"),
            listing_with_plans("DDD444", "p1"),
        ),
    )
    assert [line for line, _ in report.problems] == [1]
    assert "is already used by listing AAA111" in report.problems[0][1]
    assert stored_plan_ids(store, "AAA111", "BBB222", "DDD444") == {"AAA111": ["p9"], "DDD444": ["p1"]}
    assert store.listings_holding_plans(["p1", "p9", "nope"]) == {"p1": ["DDD444"], "p9": ["AAA111"]}


def test_the_import_command_refuses_a_taken_plan_id(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = ndjson(tmp_path, "first.ndjson", listing_with_plans("AAA111", "p1"))
    second = ndjson(tmp_path, "second.ndjson", listing_with_plans("BBB222", "p1"), listing_with_plans("CCC333", "r1"))
    runner = CliRunner()
    assert runner.invoke(main, ["catalogue", "import", str(first), "--data", str(data)]).exit_code == 0
    result = runner.invoke(main, ["catalogue", "import", str(second), "--data", str(data)])
    assert result.exit_code == 0, result.output
    assert f"{second}:1: skipped: listing BBB222: floor plan id 'p1'" in result.stderr
    assert "imported 1 listings and 0 profiles; skipped 1" in result.stderr


def test_import_file_into_sqlite_writes_what_read_file_reports(tmp_path: Path) -> None:
    from precon.service.stores.importer import import_file

    plans = [{"id": "P-1", "name": "One"}]
    records = [
        {"listingId": "IMP001", "name": "First", "state": "Ontario", "floorPlans": plans},
        {"listingId": "IMP002", "name": "Second", "state": "Ontario", "floorPlans": plans},  # P-1 is taken
        {"path": "Builders/imp", "name": "Importer Builder"},
        {"path": "Nowhere/x"},
    ]
    file = tmp_path / "records.ndjson"
    file.write_bytes(b"".join(orjson.dumps(record) + b"\n" for record in records))
    store = SQLiteStore(tmp_path / "catalogue.sqlite3")
    heard: list[int] = []
    store.listeners.append(lambda changes: heard.append(len(changes)))
    try:
        expected = read_file(file, plan_holders=store.listings_holding_plans)
        report = import_file(store, file)
        assert report == expected
        assert [line for line, _ in report.problems] == [2, 4]
        assert store.counts() == {"listings": 1, "profiles": 1}
        assert sum(heard) == 2
        again = import_file(store, file)  # P-1 is IMP001's own: it keeps it
        assert [line for line, _ in again.problems] == [2, 4]
    finally:
        store.close()


@pytest.mark.parametrize(
    ("record", "where"),
    [
        ({"listingId": "A1", "name": "Nul\x00Tower"}, "name"),
        ({"listingId": "A1", "floorPlans": [{"id": "p1"}, {"id": "p\x002"}]}, "floorPlans.1.id"),
        ({"listingId": "A1", "amenities": ["Gym", "Po\x00ol"]}, "amenities.1"),
        ({"listingId": "A1", "extra": {"k\x00": 1}}, "the key 'extra.k%00'"),
    ],
)
def test_a_record_holding_a_nul_character_is_refused_saying_where(record: dict[str, Any], where: str) -> None:
    assert nul_in(record) == where
    with pytest.raises(ValueError, match=f"^{re.escape(where)}: holds a NUL character"):
        classify(record)


def test_a_mirrored_record_holding_a_nul_character_stops_the_mirror() -> None:
    media = MediaPaths("http://source.test")
    assert staged_record("listings", {"listingId": "A1", "name": "Tower"}, media)[0] == "A1"
    with pytest.raises(ValueError, match="'B2' holds a NUL character in name"):
        staged_record("listings", {"listingId": "B2", "name": "Nul\x00Tower"}, media)
