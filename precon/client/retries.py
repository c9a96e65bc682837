"""The client's retry policy (:class:`precon.client.Client`): which failures a request is sent again after, and how
long it waits first. The policy is in the constants."""

from __future__ import annotations

import random
from collections.abc import Callable

import httpx
from tenacity import RetryCallState

from precon.client.errors import APIStatusError, RateLimited, ServerError, TransportError

# Retry policy: 0.5 s doubling to 8 s, with full jitter; Retry-After honoured up to a cap.
RETRY_ATTEMPTS = 4
"""Retries after the first attempt, for requests that may be retried."""
RETRY_INITIAL_WAIT_S = 0.5
RETRY_MAX_WAIT_S = 8.0
RETRY_AFTER_CAP_S = 30.0
"""The longest ``Retry-After`` honoured; a longer one is raised to the caller instead of waited out."""
RETRYABLE_STATUSES = frozenset({429, 500, 502, 503, 504})
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "DELETE"})
IDEMPOTENCY_HEADER = "Idempotency-Key"
"""A POST's key of its own, the same on each attempt: the service does the operation at most once for it."""


def may_retry(method: str, idempotency_key: bool = False) -> Callable[[BaseException], bool]:
    """Whether an error of a request may be sent again; ``idempotency_key``: the request carries an
    ``Idempotency-Key`` header, which makes a POST the service honours it on (a trigger) safe to repeat."""

    def decide(error: BaseException) -> bool:
        if isinstance(error, RateLimited):
            # Refused before any work was done: safe to send again, whatever the method.
            return error.retry_after is None or error.retry_after <= RETRY_AFTER_CAP_S
        if method not in IDEMPOTENT_METHODS and not idempotency_key:
            # A POST is sent again only when it certainly never left: the connection was never made.
            return isinstance(error, TransportError) and isinstance(
                error.__cause__, httpx.ConnectError | httpx.ConnectTimeout
            )
        if isinstance(error, TransportError):
            return True
        return isinstance(error, ServerError) and error.status in RETRYABLE_STATUSES

    return decide


def wait_before_retry(state: RetryCallState) -> float:
    """Exponential back-off with full jitter, or what the service asked for in ``Retry-After``."""
    error = state.outcome.exception() if state.outcome else None
    if isinstance(error, APIStatusError) and error.retry_after is not None:
        return min(error.retry_after, RETRY_AFTER_CAP_S)
    ceiling = min(RETRY_MAX_WAIT_S, RETRY_INITIAL_WAIT_S * 2 ** (state.attempt_number - 1))
    return random.uniform(ceiling / 2, ceiling)
