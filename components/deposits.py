"""A listing's deposit structures as timelines: each milestone in order, what it asks, and the running total."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import altair as alt
import pandas as pd
import streamlit as st

from components.formatting import MISSING, cad, markdown_text
from precon.models import Milestone, PaymentStructure

PALETTE = ["#2a7f62", "#3d5a80", "#e9c46a", "#e76f51", "#8d6a9f", "#4a9fb5", "#a3b18a", "#bc6c25"]


@dataclass(frozen=True)
class Step:
    number: int
    amount: str
    """``2.5%`` or ``$10,000``, or ``—`` when the milestone gives none."""
    when: str
    """The milestone's ``suffix``: ``on signing``, ``in 90 days``…"""
    prefix: str
    text: str
    percent: float | None
    """The amount when it is a percentage of the price."""
    running: float | None
    """The percentages so far, this one included (``None`` once any milestone is not a percentage)."""


def is_percentage(milestone: Milestone) -> bool:
    return (milestone.type or "percentage").lower() in ("percentage", "percent", "%")


def amount_text(milestone: Milestone) -> str:
    if milestone.amount is None:
        return MISSING
    return f"{milestone.amount:g}%" if is_percentage(milestone) else cad(milestone.amount)


def steps(structure: PaymentStructure) -> list[Step]:
    """The milestones in order, with the running total of the percentages."""
    out: list[Step] = []
    running: float | None = 0.0
    for number, milestone in enumerate(structure.milestones, start=1):
        percent = milestone.amount if milestone.amount is not None and is_percentage(milestone) else None
        running = running + percent if running is not None and percent is not None else None
        out.append(
            Step(
                number=number,
                amount=amount_text(milestone),
                when=(milestone.suffix or "").strip(),
                prefix=(milestone.prefix or "").strip(),
                text=(milestone.text or "").strip(),
                percent=percent,
                running=running,
            )
        )
    return out


def total_text(structure: PaymentStructure) -> str:
    """The total deposit as the structure states it, or as its milestones add up when it states none."""
    if structure.totalDeposit is not None:
        return f"{structure.totalDeposit:g}%"
    listed = steps(structure)
    if listed and listed[-1].running is not None:
        return f"{listed[-1].running:g}%"
    return MISSING


def timeline_markdown(structure: PaymentStructure) -> str:
    """A numbered, top-to-bottom timeline of the milestones; all user text escaped."""
    lines = []
    for step in steps(structure):
        head = f"**{markdown_text(step.amount)}**"
        if step.prefix and step.prefix not in step.text:
            head = f"**{markdown_text(step.prefix)}** then {head}"
        if step.when:
            head += f" {markdown_text(step.when)}"
        if step.running is not None:
            head += f" · _{step.running:g}% so far_"
        detail = f"  \n   {markdown_text(step.text)}" if step.text else ""
        lines.append(f"{step.number}. {head}{detail}")
    return "\n".join(lines)


def timeline_chart(structure: PaymentStructure) -> alt.LayerChart | None:
    """One bar from 0 to the total, split into the milestones in order, each labelled; ``None`` when the
    milestones are not all percentages."""
    listed = steps(structure)
    if not listed or any(step.percent is None for step in listed):
        return None
    rows = []
    start = 0.0
    for step in listed:
        assert step.percent is not None
        rows.append(
            {
                "step": f"{step.number}. {step.when or step.amount}",
                "order": step.number,
                "start": start,
                "end": start + step.percent,
                "middle": start + step.percent / 2,
                "amount": step.amount,
                "label": step.amount,
                "when": step.when or MISSING,
                "text": step.text or MISSING,
                "running": f"{step.running:g}%",
            }
        )
        start += step.percent
    frame = pd.DataFrame(rows)
    colours = alt.Scale(domain=list(frame["step"]), range=[PALETTE[i % len(PALETTE)] for i in range(len(frame))])
    tooltip = [
        alt.Tooltip("step:N", title="Milestone"),
        alt.Tooltip("amount:N", title="Amount"),
        alt.Tooltip("running:N", title="Total so far"),
        alt.Tooltip("text:N", title="Terms"),
    ]
    ends = sorted({0.0, *frame["end"]})
    base = alt.Chart(frame)
    bars = base.mark_bar(height=34, stroke="white", strokeWidth=2).encode(
        x=alt.X(
            "start:Q",
            title="Deposit paid (% of the price)",
            scale=alt.Scale(domain=[0, max(start, 1e-9)]),
            axis=alt.Axis(orient="top", values=ends, labelExpr="datum.value + '%'", grid=True),
        ),
        x2="end:Q",
        color=alt.Color("step:N", scale=colours, legend=None),
        tooltip=tooltip,
    )
    amounts = base.mark_text(color="white", fontWeight="bold", fontSize=13).encode(
        x="middle:Q", text="label:N", tooltip=tooltip
    )
    moments = base.mark_text(color="#555", fontSize=12, dy=32).encode(x="middle:Q", text="when:N", tooltip=tooltip)
    return (bars + amounts + moments).properties(height=120)


def render_deposits(structures: Sequence[PaymentStructure]) -> None:
    if not structures:
        st.info("No deposit structure is published for this listing.", icon="💰")
        return
    for index, structure in enumerate(structures):
        with st.container(border=True):
            kind = markdown_text(structure.type) if structure.type else f"Structure {index + 1}"
            st.markdown(f"**{kind}** · total deposit **{total_text(structure)}**")
            if not structure.milestones:
                st.caption("No milestones are listed.")
                continue
            chart = timeline_chart(structure)
            if chart is not None:
                st.altair_chart(chart, width="stretch")
            st.markdown(timeline_markdown(structure))
            listed = steps(structure)
            added = listed[-1].running if listed else None
            if structure.totalDeposit is not None and added is not None and abs(added - structure.totalDeposit) > 1e-6:
                st.caption(f"The milestones add up to {added:g}%, not the stated {structure.totalDeposit:g}%.")
