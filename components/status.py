"""The Status page's parts: the deployment's health and version, its requests and latency per operation over the
last hour (from ``/metrics``, sampled by the dashboard itself), the webhook outbox, and each subscription's
deliveries, the failing ones first.

Prometheus keeps a deployment's history; the dashboard keeps only what it has seen: a ring of scrapes per
deployment (:class:`ScrapeRing`, one for the dashboard process), filled by a background thread every
:data:`SAMPLE_EVERY_S` seconds and by every view of the page. "The last hour" is from the oldest scrape within it to
now, and the page says how long that is when the dashboard has been watching for less.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime

import pandas as pd
import streamlit as st
from pydantic import ValidationError

from components import api
from components.formatting import MISSING, markdown_text
from components.webhook_log import inline_code, relative, when
from precon.client import Client
from precon.client.errors import NotFound, PreconError
from precon.client.metrics_view import (
    OUTBOX_OLDEST,
    OUTBOX_OVERDUE,
    OUTBOX_PENDING,
    NoMetrics,
    Scrape,
    Window,
    oldest_within,
    window,
)
from precon.client.models import WebhookSubscription
from precon.dashboard.delivery_health import RECENT_DELIVERIES, SubscriptionHealth, failing_first, health_of

SAMPLE_EVERY_S = 30
WINDOW_S = 3600
STOP_WAIT_S = 5
"""How long clearing the cache waits for a scrape in flight before it leaves the (daemon) sampler to finish alone."""
KEEP_SCRAPES = 2 * WINDOW_S // SAMPLE_EVERY_S + 500
"""Enough for an hour of the sampler's scrapes and many page views besides; older ones are dropped by time too."""
METRICS_URL_SETTING = "PRECON_METRICS_URL"
"""Where the deployment's ``/metrics`` is, when not at its root (a port of its own)."""
METRICS_TOKEN_SETTING = "PRECON_METRICS_TOKEN"
"""The bearer token ``/metrics`` asks for (the service's ``PRECON_SERVICE_METRICS_TOKEN``): kept on the server."""
WEBHOOKS_PAGE = "views/webhooks.py"


