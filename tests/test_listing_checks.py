"""The contradictions between a listing's incentives and its fees and deposits: the named examples, then
hypothesis over generated listings against an oracle that knows what each generated incentive promises."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from precon.client.models import Listing
from precon.dashboard.listing_checks import (
    Contradiction,
    DepositTerms,
    contradictions,
    deposit_promise,
    incentive_plain_text,
    promises,
    structure_terms,
)

FREE_LOCKER = {"title": "Free locker", "description": "A storage locker included with every suite."}
EXTENDED_DEPOSIT = {"title": "Extended deposit structure", "description": "Only 15% down spread over 540 days."}


def schedule(total: float, amounts: list[float], suffixes: list[str], kind: str = "Condo") -> dict[str, Any]:
    return {
        "type": kind,
        "totalDeposit": total,
        "milestones": [
            {"amount": a, "suffix": s, "type": "percentage", "text": f"{a:g}% {s}"}
            for a, s in zip(amounts, suffixes, strict=True)
        ],
    }


TWENTY_OVER_365 = schedule(20, [5, 5, 5, 5], ["on signing", "in 90 days", "in 180 days", "in 365 days"])


# -- the named examples -------------------------------------------------------------------------------------


def test_a_free_locker_against_a_locker_charged_extra() -> None:
    listing = Listing(listingId="L1", incentives=[FREE_LOCKER], storageCost=7400, storageCostIncluded=False)
    [found] = contradictions(listing)
    assert found.topic == "locker" and found.section == "pricing"
    assert found.incentive == "Free locker — A storage locker included with every suite."
    assert "$7,400" in found.fact and "extra" in found.fact
    assert "Free locker" in found.message and "$7,400" in found.message


def test_a_deposit_incentive_against_the_schedule() -> None:
    listing = Listing(listingId="L2", incentives=[EXTENDED_DEPOSIT], paymentStructures=[TWENTY_OVER_365])
    [found] = contradictions(listing)
    assert found.topic == "deposit" and found.section == "deposits"
    assert "15% over 540 days" in found.fact and "Condo 20% over 365 days" in found.fact


def test_a_deposit_incentive_one_structure_agrees_with_is_no_contradiction() -> None:
    agreeing = schedule(15, [5, 5, 5], ["on signing", "in 180 days", "in 540 days"])
    international = schedule(25, [5, 5, 5, 5, 5], ["on signing"] + [f"in {d} days" for d in (30, 90, 180, 365)])
    listing = Listing(incentives=[EXTENDED_DEPOSIT], paymentStructures=[agreeing, international])
    assert contradictions(listing) == []
    assert structure_terms(listing.paymentStructures[0]) == DepositTerms(15, 540)


def test_what_is_not_a_promise() -> None:
    # The legal fees are "not included", but the assignment is at no charge.
    assert promises("Free assignment — Assign your unit before closing at no charge (legal fees not included).") == {
        "assignment"
    }
    assert promises("Capped development charges — Development charges and levies capped for all suites.") == set()
    assert promises("Parking not included") == set()
    assert promises("Locker extra, $5,000") == set()
    assert promises("Free appliance package — Stainless-steel appliance package included.") == set()
    assert promises("Maintenance fees paid — Common-element fees paid for the first year.") == {"maintenance"}
    assert promises("Free parking and locker") == {"parking", "locker"}
    assert promises("Development levies waived") == {"development levies"}
    assert deposit_promise("Cash back on closing — $20,000 cash back") is None
    assert deposit_promise("Only 10% deposit") == DepositTerms(10, None)


def test_promises_kept_are_not_flagged() -> None:
    listing = Listing(
        incentives=[
            FREE_LOCKER,
            {"title": "Free parking", "description": "One parking space included."},
            {"title": "Free assignment", "description": "Assign at no charge."},
            "Development levies included",
            {"title": "Maintenance fees paid", "description": "For the first year."},
        ],
        storageCostIncluded=True,
        parkingCostIncluded=True,
        assignmentFeeFree=True,
        developmentLeviesIncluded=True,
        ccOrMaintFeeIncluded=True,
    )
    assert contradictions(listing) == []


def test_each_fee_topic_is_flagged_where_the_fees_say_extra() -> None:
    listing = Listing(
        incentives=[
            "Free parking for two-bedroom suites",
            {"name": "Free assignment"},
            {"title": "Development levies capped", "details": "and the levies included for early buyers"},
            "Maintenance fees paid for a year",
        ],
        parkingCost=65000,
        parkingCostIncluded=False,
        assignmentFeeFree=None,
        assignmentFee=7500,
        developmentLeviesIncluded=False,
        ccOrMaintFeeIncluded=False,
    )
    found = contradictions(listing)
    assert [c.topic for c in found] == ["parking", "assignment", "development levies", "maintenance"]
    assert "$65,000" in found[0].fact and "$7,500" in found[1].fact


def test_odd_shapes_are_read_not_failed_on() -> None:
    listing = Listing(incentives=[None, 42, {}, {"note": "free locker"}, ""], storageCostIncluded=False)
    assert [c.topic for c in contradictions(listing)] == ["locker"]
    assert incentive_plain_text({"note": "free locker"}) == "note: free locker"


# -- generated listings -------------------------------------------------------------------------------------

# Incentive texts, each with the fee topics it promises and the deposit terms it advertises.
INCENTIVES: list[tuple[Any, frozenset[str], DepositTerms | None]] = [
    (FREE_LOCKER, frozenset({"locker"}), None),
    (
        {"title": "Free parking", "description": "One parking space included with two bedrooms."},
        frozenset({"parking"}),
        None,
    ),
    (
        {"title": "Free assignment", "description": "Assign before closing at no charge (legal fees not included)."},
        frozenset({"assignment"}),
        None,
    ),
    ("Development charges waived", frozenset({"development levies"}), None),
    (
        {"title": "Maintenance fees paid", "description": "Common-element fees paid for a year."},
        frozenset({"maintenance"}),
        None,
    ),
    ({"title": "Capped development charges", "description": "Levies capped for all suites."}, frozenset(), None),
    ({"title": "Décor credit", "description": "A $10,000 credit towards upgrades."}, frozenset(), None),
    ("Parking not included; locker extra", frozenset(), None),
    (EXTENDED_DEPOSIT, frozenset(), DepositTerms(15, 540)),
    ("Only 10% deposit", frozenset(), DepositTerms(10, None)),
    ("Reduced deposit: 20% down over 365 days", frozenset(), DepositTerms(20, 365)),
]
DAYS = [0, 30, 90, 180, 365, 540]
FLAG = st.sampled_from([True, False, None])
COST = st.one_of(st.none(), st.integers(0, 80_000))


@st.composite
def structures(draw: st.DrawFn) -> dict[str, Any]:
    amounts = draw(st.lists(st.sampled_from([2.5, 5, 10]), min_size=1, max_size=5))
    days = sorted(draw(st.lists(st.sampled_from(DAYS[1:]), min_size=len(amounts) - 1, max_size=len(amounts) - 1)))
    suffixes = ["on signing"] + [f"in {d} days" for d in days]
    if draw(st.booleans()):
        suffixes[-1] = "on occupancy" if len(suffixes) > 1 else suffixes[-1]
    total = draw(st.one_of(st.just(sum(amounts)), st.sampled_from([5, 10, 15, 20, 25])))
    return schedule(total, amounts, suffixes, draw(st.sampled_from(["Condo", "Freehold", "International Buyers"])))


@st.composite
def listings(draw: st.DrawFn) -> tuple[Listing, list[int]]:
    chosen = draw(st.lists(st.integers(0, len(INCENTIVES) - 1), max_size=4, unique=True))
    fields = {
        name: draw(FLAG)
        for name in (
            "storageCostIncluded",
            "lockerMaintainanceIncluded",
            "parkingCostIncluded",
            "parkingMaintainanceIncluded",
            "assignmentFeeFree",
            "developmentLeviesIncluded",
            "ccOrMaintFeeIncluded",
        )
    }
    costs = {name: draw(COST) for name in ("storageCost", "parkingCost", "assignmentFee")}
    listing = Listing(
        listingId="GEN",
        incentives=[INCENTIVES[k][0] for k in chosen],
        paymentStructures=draw(st.lists(structures(), max_size=3)),
        **fields,
        **costs,
    )
    return listing, chosen


def says_extra(listing: Listing, topic: str) -> bool:
    both = {
        "locker": (listing.storageCostIncluded, listing.lockerMaintainanceIncluded),
        "parking": (listing.parkingCostIncluded, listing.parkingMaintainanceIncluded),
    }
    if topic in both:
        cost, upkeep = both[topic]
        return cost is False or (cost is None and upkeep is False)
    if topic == "assignment":
        return listing.assignmentFeeFree is False or (
            listing.assignmentFeeFree is None and (listing.assignmentFee or 0) > 0
        )
    if topic == "development levies":
        return listing.developmentLeviesIncluded is False
    return listing.ccOrMaintFeeIncluded is False


def schedule_agrees(promised: DepositTerms, structure: dict[str, Any]) -> bool:
    days = [int(m["suffix"].split()[1]) for m in structure["milestones"] if m["suffix"].startswith("in ")]
    last = max(days) if days else None
    return structure["totalDeposit"] == promised.percent and (promised.days in (None, last) or last is None)


@given(listings())
@settings(max_examples=300)
def test_generated_listings_flag_exactly_what_contradicts(generated: tuple[Listing, list[int]]) -> None:
    listing, chosen = generated
    expected: list[tuple[str, str]] = []
    for k in chosen:
        incentive, topics, promised = INCENTIVES[k]
        text = incentive_plain_text(incentive)
        expected += [(topic, text) for topic in sorted(topics) if says_extra(listing, topic)]
        raw = [s.model_dump() for s in listing.paymentStructures]
        if promised is not None and raw and not any(schedule_agrees(promised, s) for s in raw):
            expected.append(("deposit", text))
    found = contradictions(listing)
    assert [(c.topic, c.incentive) for c in found] == expected
    assert found == contradictions(listing)  # pure: the same listing, the same answer
    for contradiction in found:
        assert isinstance(contradiction, Contradiction)
        assert contradiction.section == ("deposits" if contradiction.topic == "deposit" else "pricing")
        assert contradiction.incentive in contradiction.message


@given(listings())
@settings(max_examples=100)
def test_without_incentives_nothing_is_flagged(generated: tuple[Listing, list[int]]) -> None:
    listing, _ = generated
    assert contradictions(listing.model_copy(update={"incentives": []})) == []
