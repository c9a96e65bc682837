"""Deposits: the payment structures of a listing (condo, freehold, international buyers), with the milestones of
each, as builders in each province publish them."""

from __future__ import annotations

from collections.abc import Callable
from random import Random
from typing import Any

from precon.service.catalogue.developments import CONDO_LIKE
from precon.service.catalogue.text import json_number

# deposit schedules (percent amounts, summing to the total) by total deposit
_SCHEDULES: dict[int, tuple[tuple[float, ...], ...]] = {
    5: ((5,), (2.5, 2.5)),
    10: ((5, 5), (2.5, 2.5, 5), (10,)),
    15: ((5, 5, 5), (5, 10), (2.5, 2.5, 5, 5)),
    20: ((5, 5, 5, 5), (5, 5, 10), (10, 5, 5), (2.5, 2.5, 5, 5, 5)),
    25: ((5, 5, 5, 5, 5), (5, 5, 5, 10)),
}
_DEPOSIT_BY_PROVINCE: dict[str, tuple[int, ...]] = {
    "on": (20, 20, 15, 25),
    "bc": (10, 15, 20, 10),
    "ab": (10, 5, 15),
    "qc": (10, 15, 10),
}
_MILESTONE_SUFFIXES = (
    "on signing",
    "in 30 days",
    "in 90 days",
    "in 180 days",
    "in 365 days",
    "in 540 days",
    "on occupancy",
)


def _structure_kinds(rand: Callable[[], float], types: list[str]) -> list[str]:
    """ "Condo" and/or "Freehold" by building type; sometimes a separate structure for international buyers."""
    kinds: list[str] = []
    for kind in types:
        label = "Condo" if kind in CONDO_LIKE else "Freehold"
        if label not in kinds:
            kinds.append(label)
    if len(kinds) == 1 and rand() < 0.1:
        kinds.append("International Buyers")
    return kinds


def _milestones(amounts: tuple[float, ...], label: str, signing: int) -> list[dict[str, Any]]:
    milestones = []
    for k, amount in enumerate(amounts):
        suffix = _MILESTONE_SUFFIXES[0] if k == 0 else _MILESTONE_SUFFIXES[min(k + 1, 5)]
        if k == len(amounts) - 1 and k > 0 and label == "Freehold":
            suffix = "in 180 days"
        if k == 0:
            prefix, text = f"${signing:,}", f"${signing:,} on signing, balance to {json_number(amount)}% in 30 days"
        else:
            prefix, text = "", f"{json_number(amount)}% {suffix}"
        milestones.append(
            {"amount": json_number(amount), "prefix": prefix, "suffix": suffix, "text": text, "type": "percentage"}
        )
    return milestones


def draw_payment_structures(
    rng: Random, province: str, types: list[str], start_price: int | None
) -> list[dict[str, Any]]:
    """One structure per kind of buyer: the total deposit (by province; freehold lower, international higher)
    and its schedule of milestones, the first a fixed amount on signing that grows with the price."""
    rand = rng.random
    structures: list[dict[str, Any]] = []
    options = _DEPOSIT_BY_PROVINCE.get(province, (5, 10, 10))
    for label in _structure_kinds(rand, types):
        total = options[int(rand() * len(options))]
        if label == "Freehold":
            total = min(total, 15) if total >= 10 else 10
        elif label == "International Buyers":
            total = min(total + 10, 25)
        schedule = _SCHEDULES[total]
        amounts = schedule[int(rand() * len(schedule))]
        signing = 5000 if (start_price or 0) < 700_000 else 10000 if (start_price or 0) < 1_500_000 else 20000
        structures.append({"type": label, "totalDeposit": total, "milestones": _milestones(amounts, label, signing)})
    return structures
