"""Contradictions within one listing: what its incentives promise against what its fees and deposits say.

An incentive is free text ("Free locker — A storage locker included with every suite"), so it is read by words:
an incentive *promises* a topic (locker, parking, assignment, development levies, maintenance) when one of its
clauses names the topic and says it is free, included, paid or at no charge, without saying "not included". A
promise contradicts the listing when the matching fee field says the item is extra (``storageCostIncluded`` is
``False``, ``assignmentFeeFree`` is ``False``…). A deposit incentive ("Only 15% down spread over 540 days")
contradicts the payment structures when none of them asks that percentage over that many days.

Pure: no Streamlit, nothing fetched; the page shows what :func:`contradictions` returns next to the facts.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from precon.client.models import Listing, Milestone, PaymentStructure

Topic = Literal["locker", "parking", "assignment", "development levies", "maintenance", "deposit"]
Section = Literal["pricing", "deposits"]


@dataclass(frozen=True)
class Contradiction:
    topic: Topic
    section: Section
    """Where on the page the contradicted facts are: the pricing table or the deposit structure."""
    incentive: str
    """The incentive, as plain text (title and description)."""
    fact: str
    """What the listing's own fields say, as plain text."""

    @property
    def message(self) -> str:
        return f"The incentive “{self.incentive}” contradicts the listing: {self.fact}."


_TOPIC_WORDS: dict[Topic, re.Pattern[str]] = {
    "locker": re.compile(r"\b(lockers?|storage)\b", re.IGNORECASE),
    "parking": re.compile(r"\bparking\b", re.IGNORECASE),
    "assignment": re.compile(r"\bassign(ment|ments|ing)?\b", re.IGNORECASE),
    "development levies": re.compile(r"\b(development (charges?|levies|levy)|levies|levy)\b", re.IGNORECASE),
    "maintenance": re.compile(r"\b(maintenance|common[- ]elements?|condo fees?)\b", re.IGNORECASE),
}
_PROMISE = re.compile(
    r"\b(free|included|includes|including|complimentary|waived|paid|covered)\b|\bno (charge|cost|fee)\b",
    re.IGNORECASE,
)
_DENIAL = re.compile(r"\b(not|isn't|aren't|excluded|extra|excludes)\b", re.IGNORECASE)
_CLAUSES = re.compile(r"[.;:()\n—–]|,\s|\s-\s")
_PERCENT = re.compile(r"(\d+(?:\.\d+)?)\s*%")
_DAYS = re.compile(r"(\d+)\s*days?\b", re.IGNORECASE)
_DEPOSIT_WORDS = re.compile(r"\b(deposits?|down)\b", re.IGNORECASE)


def incentive_plain_text(incentive: Any) -> str:
    """An incentive as plain text, whatever shape it comes in: ``Title — description``."""
    if isinstance(incentive, str):
        return incentive.strip()
    if isinstance(incentive, dict):
        title = incentive.get("title") or incentive.get("name")
        body = incentive.get("description") or incentive.get("text") or incentive.get("details")
        parts = [str(part).strip() for part in (title, body) if part not in (None, "")]
        if parts:
            return " — ".join(part for part in parts if part)
        return ", ".join(f"{k}: {v}" for k, v in incentive.items() if v not in (None, ""))
    return "" if incentive is None else str(incentive).strip()


def promises(text: str) -> set[Topic]:
    """The topics ``text`` says are free or included (a clause naming the topic, promising, and not denying)."""
    found: set[Topic] = set()
    for clause in _CLAUSES.split(text):
        if not _PROMISE.search(clause) or _DENIAL.search(clause):
            continue
        found.update(topic for topic, words in _TOPIC_WORDS.items() if words.search(clause))
    return found


def _money(value: float | None) -> str:
    return "" if value is None or not math.isfinite(value) else f"${value:,.0f}"


def _extra(label: str, cost: float | None = None, unit: str = "") -> str:
    amount = f"({_money(cost)}{unit}) " if cost else ""
    return f"the pricing table lists {label} {amount}as extra (not included)"


