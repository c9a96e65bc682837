"""The errors the client raises, one class per kind of failure, all under :class:`PreconError`.

::

    PreconError
    ├── APIStatusError            the service answered with an error status
    │   ├── BadRequest            400: a parameter is wrong (the message says which and where)
    │   ├── Forbidden             403: no key, an unknown key, or a version/province the key is not granted
    │   │   └── NoDataProduct     403: product_id missing, unknown, or not the key's
    │   ├── NotFound              404: no such listing, profile or subscription
    │   ├── RateLimited           429: over the key's rate limit; ``retry_after`` seconds to wait
    │   └── ServerError           5xx: the service failed
    └── TransportError            no answer: connection refused or reset, DNS, TLS
        └── Timeout               no answer in time

Every error carries the HTTP ``status`` (None without an answer), the ``message`` and the ``request_id`` the
service gave the call, which is what to quote when asking its operators about it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

NO_DATA_PRODUCT_MESSAGE = "No data product found. Please contact your data provider"


class PreconError(Exception):
    """Base of every error the client raises."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        request_id: str | None = None,
        body: Any = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.request_id = request_id
        self.body = body

    def __str__(self) -> str:
        parts = [self.message]
        if self.status is not None:
            parts.append(f"(HTTP {self.status})")
        if self.request_id:
            parts.append(f"[request {self.request_id}]")
        return " ".join(parts)


class APIStatusError(PreconError):
    """The service answered, with an error status."""

    retry_after: float | None = None
    """Seconds the service asked to wait before trying again (``Retry-After``), when it said."""


class BadRequest(APIStatusError):
    pass


class Forbidden(APIStatusError):
    pass


class NoDataProduct(Forbidden):
    pass


class NotFound(APIStatusError):
    pass


class RateLimited(APIStatusError):
    pass


class ServerError(APIStatusError):
    pass


class TransportError(PreconError):
    """No answer came back: the service is unreachable, or the connection failed."""


class Timeout(TransportError):
    pass


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            moment = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        return max(0.0, (moment - datetime.now(UTC)).total_seconds())


def error_for_response(response: httpx.Response) -> APIStatusError:
    """The error that an error answer means, per the error table of docs/api.md."""
    try:
        body: Any = response.json()
    except ValueError:
        body = response.text
    message = ""
    request_id = response.headers.get("x-request-id")
    if isinstance(body, dict):
        message = str(body.get("message") or body.get("error") or "")
        request_id = body.get("requestId") or request_id
    status = response.status_code
    message = message or response.reason_phrase or f"HTTP {status}"
    kind: type[APIStatusError] = APIStatusError
    if status == 400:
        kind = BadRequest
    elif status in (401, 403):
        kind = NoDataProduct if message == NO_DATA_PRODUCT_MESSAGE else Forbidden
    elif status == 404:
        kind = NotFound
    elif status == 429:
        kind = RateLimited
    elif status >= 500:
        kind = ServerError
    error = kind(message, status=status, request_id=request_id, body=body)
    error.retry_after = _retry_after(response)
    return error


def error_for_transport(error: httpx.TransportError, url: str) -> TransportError:
    if isinstance(error, httpx.TimeoutException):
        return Timeout(f"no answer from {url} in time ({type(error).__name__})")
    return TransportError(f"cannot reach {url}: {error or type(error).__name__}")
