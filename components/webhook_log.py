"""The webhook page's way to the API, and how subscriptions and their delivery log read: tables, outcomes, times.

The formatting functions are plain data in, plain data out, so every value a receiver or the service sent (a URL,
an error, the start of a response) ends up in a table cell or a code block as text, never as HTML.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime

import pandas as pd
import streamlit as st

from components.formatting import MISSING
from precon.client.models import DeliveryAttempt, WebhookDelivery, WebhookSubscription

STATUS_BADGES = {
    "delivered": "✅ delivered",
    "failed": "❌ failed",
    "pending": "⏳ pending",
    "cancelled": "🚫 cancelled",
}
ENV_LABELS = {"live": "live", "sandbox": "sandbox"}


def when(moment: datetime | None) -> str:
    """A timestamp in UTC to the second (the service's clock and the receiver's logs agree on UTC)."""
    if moment is None:
        return MISSING
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def relative(moment: datetime | None, now: datetime | None = None) -> str:
    """``in 4 min`` / ``5 s ago``: how far a moment is from now, roughly."""
    if moment is None:
        return ""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    seconds = (moment - (now or datetime.now(UTC))).total_seconds()
    size = abs(seconds)
    if size < 1:
        return "now"
    if size < 90:
        amount = f"{size:.0f} s"
    elif size < 90 * 60:
        amount = f"{size / 60:.0f} min"
    elif size < 36 * 3600:
        amount = f"{size / 3600:.1f} h"
    else:
        amount = f"{size / 86400:.1f} days"
    return f"in {amount}" if seconds > 0 else f"{amount} ago"


def status_badge(status: str | None) -> str:
    return STATUS_BADGES.get(status or "", f"❔ {status or 'unknown'}")


def attempt_outcome(attempt: DeliveryAttempt | None) -> str:
    """What one attempt came to: the receiver's HTTP status, or why no answer came."""
    if attempt is None:
        return "not attempted yet"
    if attempt.status is not None:
        text = f"HTTP {attempt.status} · " + ("accepted" if 200 <= attempt.status < 300 else "not accepted")
        detail = (attempt.error or "").removeprefix(f"answered {attempt.status}").strip()
        return f"{text} {detail}" if detail else text
    return f"no answer: {attempt.error}" if attempt.error else "no answer"


def latency(attempt: DeliveryAttempt) -> str:
    return MISSING if attempt.latencyMs is None else f"{attempt.latencyMs:,.0f} ms"


def inline_code(text: str | None) -> str:
    """Text as a markdown code span, exactly as it is (a URL shows whole, unlinked, nothing in it interpreted):
    the fence is one backtick longer than any run of backticks in the text (CommonMark)."""
    text = " ".join((text or "").splitlines()) or MISSING
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


FIELD_LABELS = {
    "targetUrl": "Target URL",
    "env": "Environment",
    "event": "Event",
    "id": "Id",
    "collection": "Collection",
}


def refusal(message: str) -> tuple[str, str]:
    """A 400's message as the field it is about, in the page's words, and why (``targetUrl: x`` → ``Target URL``,
    ``X``), the reason starting with a capital; no field when the message names none."""
    field, separator, why = message.partition(": ")
    if not separator or field not in FIELD_LABELS:
        return "", message
    why = why.strip()
    return FIELD_LABELS[field], why[:1].upper() + why[1:]


def subscription_label(subscription: WebhookSubscription) -> str:
    """One line naming a subscription in a picker: what it listens to and where it sends."""
    return f"{subscription.event} · {subscription.env} → {subscription.targetUrl} ({subscription.id})"


def subscriptions_frame(subscriptions: list[WebhookSubscription]) -> pd.DataFrame:
    rows = [
        {
            "id": s.id,
            "event": s.event,
            "env": ENV_LABELS.get(s.env, s.env),
            "target": s.targetUrl,
            "created": when(s.createdAt),
            "only": selection_text(s),
        }
        for s in subscriptions
    ]
    return pd.DataFrame(rows, columns=["id", "event", "env", "created", "target", "only"])


def selection_text(subscription: WebhookSubscription) -> str:
    """What a filtered subscription hears of, in one cell (empty for one that hears of everything)."""
    parts = [
        f"filter {subscription.filterQuery}" if subscription.filterQuery else "",
        f"units {subscription.unitFilter}" if subscription.unitFilter else "",
        f"fields {', '.join(subscription.fields)}" if subscription.fields else "",
    ]
    return " · ".join(part for part in parts if part)


def next_attempt(delivery: WebhookDelivery, now: datetime | None = None) -> str:
    if delivery.status != "pending":
        return MISSING
    if delivery.nextAttemptAt is None:
        return "being sent"
    return f"{when(delivery.nextAttemptAt)} ({relative(delivery.nextAttemptAt, now)})"


def deliveries_frame(deliveries: list[WebhookDelivery], now: datetime | None = None) -> pd.DataFrame:
    """One row per delivery, what matters first: its state, what it is, where it goes, how its attempts went."""
    rows = [
        {
            "status": status_badge(d.status),
            "event": f"{d.event or '?'} ({d.env})" if d.env else d.event,
            "target": d.targetUrl,
            "attempts": len(d.attempts),
            "last outcome": attempt_outcome(d.attempts[-1] if d.attempts else None),
            "next attempt": next_attempt(d, now),
            "created": when(d.createdAt),
            "delivery": d.id,
        }
        for d in deliveries
    ]
    columns = ["status", "event", "target", "attempts", "last outcome", "next attempt", "created", "delivery"]
    return pd.DataFrame(rows, columns=columns)


def attempts_frame(attempts: list[DeliveryAttempt]) -> pd.DataFrame:
    rows = [
        {
            "#": number,
            "time": when(attempt.attemptedAt),
            "outcome": attempt_outcome(attempt),
            "latency": latency(attempt),
            "response": attempt.response or "",
        }
        for number, attempt in enumerate(attempts, start=1)
    ]
    return pd.DataFrame(rows, columns=["#", "time", "outcome", "latency", "response"])


LINK_PARAM = "subscription"
"""The address parameter naming the subscription whose deliveries the Webhooks page's log shows (the Status page
links to it)."""


def linked_log_filter(current: str | None, subscriptions: Iterable[str]) -> str:
    """The log's subscription: the address's when it names one of these, else the one picked (if it still exists);
    an address naming none of them is dropped from it."""
    known = set(subscriptions)
    linked = st.query_params.get(LINK_PARAM)
    if linked in known:
        return str(linked)
    if linked is not None:
        st.query_params.pop(LINK_PARAM, None)
    return current if current in known else ""


def link_log_filter(chosen: str | None) -> None:
    """Keeps the address in step with the log's subscription, so that a copied link opens the same log."""
    if chosen:
        st.query_params[LINK_PARAM] = chosen
    else:
        st.query_params.pop(LINK_PARAM, None)
