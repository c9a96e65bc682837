"""A listing's deposit structures in dollars for a chosen floor plan: each milestone once, what it asks of that
plan's price, the running total, and the date it is due counted from a signing date.

The catalogue's first milestone is often "$5,000 on signing, balance to 5% in 30 days" (a ``prefix`` of
``$5,000`` and an ``amount`` of 5): it is two payments, so it is shown as two steps, the fixed amount on signing
and the balance; either way the steps add up to the milestone's share of the price.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, timedelta

import pandas as pd
import streamlit as st

from components.formatting import MISSING, MONEY_FORMAT, cad, markdown_text, percent, sqft
from precon.client.models import FloorPlan, Milestone, PaymentStructure
from precon.dashboard.listing_checks import is_percentage, milestone_days

_DOLLARS = re.compile(r"^\$?\s*(\d[\d,]*(?:\.\d+)?)$")
_BALANCE_DAYS = re.compile(r"balance\b.*?\b(\d+)\s*days?\b", re.IGNORECASE)
_DAYS = re.compile(r"\b(\d+)\s*days?\b", re.IGNORECASE)

COLUMNS = {
    "step": st.column_config.NumberColumn("#", format="%d", width="small"),
    "payment": st.column_config.TextColumn("Payment", width="medium"),
    "when": st.column_config.TextColumn("When"),
    "due": st.column_config.DateColumn("Due date", format="D MMM YYYY"),
    "amount": st.column_config.NumberColumn("Amount (CAD)", format=MONEY_FORMAT),
    "running": st.column_config.NumberColumn("Total so far (CAD)", format=MONEY_FORMAT),
}


@dataclass(frozen=True)
class DollarStep:
    number: int
    payment: str
    """What is asked: ``5% of the price``, ``$5,000``, ``Balance to 5%``."""
    when: str
    """As the schedule says it: ``on signing``, ``in 90 days``, ``on occupancy``."""
    days: int | None
    """Days after signing (0 on signing), ``None`` when the schedule gives none (``on occupancy``)."""
    amount: float | None
    """In dollars; ``None`` without a price for a percentage."""
    share: float | None
    """This step's percentage of the price, where the milestone is a percentage."""
    running: float | None
    """The dollars so far, this step included (``None`` once any step has no amount)."""

    def due(self, signing: date) -> date | None:
        return None if self.days is None else signing + timedelta(days=self.days)


def priced_plans(plans: Sequence[FloorPlan] | None) -> list[FloorPlan]:
    """The plans with a price, cheapest first (what the schedule can be worked out for)."""
    return sorted((p for p in plans or [] if p.startPrice and p.startPrice > 0), key=lambda p: p.startPrice or 0)


def plan_label(plan: FloorPlan) -> str:
    """``Suite 4A · 2 bed · 1,250 sq ft · $689,990``."""
    beds = plan.numberOfBedrooms
    parts = [
        plan.name or plan.id or "Plan",
        ("Studio" if beds == 0 else f"{beds:g} bed") if beds is not None else "",
        sqft(plan.squareFeet) if plan.squareFeet else "",
        cad(plan.startPrice),
    ]
    return " · ".join(p for p in parts if p)


def _fixed(prefix: str | None) -> float | None:
    found = _DOLLARS.match((prefix or "").strip())
    return float(found.group(1).replace(",", "")) if found else None


def _pieces(milestone: Milestone, price: float | None) -> list[tuple[str, str, int | None, float | None, float | None]]:
    """A milestone as (payment, when, days, dollars, percent) payments: one, or two for "$X on signing, balance"."""
    when = (milestone.suffix or "").strip()
    days = milestone_days(milestone)
    if milestone.amount is None:
        return [((milestone.text or "").strip() or MISSING, when, days, None, None)]
    if not is_percentage(milestone):
        return [(cad(milestone.amount), when, days, milestone.amount, None)]
    share = milestone.amount
    dollars = price * share / 100 if price else None
    fixed = _fixed(milestone.prefix)
    if fixed is None or (dollars is not None and fixed >= dollars):
        return [(f"{percent(share)} of the price", when, days, dollars, share)]
    balance_days = _BALANCE_DAYS.search(milestone.text or "")
    later = int(balance_days.group(1)) if balance_days else days
    later_when = f"in {later} days" if balance_days else when
    return [
        (cad(fixed), when, days, fixed, None),
        (
            f"Balance to {percent(share)} of the price",
            later_when,
            later,
            None if dollars is None else dollars - fixed,
            None,
        ),
    ]