_FEE_FACTS: dict[Topic, Callable[[Listing], str | None]] = {
    "locker": lambda lst: (
        _extra("the locker", lst.storageCost)
        if lst.storageCostIncluded is False
        else _extra("locker maintenance", lst.lockerMaintainance, "/month")
        if lst.lockerMaintainanceIncluded is False and lst.storageCostIncluded is None
        else None
    ),
    "parking": lambda lst: (
        _extra("parking", lst.parkingCost)
        if lst.parkingCostIncluded is False
        else _extra("parking maintenance", lst.parkingMaintainance, "/month")
        if lst.parkingMaintainanceIncluded is False and lst.parkingCostIncluded is None
        else None
    ),
    "assignment": lambda lst: (
        f"the pricing table lists an assignment fee{' of ' + _money(lst.assignmentFee) if lst.assignmentFee else ''}"
        " (assignment is not free)"
        if lst.assignmentFeeFree is False or (lst.assignmentFeeFree is None and (lst.assignmentFee or 0) > 0)
        else None
    ),
    "development levies": lambda lst: (
        "the pricing table lists development levies as extra (not included)"
        if lst.developmentLeviesIncluded is False
        else None
    ),
    "maintenance": lambda lst: (
        "the pricing table lists the maintenance fee as extra (not included)"
        if lst.ccOrMaintFeeIncluded is False
        else None
    ),
}


# -- deposits -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DepositTerms:
    """A percentage of the price, over a number of days (``None``: not said)."""

    percent: float | None
    days: int | None

    def text(self) -> str:
        parts = [
            f"{self.percent:g}%" if self.percent is not None else "",
            f"over {self.days} days" if self.days else "",
        ]
        return " ".join(p for p in parts if p)


def milestone_days(milestone: Milestone) -> int | None:
    """The days a milestone is due after signing ("in 90 days", "within 90 days"): 0 on signing, else ``None``."""
    suffix = (milestone.suffix or "").strip()
    found = _DAYS.search(suffix)
    if found:
        return int(found.group(1))
    if "signing" in suffix.lower():
        return 0
    return None


def is_percentage(milestone: Milestone) -> bool:
    return (milestone.type or "percentage").strip().lower() in ("percentage", "percent", "%")


def structure_terms(structure: PaymentStructure) -> DepositTerms:
    """What a structure asks in all: its stated total (else its percentages added), by its last dated milestone."""
    percent = structure.totalDeposit
    if percent is None:
        amounts = [m.amount for m in structure.milestones if is_percentage(m) and m.amount is not None]
        percent = sum(amounts) if amounts and len(amounts) == len(structure.milestones) else None
    days = [d for d in (milestone_days(m) for m in structure.milestones) if d is not None]
    return DepositTerms(percent, max(days) if days and max(days) > 0 else None)


def deposit_promise(text: str) -> DepositTerms | None:
    """The terms a deposit incentive advertises ("Only 15% down spread over 540 days"), ``None`` if it is not one."""
    if not _DEPOSIT_WORDS.search(text):
        return None
    percent = _PERCENT.search(text)
    if percent is None:
        return None
    days = [int(d) for d in _DAYS.findall(text)]
    return DepositTerms(float(percent.group(1)), max(days) if days else None)


def _agrees(promised: DepositTerms, actual: DepositTerms) -> bool:
    if promised.percent is not None and actual.percent is not None and abs(promised.percent - actual.percent) > 1e-6:
        return False
    return promised.days is None or actual.days is None or promised.days == actual.days


def _structure_label(structure: PaymentStructure, index: int) -> str:
    return structure.type or f"structure {index + 1}"


# -- all of it ----------------------------------------------------------------------------------------------


def contradictions(listing: Listing) -> list[Contradiction]:
    """Every contradiction between the listing's incentives and its fees and deposits, in incentive order."""
    found: list[Contradiction] = []
    for incentive in listing.incentives:
        text = incentive_plain_text(incentive)
        if not text:
            continue
        for topic in sorted(promises(text)):
            fact = _FEE_FACTS[topic](listing)
            if fact is not None:
                found.append(Contradiction(topic, "pricing", text, fact))
        promised = deposit_promise(text)
        structures = list(listing.paymentStructures)
        if promised is None or not structures:
            continue
        terms = [structure_terms(s) for s in structures]
        if any(_agrees(promised, actual) for actual in terms):
            continue
        schedules = "; ".join(
            f"{_structure_label(s, i)} {t.text() or 'with no total given'}"
            for i, (s, t) in enumerate(zip(structures, terms, strict=True))
        )
        several = len(structures) > 1
        which = "the deposit structures ask" if several else "the deposit structure asks"
        fact = f"it advertises {promised.text()}, but {which} {schedules}"
        found.append(Contradiction("deposit", "deposits", text, fact))
    return found


def topics(found: Iterable[Contradiction]) -> set[Topic]:
    return {c.topic for c in found}
