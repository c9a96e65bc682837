"""The service's ``/metrics`` read as data: one scrape's samples by name and labels, and what two scrapes say
together (requests per minute, a quantile of a histogram), the way Prometheus computes ``rate`` and
``histogram_quantile``. No Streamlit here: the dashboard's Status page draws what these answer.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

Labels = frozenset[tuple[str, str]]

REQUESTS = "precon_requests_total"
DURATION = "precon_request_duration_seconds"
OUTBOX_PENDING = "precon_webhook_outbox_pending"
OUTBOX_OLDEST = "precon_webhook_outbox_oldest_pending_age_seconds"
OUTBOX_OVERDUE = "precon_webhook_outbox_overdue_seconds"


@dataclass(frozen=True)
class Scrape:
    """One answer of ``/metrics``: each sample's value by its name and labels, and when it was read (Unix s)."""

    at: float
    samples: Mapping[tuple[str, Labels], float]

    @classmethod
    def parse(cls, text: str, at: float) -> Scrape:
        """Prometheus's text format as a scrape (ValueError when it is not that format)."""
        samples = {
            (sample.name, frozenset(sample.labels.items())): float(sample.value)
            for family in text_string_to_metric_families(text)
            for sample in family.samples
        }
        return cls(at, samples)

    def value(self, name: str, **labels: str) -> float | None:
        """The sample with exactly these labels (None: not in this scrape)."""
        return self.samples.get((name, frozenset(labels.items())))

    def total(self, name: str, by: str) -> dict[str, float]:
        """The samples of ``name`` added up by the value of one label (``sum by (operation)``)."""
        sums: dict[str, float] = defaultdict(float)
        for (sample, labels), number in self.samples.items():
            if sample == name:
                sums[dict(labels).get(by, "")] += number
        return dict(sums)

    def buckets(self, name: str, by: str) -> dict[str, dict[float, float]]:
        """A histogram's cumulative buckets (``le`` → count) by the value of one label, added up over the others."""
        found: dict[str, dict[float, float]] = defaultdict(lambda: defaultdict(float))
        for (sample, labels), number in self.samples.items():
            if sample != f"{name}_bucket":
                continue
            named = dict(labels)
            if "le" in named:
                found[named.get(by, "")][float(named["le"])] += number
        return {key: dict(counts) for key, counts in found.items()}


@dataclass(frozen=True)
class NoMetrics:
    """A deployment whose ``/metrics`` cannot be read: why, for a person (404: it serves none; 401/403: the token)."""

    reason: str
    status: int | None = None


def increase(old: float | None, new: float | None) -> float:
    """How much a counter grew between two scrapes; a counter that went down was reset (the service restarted),
    so all of its new value is growth, as Prometheus's ``increase`` takes it."""
    if new is None:
        return 0.0
    if old is None or new < old:
        return new
    return new - old


def quantile(q: float, buckets: Mapping[float, float]) -> float | None:
    """The ``q`` quantile of cumulative buckets (``le`` → count, ``+Inf`` included), interpolated linearly inside
    the bucket it falls in, as ``histogram_quantile`` does; None with no observations. In the ``+Inf`` bucket it is
    the highest finite bound, and in the first bucket it is interpolated from 0."""
    bounds = sorted(buckets)
    if not bounds or not math.isinf(bounds[-1]):
        return None
    total = buckets[bounds[-1]]
    if total <= 0:
        return None
    rank = q * total
    lower_bound, lower_count = 0.0, 0.0
    for bound in bounds:
        count = buckets[bound]
        if count >= rank:
            if math.isinf(bound):
                return lower_bound if len(bounds) > 1 else None
            if count == lower_count:
                return bound
            return lower_bound + (bound - lower_bound) * (rank - lower_count) / (count - lower_count)
        lower_bound, lower_count = bound, count
    return bounds[-2] if len(bounds) > 1 else None


@dataclass(frozen=True)
class OperationFigures:
    operation: str
    requests: float
    """Requests answered between the two scrapes."""
    per_minute: float
    p95_seconds: float | None
    """None when no request of it was timed in the window."""


@dataclass(frozen=True)
class Window:
    """What happened between two scrapes: each operation's requests and p95 latency."""

    start: float
    end: float
    operations: list[OperationFigures] = field(default_factory=list)

    @property
    def seconds(self) -> float:
        return max(self.end - self.start, 0.0)


def window(old: Scrape, new: Scrape, q: float = 0.95) -> Window:
    """Requests per minute and the ``q`` latency quantile per operation from ``old`` to ``new``, busiest first;
    operations that answered nothing in between are left out."""
    minutes = max(new.at - old.at, 1e-9) / 60
    before, after = old.total(REQUESTS, "operation"), new.total(REQUESTS, "operation")
    old_buckets, new_buckets = old.buckets(DURATION, "operation"), new.buckets(DURATION, "operation")
    figures = []
    for operation, now in after.items():
        count = increase(before.get(operation), now)
        if count <= 0:
            continue
        grown = _grown(old_buckets.get(operation, {}), new_buckets.get(operation, {}))
        figures.append(OperationFigures(operation, count, count / minutes, quantile(q, grown)))
    figures.sort(key=lambda figure: (-figure.requests, figure.operation))
    return Window(old.at, new.at, figures)


def _grown(old: Mapping[float, float], new: Mapping[float, float]) -> dict[float, float]:
    """Each bucket's increase; all of them from zero if any went down (the histogram was reset)."""
    if any(new.get(bound, 0.0) < count for bound, count in old.items()):
        return dict(new)
    return {bound: count - old.get(bound, 0.0) for bound, count in new.items()}


def oldest_within(scrapes: Iterable[Scrape], now: float, seconds: float) -> Scrape | None:
    """The earliest scrape no older than ``seconds`` before ``now``."""
    kept = [scrape for scrape in scrapes if now - scrape.at <= seconds]
    return min(kept, key=lambda scrape: scrape.at) if kept else None
