"""Sending webhook deliveries: the worker that claims due deliveries from the outbox
(:class:`precon.service.webhooks.model.Outbox`) and posts them signed per the Standard Webhooks scheme, recording
every attempt.

Of the processes serving one data directory one sends at a time (a file lock); with a shared outbox (PostgreSQL)
every process of every replica sends, each delivery claimed by one of them for a lease.
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import httpcore
from standardwebhooks import Webhook

from precon.service import metrics
from precon.service.logs import log_fields
from precon.service.webhooks.model import (
    DELIVERY_TIMEOUT_S,
    ELECTION_S,
    POLL_S,
    RESPONSE_EXCERPT_CHARS,
    SENDERS,
    Due,
    Outbox,
    RetrySchedule,
)
from precon.service.webhooks.targets import GuardedBackend, TargetPolicy

log = logging.getLogger("precon.webhooks")

JOURNAL_SWEEP_S = 5.0
"""How often a worker whose outbox keeps journals of catalogue changes (PostgreSQL's) sweeps them."""


def sign(secret: str, message_id: str, timestamp: datetime, body: bytes) -> dict[str, str]:
    """The Standard Webhooks headers of one delivery."""
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(int(timestamp.timestamp())),
        "webhook-signature": Webhook(secret).sign(message_id, timestamp, body.decode()),
    }


@dataclass
class DeliveryWorker:
    """Posts due deliveries in background threads until stopped."""

    store: Outbox
    policy: TargetPolicy
    schedule: RetrySchedule = field(default_factory=RetrySchedule)
    senders: int = SENDERS
    _stop: threading.Event = field(default_factory=threading.Event)
    _wake: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)

    exclusive: Path | None = None
    """A lock file: with one, this worker sends only while it holds the lock, so that of the processes serving one
    data directory exactly one sends (and another takes over within :data:`ELECTION_S` when it stops). Ignored for
    a shared store (PostgreSQL): no file lock reaches the other machines, so every process sends, its claims
    (``FOR UPDATE SKIP LOCKED``, leased) keeping each delivery to one sender."""
    _pool: httpcore.ConnectionPool | None = None
    _election: threading.Thread | None = None

    def start(self) -> DeliveryWorker:
        if self.exclusive is None or self.store.shared:
            return self._start_senders()
        thread = threading.Thread(target=self._elect, args=(self.exclusive,), name="webhook-election", daemon=True)
        thread.start()
        self._election = thread
        return self

    def _elect(self, lock: Path) -> None:
        with lock.open("a+b") as handle:
            while not self._stop.is_set():
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    self._stop.wait(ELECTION_S)
                    continue
                log.info("this process sends webhook deliveries (pid %d)", os.getpid())
                self._start_senders()
                self._stop.wait()
                for thread in self._threads:
                    thread.join(timeout=DELIVERY_TIMEOUT_S + 5)

    def _start_senders(self) -> DeliveryWorker:
        released = self.store.release_abandoned_claims()
        if released:
            log.warning("%d deliveries claimed by a process that died are due again", released)
        self._pool = httpcore.ConnectionPool(
            network_backend=GuardedBackend(self.policy), max_connections=self.senders * 2, retries=0
        )
        for number in range(self.senders):
            thread = threading.Thread(target=self._run, name=f"webhook-sender-{number}", daemon=True)
            thread.start()
            self._threads.append(thread)
        sweep: Callable[[], int] | None = getattr(self.store, "sweep_journals", None)
        if sweep is not None:
            thread = threading.Thread(target=self._sweep, args=(sweep,), name="journal-sweeper", daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def _sweep(self, sweep: Callable[[], int]) -> None:
        """Publishes the catalogue changes a process that died left in the journals (see
        :mod:`precon.service.webhooks.journal`), at start and every :data:`JOURNAL_SWEEP_S`."""
        while not self._stop.is_set():
            try:
                if sweep():
                    self._wake.set()
            except Exception:  # the database unreachable for a while: the next sweep tries again
                log.exception("cannot sweep the journal of catalogue changes")
            self._stop.wait(JOURNAL_SWEEP_S)

    def wake(self) -> None:
        self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._election is not None:
            self._election.join(timeout=DELIVERY_TIMEOUT_S + 10)
        for thread in self._threads:
            thread.join(timeout=DELIVERY_TIMEOUT_S + 5)
        if self._pool is not None:
            self._pool.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                batch = self.store.claim_due(limit=1)
            except Exception:  # the outbox unreachable for a while (locked, a database restarting): try again
                log.exception("cannot read the webhook outbox")
                batch = []
            if not batch:
                self._wake.wait(POLL_S)
                self._wake.clear()
                continue
            for delivery in batch:
                try:
                    self.send(delivery)
                except Exception:  # its attempt not recorded (the outbox unreachable): due again after the lease
                    log.exception("cannot record the attempt of delivery %s", delivery.id)

    def send(self, delivery: Due) -> str:
        timestamp = datetime.now(UTC)
        headers = {
            "content-type": "application/json",
            "user-agent": "precon-webhooks/1.0",
            **sign(delivery.secret, delivery.id, timestamp, delivery.body),
        }
        started = time.perf_counter()
        status_code: int | None = None
        error: str | None = None
        excerpt: str | None = None
        try:
            if self._pool is None:
                raise RuntimeError("the delivery worker is not started")
            response = self._pool.request(
                "POST",
                delivery.target_url,
                headers=list(headers.items()),
                content=delivery.body,
                extensions={"timeout": dict.fromkeys(("connect", "read", "write", "pool"), DELIVERY_TIMEOUT_S)},
            )
            status_code = response.status
            excerpt = response.content[:RESPONSE_EXCERPT_CHARS].decode("utf-8", "replace")
            if not 200 <= status_code < 300:
                error = f"answered {status_code}"
                if 300 <= status_code < 400:
                    error += " (redirects are not followed)"
        except httpcore.TimeoutException:
            error = f"no answer in {DELIVERY_TIMEOUT_S:g} s"
        except (httpcore.NetworkError, httpcore.ProtocolError, httpcore.UnsupportedProtocol) as failure:
            error = str(failure) or type(failure).__name__
        except Exception as failure:
            log.exception("delivery %s failed unexpectedly", delivery.id)
            error = type(failure).__name__
        latency = (time.perf_counter() - started) * 1000
        outcome = self.store.record_attempt(
            delivery, status_code=status_code, latency_ms=latency, error=error, excerpt=excerpt, schedule=self.schedule
        )
        attempted(delivery, outcome, status_code, error, latency)
        return outcome


def attempted(delivery: Due, outcome: str, status_code: int | None, error: str | None, latency_ms: float) -> None:
    """An attempt recorded: counted (:mod:`precon.service.metrics`) and logged as one line (never its URL, secret or
    body: the subscription's id says whose it was)."""
    attempt = delivery.attempts + 1
    metrics.delivery_attempted(delivery.subscription_id, attempt, outcome, error is None, latency_ms / 1000)
    fields = {
        "deliveryId": delivery.id,
        "subscriptionId": delivery.subscription_id,
        "event": delivery.event,
        "attempt": attempt,
        "outcome": outcome,
        "statusCode": status_code,
        "latencyMs": round(latency_ms, 1),
        "error": error,
    }
    log_fields(log, "webhook attempt", fields)