def dollar_steps(structure: PaymentStructure, price: float | None) -> list[DollarStep]:
    """The structure's payments in order, in dollars of ``price`` (``None``: percentages only), with the running
    total."""
    out: list[DollarStep] = []
    running: float | None = 0.0
    for milestone in structure.milestones:
        for payment, when, days, dollars, share in _pieces(milestone, price):
            running = running + dollars if running is not None and dollars is not None else None
            out.append(DollarStep(len(out) + 1, payment, when, days, dollars, share, running))
    return out


def total_percent(structure: PaymentStructure) -> float | None:
    """The total deposit as the structure states it, or as its percentages add up when it states none."""
    if structure.totalDeposit is not None:
        return structure.totalDeposit
    amounts = [m.amount for m in structure.milestones if m.amount is not None and is_percentage(m)]
    return sum(amounts) if amounts and len(amounts) == len(structure.milestones) else None


def milestones_percent(structure: PaymentStructure) -> float | None:
    """What the milestones add up to, in percent of the price (``None`` if any is not a percentage)."""
    if not structure.milestones or any(m.amount is None or not is_percentage(m) for m in structure.milestones):
        return None
    return sum(m.amount or 0.0 for m in structure.milestones)


def schedule_frame(listed: Sequence[DollarStep], signing: date) -> pd.DataFrame:
    frame = pd.DataFrame(
        [
            {
                "step": step.number,
                "payment": step.payment,
                "when": step.when or MISSING,
                "due": step.due(signing),
                "amount": step.amount,
                "running": step.running,
            }
            for step in listed
        ],
        columns=list(COLUMNS),
    )
    frame["due"] = pd.to_datetime(frame["due"])
    for column in ("amount", "running"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype("float64")
    return frame


def _table_height(rows: int) -> int:
    return (rows + 1) * 35 + 3


def choose_plan(plans: Sequence[FloorPlan] | None, key: str) -> FloorPlan | None:
    priced = priced_plans(plans)
    if not priced:
        st.caption("No floor plan has a published price, so the schedule is shown in percentages of the price.")
        return None
    by_id = {str(index): plan for index, plan in enumerate(priced)}
    chosen = st.selectbox(
        "Floor plan",
        list(by_id),
        format_func=lambda i: plan_label(by_id[i]),
        key=f"{key}_plan",
        help="The deposits are worked out from this plan's start price.",
    )
    return by_id.get(chosen or "")


def choose_signing(key: str) -> tuple[date, str]:
    today = date.today()
    picked = st.date_input(
        "Signing date", value=today, key=f"{key}_signing", format="YYYY/MM/DD", help="Due dates count from it."
    )
    signing = picked if isinstance(picked, date) else today
    if signing == today:
        return signing, f"Due dates are counted from today ({signing:%d %b %Y}), taken as the signing date."
    return signing, f"Due dates are counted from the signing date you picked ({signing:%d %b %Y})."


def render_structure(structure: PaymentStructure, index: int, price: float | None, signing: date, key: str) -> None:
    kind = markdown_text(structure.type) if structure.type else f"Structure {index + 1}"
    total = total_percent(structure)
    head = f"**{kind}** · total deposit **{percent(total)}**"
    if price and total is not None:
        head += f" = **{markdown_text(cad(price * total / 100))}**"
    st.markdown(head)
    if not structure.milestones:
        st.caption("No milestones are listed.")
        return
    listed = dollar_steps(structure, price)
    columns = dict(COLUMNS)
    if not price:
        columns["amount"] = None  # type: ignore[assignment]
        columns["running"] = None  # type: ignore[assignment]
    st.dataframe(
        schedule_frame(listed, signing),
        column_config=columns,
        hide_index=True,
        width="stretch",
        height=_table_height(len(listed)),
        placeholder=MISSING,
        key=f"{key}_table_{index}",
    )
    added = milestones_percent(structure)
    if structure.totalDeposit is not None and added is not None and abs(added - structure.totalDeposit) > 1e-6:
        st.caption(f"The milestones add up to {added:g}%, not the stated {structure.totalDeposit:g}%.")
    if any(step.days is None for step in listed):
        st.caption("A step without a due date is due at a moment the schedule names (occupancy…), not a day count.")


def render_deposits(
    structures: Sequence[PaymentStructure], plans: Sequence[FloorPlan] | None = None, key: str = "deposits"
) -> None:
    """A plan and a signing date to choose, then each structure's schedule in dollars of that plan's price."""
    if not structures:
        st.info("No deposit structure is published for this listing.", icon="💰")
        return
    pick, when = st.columns([3, 1], vertical_alignment="bottom")
    with pick:
        plan = choose_plan(plans, key)
    with when:
        signing, dated = choose_signing(key)
    price = plan.startPrice if plan else None
    st.caption(dated)
    for index, structure in enumerate(structures):
        with st.container(border=True):
            render_structure(structure, index, price, signing, key)
