"""How floor plans and units are known across writes (precon.record_keys), and that history, webhook selection and
the market's columns all know them so."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from precon.record_keys import key_of, keyed, plans_by_key, units_by_key
from precon.service.stores.history import listing_changes
from precon.service.webhooks.selection import reverted

AT = "2026-01-01T00:00:00.000Z"


def test_a_plan_by_its_id_a_unit_by_its_number_either_without_one_by_its_position() -> None:
    plans = [{"id": "a"}, {"name": "no id"}, "not a plan", {"id": ""}, {"id": 7}]
    assert list(plans_by_key({"floorPlans": plans})) == ["a", "#1", "#3", "7"]
    units = [{"unitNumber": "101"}, {"unitNumber": 102}, {"floor": "1"}, {"unitNumber": None}]
    assert list(units_by_key({"units": units})) == ["101", "102", "#2", "#3"]
    assert units_by_key({"units": {"unitNumber": "301"}}) == {"301": {"unitNumber": "301"}}  # one record, not a list
    assert units_by_key({"units": "none"}) == {} == plans_by_key({})


values = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from(["", "1", "2", "#0", "#1", "a"]))
records = st.one_of(st.dictionaries(st.sampled_from(["unitNumber", "floor"]), values, max_size=2), values)


@given(st.lists(records, max_size=6))
def test_the_quick_way_of_keying_a_list_finds_what_the_record_by_record_way_finds(items: list[Any]) -> None:
    """Text keys all distinct are keyed in one comprehension; anything else record by record, the later of two
    sharing a key found under it: both give the same."""
    by_record = {key_of(item, "unitNumber", at): item for at, item in enumerate(items) if isinstance(item, dict)}
    assert keyed(items, "unitNumber") == by_record
    assert list(keyed(items, "unitNumber")) == list(by_record)


def test_history_and_webhook_selection_know_a_unit_without_a_number_by_its_position() -> None:
    """A write that sells the second unit of a plan whose units have no numbers: history names it ``#1`` and
    selection, undoing the entry, finds that same unit."""
    before = {
        "listingId": "L1",
        "floorPlans": [{"name": "A", "units": [{"status": "Available"}, {"status": "Available"}]}],
    }
    after = copy.deepcopy(before)
    after["floorPlans"][0]["units"][1]["status"] = "Sold"
    entries = listing_changes(before, after, AT)
    assert [(e["plan"], e["unit"], e["field"]) for e in entries] == [("#0", "#1", "status")]
    assert reverted(after, entries) == before


def test_undoing_a_write_to_a_plan_holding_one_unit_as_an_object_leaves_the_written_document_alone() -> None:
    before = {"listingId": "L1", "floorPlans": [{"id": "p", "units": {"unitNumber": "101", "price": 1}}]}
    after = copy.deepcopy(before)
    after["floorPlans"][0]["units"]["price"] = 2
    kept = copy.deepcopy(after)
    assert reverted(after, listing_changes(before, after, AT)) == before
    assert after == kept
