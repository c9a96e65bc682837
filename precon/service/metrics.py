"""The service's Prometheus metrics: what each part counts as it works (requests, refusals, index builds, webhook
attempts), with labels that stay bounded whatever a client sends.

Under ``precon serve --workers N`` every worker writes its values to files of one directory
(``PROMETHEUS_MULTIPROC_DIR``, set by the command before the workers start: prometheus-client's multiprocess
mode), and any worker answering ``/metrics`` adds up all of them. With one process the values are in its memory.
What is read from the stores when scraped (the outbox, the catalogue's size) is :mod:`.api.observe`'s.

The names and labels are documented in docs/api.md (Metrics); nothing here imports the rest of the service.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from prometheus_client import Counter, Histogram, disable_created_metrics

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"

disable_created_metrics()  # no ``*_created`` series: one process shows what several do (they have none)

LATENCY_BUCKETS_S = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
SIZE_BUCKETS_BYTES = (256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0, 16777216.0)
INDEX_BUCKETS_S = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 180.0)
PATCH_BUCKETS_S = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
DELIVERY_BUCKETS_S = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 15.0)

VERSIONS = frozenset({"v1", "v1-lite", "v1-sandbox"})
METHODS = frozenset({"GET", "HEAD", "POST", "DELETE", "PUT", "PATCH", "OPTIONS"})
OTHER = "other"
"""The label of anything outside a bounded set: a path no route answers, an unknown version or method."""
ATTEMPT_BUCKETS = ("1", "2", "3", "4", "5+")

REQUESTS = Counter(
    "precon_requests",
    "Requests answered, by operation, method, API version and status",
    ["operation", "method", "version", "status"],
)
REQUEST_SECONDS = Histogram(
    "precon_request_duration_seconds",
    "Time from a request's arrival to the last byte of its answer, by operation",
    ["operation"],
    buckets=LATENCY_BUCKETS_S,
)
RESPONSE_BYTES = Histogram(
    "precon_response_size_bytes", "Bytes of each answer's body, by operation", ["operation"], buckets=SIZE_BUCKETS_BYTES
)
RATE_LIMITED = Counter(
    "precon_rate_limited",
    "Requests refused with 429: limit=key (a valid key over its rate) or address (requests without a valid key)",
    ["limit"],
)
AUTH_FAILURES = Counter("precon_auth_failures", "Requests without a valid key (no key, or an unknown one)")
INDEX_BUILDS = Counter(
    "precon_index_builds", "Column indexes built (at start, and after each catalogue change)", ["catalogue"]
)
INDEX_BUILD_SECONDS = Histogram(
    "precon_index_build_duration_seconds", "Time to build one column index", ["catalogue"], buckets=INDEX_BUCKETS_S
)
INDEX_PATCHES = Counter(
    "precon_index_patches",
    "Column indexes moved to a new generation by the listings a write wrote, not built whole",
    ["catalogue"],
)
INDEX_PATCH_SECONDS = Histogram(
    "precon_index_patch_duration_seconds", "Time to patch one column index", ["catalogue"], buckets=PATCH_BUCKETS_S
)
PLAN_INDEX_PATCHES = Counter(
    "precon_plan_index_patches",
    "Floor plan indexes (unitFilter) moved to a new generation by the listings a write wrote, not built whole",
    ["catalogue"],
)
PLAN_INDEX_PATCH_SECONDS = Histogram(
    "precon_plan_index_patch_duration_seconds",
    "Time to patch one floor plan index",
    ["catalogue"],
    buckets=PATCH_BUCKETS_S,
)
VALUE_READS = Counter(
    "precon_value_reads",
    "One path's values read from their rows (a unit's, or a listing's) for filterQuery tests on a path the column "
    "index lacks: whole, or the listings written since",
    ["catalogue", "kind", "rows"],
)
VALUE_READ_SECONDS = Histogram(
    "precon_value_read_duration_seconds",
    "Time to read one path's values, whole or those of the listings written since",
    ["catalogue"],
    buckets=INDEX_BUCKETS_S,
)
MARKET_PATCHES = Counter(
    "precon_market_patches",
    "Market columns or unit ledgers (market_stats) moved to a new generation by the listings a write wrote, "
    "not built whole",
    ["catalogue", "kind"],
)
MARKET_PATCH_SECONDS = Histogram(
    "precon_market_patch_duration_seconds",
    "Time to patch one catalogue's market columns or unit ledger",
    ["catalogue", "kind"],
    buckets=PATCH_BUCKETS_S,
)
DELIVERY_ATTEMPTS = Counter(
    "precon_webhook_attempts",
    "Webhook delivery attempts, by what came of the delivery (delivered, retrying, failed: its retries spent) and "
    "the attempt's number (1 to 4, then 5+)",
    ["outcome", "attempt"],
)
DELIVERY_SECONDS = Histogram(
    "precon_webhook_attempt_duration_seconds",
    "Time of each delivery attempt, until the receiver's answer or the failure",
    buckets=DELIVERY_BUCKETS_S,
)
SUBSCRIPTION_FAILURES = Counter(
    "precon_webhook_subscription_failed_attempts",
    "Failed delivery attempts (no 2xx answer), by subscription id",
    ["subscription"],
)

OUTCOMES = {"delivered": "delivered", "pending": "retrying", "failed": "failed"}


def multiprocess() -> bool:
    """Whether the values are kept in files shared by the worker processes (``PROMETHEUS_MULTIPROC_DIR``)."""
    return bool(os.environ.get(MULTIPROC_ENV))


def fresh_directory(path: Path) -> Path:
    """``path`` made empty for a new run's values (a run before may have left its files there)."""
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


