"""How each webhook subscription's deliveries are going, from the delivery log (``webhooks/deliveries``): the share
of attempts its receiver accepted, its last failed attempt and the deliveries waiting for a retry. Pure data: the
dashboard's Status page draws it, and its tests compute the same from the client's log."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from precon.client.models import DeliveryAttempt, WebhookDelivery, WebhookSubscription

RECENT_DELIVERIES = 100
"""The newest deliveries of each subscription the figures are read from (one page of the log)."""


def accepted(attempt: DeliveryAttempt) -> bool:
    """An attempt the receiver accepted: a 2xx answer."""
    return attempt.status is not None and 200 <= attempt.status < 300


@dataclass(frozen=True)
class SubscriptionHealth:
    subscription: WebhookSubscription
    deliveries: int
    """Deliveries read (its newest, at most :data:`RECENT_DELIVERIES`)."""
    attempts: int
    accepted: int
    """Attempts answered with a 2xx."""
    pending_retries: int
    """Deliveries waiting for a retry: pending, with at least one failed attempt."""
    last_failure: DeliveryAttempt | None
    """The newest attempt that was not accepted."""

    @property
    def success_rate(self) -> float | None:
        """Accepted attempts over all attempts made (None: none made yet)."""
        return self.accepted / self.attempts if self.attempts else None

    @property
    def failing(self) -> bool:
        """Whether its receiver is failing now: a delivery waits for a retry, or its newest attempt failed."""
        return self.pending_retries > 0 or self._newest_failed

    _newest_failed: bool = False


def _moment(attempt: DeliveryAttempt) -> float:
    moment: datetime | None = attempt.attemptedAt
    return moment.timestamp() if moment is not None else 0.0


def health_of(subscription: WebhookSubscription, deliveries: Iterable[WebhookDelivery]) -> SubscriptionHealth:
    """A subscription's figures over these deliveries of its (the delivery log's, newest first)."""
    read = list(deliveries)
    attempts = [attempt for delivery in read for attempt in delivery.attempts]
    failures = [attempt for attempt in attempts if not accepted(attempt)]
    newest = max(attempts, key=_moment, default=None)
    return SubscriptionHealth(
        subscription=subscription,
        deliveries=len(read),
        attempts=len(attempts),
        accepted=len(attempts) - len(failures),
        pending_retries=sum(1 for d in read if d.status == "pending" and d.attempts),
        last_failure=max(failures, key=_moment, default=None),
        _newest_failed=newest is not None and not accepted(newest),
    )


def failing_first(figures: Iterable[SubscriptionHealth]) -> list[SubscriptionHealth]:
    """Failing subscriptions first, then by success rate (lowest first; none yet last), then by id."""

    def order(health: SubscriptionHealth) -> tuple[bool, float, str]:
        rate = health.success_rate
        return (not health.failing, 2.0 if rate is None else rate, health.subscription.id)

    return sorted(figures, key=order)