class ScrapeRing:
    """One deployment's scrapes over the last hour, newest last, and the last answer of ``/metrics`` (a scrape, or
    why there is none)."""

    def __init__(self, client: Client, url: str | None, token: str | None, every: float = SAMPLE_EVERY_S) -> None:
        self._client, self._url, self._token, self._every = client, url, token, every
        self._scrapes: deque[Scrape] = deque(maxlen=KEEP_SCRAPES)
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self.started = time.time()
        self.last: Scrape | NoMetrics | None = None
        self._thread: threading.Thread | None = None

    def scrape(self) -> Scrape | NoMetrics:
        try:
            answer = self._client.metrics(self._url, self._token)
        except Exception as error:  # a sampler must outlive whatever one scrape meets
            answer = NoMetrics(f"/metrics could not be read ({type(error).__name__})")
        with self._lock:
            if isinstance(answer, Scrape):
                self._scrapes.append(answer)
                while self._scrapes and answer.at - self._scrapes[0].at > WINDOW_S + 2 * SAMPLE_EVERY_S:
                    self._scrapes.popleft()
            self.last = answer
        return answer

    def __len__(self) -> int:
        return len(self._scrapes)

    def window(self, now: Scrape) -> Window | None:
        """From the oldest scrape within the hour before ``now`` to ``now`` (None: no earlier scrape yet)."""
        with self._lock:
            oldest = oldest_within(list(self._scrapes), now.at, WINDOW_S)
        if oldest is None or oldest.at >= now.at:
            return None
        return window(oldest, now)

    def start(self) -> ScrapeRing:
        self._thread = threading.Thread(target=self._sample, name="precon-status-sampler", daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stopped.wait(self._every):
            self.scrape()

    def stop(self) -> None:
        self._stopped.set()
        if self._thread is not None:
            self._thread.join(timeout=STOP_WAIT_S)


@st.cache_resource(show_spinner=False, on_release=ScrapeRing.stop)
def _ring(identity: str) -> ScrapeRing:
    connection = api.connection()
    url, token = api.setting(METRICS_URL_SETTING), api.setting(METRICS_TOKEN_SETTING)
    return ScrapeRing(connection.fresh_client, url, token).start()


def ring() -> ScrapeRing:
    """This deployment's ring of scrapes, its sampler running from the first view of the page on."""
    return _ring(api.connection().identity)


def duration(seconds: float) -> str:
    """``40 s``, ``12 minutes``, ``1 minute``, ``an hour``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    if minutes >= 60:
        return "an hour"
    return f"{minutes} minute{'' if minutes == 1 else 's'}"


def milliseconds(seconds: float | None) -> str:
    return (
        MISSING if seconds is None else f"{seconds * 1000:,.0f} ms" if seconds >= 0.01 else f"{seconds * 1000:.1f} ms"
    )


# -- health -------------------------------------------------------------------------------------------------------


def render_health() -> None:
    connection = api.connection()
    health = connection.fresh_client.health()
    st.subheader("Service")
    state, version, answered, listings = st.columns(4)
    unchecked = health.status == "HTTP 404"  # a deployment without a health check (the production service, say)
    shown = "OK" if health.ok else "No check" if unchecked else "Failing"
    state.metric("Health", shown, help="What the service's /healthz answered")
    version.metric("Version", health.version or MISSING, help="/healthz's version, else its OpenAPI document's")
    answered.metric("Health check", milliseconds(None if health.latency_ms is None else health.latency_ms / 1000))
    counted = health.details.get("listings")
    listings.metric("Listings", f"{counted:,}" if isinstance(counted, int) else MISSING)
    where = "the embedded service" if connection.kind == "embedded" else "a remote deployment"
    st.caption(f"{where.capitalize()} at {inline_code(connection.url)} · checked {when(datetime.now(UTC))}")
    if unchecked:
        st.info("**This deployment has no health check** (/healthz answered 404): the sidebar says whether its API "
                "answers.", icon="🩺")  # fmt: skip
    elif not health.ok:
        st.error(f"**The service's health check failed:** {markdown_text(health.status)}.", icon="🔴")


# -- requests and the outbox, from /metrics -----------------------------------------------------------------------


def render_no_metrics(reason: NoMetrics) -> None:
    st.info(
        f"**No metrics from this deployment:** {markdown_text(reason.reason)}. Requests, latency and the outbox "
        f"need the service's /metrics (docs/operations.md); the health above and the subscriptions below are read "
        f"from the API and shown all the same. If it asks for a token, set {METRICS_TOKEN_SETTING} (or "
        f"{METRICS_URL_SETTING} for a port of its own) where the dashboard reads its settings.",
        icon="📉",
    )


def operations_frame(span: Window) -> pd.DataFrame:
    rows = [
        {
            "operation": figure.operation,
            "requests": round(figure.requests),
            "per_minute": round(figure.per_minute, 1),
            "p95": milliseconds(figure.p95_seconds),
        }
        for figure in span.operations
    ]
    return pd.DataFrame(rows, columns=["operation", "requests", "per_minute", "p95"])


def render_requests(now: Scrape, span: Window | None) -> None:
    st.subheader("Requests")
    if span is None:
        st.info(
            f"**Collecting.** The dashboard reads /metrics every {SAMPLE_EVERY_S} s from the first view of this page "
            "on; requests per minute and latency show from the next reading (reload in a moment).",
            icon="⏳",
        )
        return
    over = (
        "over the last hour" if span.seconds >= WINDOW_S - SAMPLE_EVERY_S else f"over the last {duration(span.seconds)}"
    )
    st.caption(
        f"Requests per minute and the 95th percentile of latency per operation {over} (from {when_unix(span.start)} "
        f"to {when_unix(span.end)}), from the service's own counters. The dashboard has been reading them since "
        f"{when_unix(ring().started)}: it keeps an hour of its readings, not the service's history."
    )
    if span.seconds < 60:
        st.caption(f"Less than a minute so far: a rate over {duration(span.seconds)} is rough. Reload later for more.")
    if not span.operations:
        st.info(f"No requests {over}.", icon="💤")
        return
    st.dataframe(
        operations_frame(span),
        hide_index=True,
        width="stretch",
        column_config={
            "operation": st.column_config.TextColumn("Operation"),
            "requests": st.column_config.NumberColumn("Requests", format="%d"),
            "per_minute": st.column_config.NumberColumn("Per minute", format="%.1f"),
            "p95": st.column_config.TextColumn("p95 latency", help="As histogram_quantile(0.95, …) computes it"),
        },
        key="status_operations",
    )


def when_unix(seconds: float) -> str:
    return when(datetime.fromtimestamp(seconds, UTC))


def render_outbox(now: Scrape) -> None:
    pending = now.value(OUTBOX_PENDING)
    if pending is None:
        st.caption("This deployment's /metrics says nothing of a webhook outbox.")
        return
    depth, oldest, overdue = st.columns(3)
    depth.metric("Outbox: deliveries waiting", f"{pending:,.0f}")
    oldest.metric("Oldest waiting", duration(now.value(OUTBOX_OLDEST) or 0.0) if pending else MISSING)
    late = now.value(OUTBOX_OVERDUE) or 0.0
    overdue.metric("Most overdue", duration(late) if late >= 1 else "on time")
    if late > 120:
        st.warning(f"**Due deliveries have waited {duration(late)}:** nothing seems to be sending them.", icon="⏰")


# -- subscriptions ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Subscriptions:
    figures: list[SubscriptionHealth]
    problem: str | None = None


def load_subscriptions() -> Subscriptions:
    """Each subscription's figures from its newest deliveries, failing first; or why they cannot be read."""
    try:
        subscriptions: list[WebhookSubscription] = api.call_uncached("list_webhooks")
        figures = [
            health_of(s, api.call_uncached("webhook_deliveries", subscription=s.id, per_page=RECENT_DELIVERIES).results)
            for s in subscriptions
        ]
    except NotFound:
        return Subscriptions([], "This deployment offers no webhooks, or keeps no delivery log that can be read here.")
    except PreconError as error:
        return Subscriptions([], f"The subscriptions could not be read: {error.message}")
    except ValidationError:
        return Subscriptions([], "The service answered with something this page cannot read.")
    return Subscriptions(failing_first(figures))


def rate_text(health: SubscriptionHealth) -> str:
    if health.success_rate is None:
        return "no attempts yet"
    return f"{health.success_rate:.0%} ({health.accepted} of {health.attempts} attempts)"


def failure_text(health: SubscriptionHealth) -> str:
    failure = health.last_failure
    if failure is None:
        return "none"
    what = f"HTTP {failure.status}" if failure.status is not None else f"no answer: {failure.error or 'unknown'}"
    return f"{what} · {when(failure.attemptedAt)} ({relative(failure.attemptedAt)})"


def render_subscription(health: SubscriptionHealth) -> None:
    subscription = health.subscription
    with st.container(border=True, key=f"status_sub_{subscription.id}"):
        text, link = st.columns([5, 1], vertical_alignment="center")
        badge = (
            ":red-badge[:material/error: failing]"
            if health.failing
            else (
                ":green-badge[:material/check_circle: healthy]" if health.attempts else ":gray-badge[no attempts yet]"
            )
        )
        text.markdown(
            f"{badge} · {subscription.event} ({subscription.env}) → {inline_code(subscription.targetUrl)} · "
            f"`{subscription.id}`  \n"
            f"**Success rate** {rate_text(health)} · **Last failure** {markdown_text(failure_text(health))} · "
            f"**Pending retries** {health.pending_retries}"
        )
        with link:
            st.page_link(
                WEBHOOKS_PAGE,
                label="Deliveries",
                icon=":material/list_alt:",
                query_params={"subscription": subscription.id},
            )


def render_subscriptions() -> None:
    st.subheader("Webhook subscriptions")
    loaded = load_subscriptions()
    if loaded.problem:
        st.info(loaded.problem, icon="📭")
        return
    if not loaded.figures:
        st.info("This key has no webhook subscriptions.", icon="🪝")
        return
    st.caption(
        f"Failing first. **Success rate**: the attempts its receiver accepted (a 2xx answer) out of all attempts, over "
        f"its newest {RECENT_DELIVERIES} deliveries (a delivery retried three times is three attempts). **Last "
        "failure**: its newest attempt not accepted. **Pending retries**: deliveries waiting to be sent again after a "
        "failed attempt. **Failing**: a delivery waits for a retry, or its newest attempt failed."
    )
    for health in loaded.figures:
        render_subscription(health)


def render() -> None:
    st.title("Status")
    st.caption("How the listings service is doing, as this dashboard sees it. Reload the page to read it again.")
    render_health()
    sampler = ring()
    now = sampler.scrape()
    if isinstance(now, NoMetrics):
        render_no_metrics(now)
    else:
        render_requests(now, sampler.window(now))
        st.subheader("Webhook outbox")
        render_outbox(now)
    render_subscriptions()