def process_ended(pid: int | None = None) -> None:
    """A worker ending: its live gauges' files removed (its counters and histograms stay in the totals)."""
    directory = os.environ.get(MULTIPROC_ENV)
    if directory:
        from prometheus_client import multiprocess as prometheus_multiprocess

        prometheus_multiprocess.mark_process_dead(pid if pid is not None else os.getpid(), directory)


def attempt_bucket(attempt: int) -> str:
    return ATTEMPT_BUCKETS[min(max(attempt, 1), len(ATTEMPT_BUCKETS)) - 1]


def index_built(catalogue: str, seconds: float) -> None:
    INDEX_BUILDS.labels(catalogue).inc()
    INDEX_BUILD_SECONDS.labels(catalogue).observe(seconds)


def index_patched(catalogue: str, seconds: float) -> None:
    INDEX_PATCHES.labels(catalogue).inc()
    INDEX_PATCH_SECONDS.labels(catalogue).observe(seconds)


def plan_index_patched(catalogue: str, seconds: float) -> None:
    PLAN_INDEX_PATCHES.labels(catalogue).inc()
    PLAN_INDEX_PATCH_SECONDS.labels(catalogue).observe(seconds)


def held_values_read(catalogue: str, kind: str, rows: str, seconds: float) -> None:
    """``kind``: ``whole`` or ``written``; ``rows``: ``units`` or ``listings``."""
    VALUE_READS.labels(catalogue, kind, rows).inc()
    VALUE_READ_SECONDS.labels(catalogue).observe(seconds)


def market_patched(catalogue: str, kind: str, seconds: float) -> None:
    """``kind``: ``columns`` or ``ledger``."""
    MARKET_PATCHES.labels(catalogue, kind).inc()
    MARKET_PATCH_SECONDS.labels(catalogue, kind).observe(seconds)


def delivery_attempted(subscription: str, attempt: int, outcome: str, succeeded: bool, seconds: float) -> None:
    """One attempt of a delivery: ``outcome`` is the delivery's status after it (``delivered``, ``pending``,
    ``failed``)."""
    DELIVERY_ATTEMPTS.labels(OUTCOMES.get(outcome, OTHER), attempt_bucket(attempt)).inc()
    DELIVERY_SECONDS.observe(seconds)
    if not succeeded and subscription:
        SUBSCRIPTION_FAILURES.labels(subscription).inc()


class RequestMetrics:
    """The request metrics' children by label values, looked up once (``labels()`` costs microseconds a call)."""

    def __init__(self) -> None:
        self._counts: dict[tuple[str, str, str, int], Counter] = {}
        self._timings: dict[str, tuple[Histogram, Histogram]] = {}

    def observe(self, operation: str, method: str, version: str, status: int, seconds: float, size: int) -> None:
        key = (operation, method, version, status)
        counter = self._counts.get(key)
        if counter is None:
            counter = self._counts[key] = REQUESTS.labels(operation, method, version, str(status))
        counter.inc()
        timings = self._timings.get(operation)
        if timings is None:
            timings = self._timings[operation] = (
                REQUEST_SECONDS.labels(operation),
                RESPONSE_BYTES.labels(operation),
            )
        timings[0].observe(seconds)
        timings[1].observe(size)


def bounded_version(version: object) -> str:
    """The version label: one the API knows, ``none`` outside the API's paths, else ``other``."""
    if version is None:
        return "none"
    return version if isinstance(version, str) and version in VERSIONS else OTHER


def bounded_method(method: str) -> str:
    return method if method in METHODS else OTHER
