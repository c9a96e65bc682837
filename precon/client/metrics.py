"""The service's own pages beside the API, for whoever watches it: its health check (``/healthz``) and its metrics
(``/metrics``, read into :class:`precon.client.metrics_view.Scrape`). Both live at the service's root, not under
``/{version}/{province}/``, and neither is retried: a status page wants to know how the service is now."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from precon.client.metrics_view import NoMetrics, Scrape

HEALTH_PATH = "/healthz"
METRICS_PATH = "/metrics"
OPENAPI_PATH = "/openapi.json"


@dataclass(frozen=True)
class Health:
    """What the service said of itself: ``ok`` when ``/healthz`` answered 200 with ``"status": "ok"``."""

    ok: bool
    status: str
    """``ok``, or why not (an HTTP status, no answer)."""
    version: str | None = None
    """The service's version: ``/healthz``'s ``version``, else its OpenAPI document's ``info.version``."""
    details: dict[str, Any] = field(default_factory=dict)
    """The rest of ``/healthz``'s answer (the catalogue's counts, a replica's lag, ...)."""
    latency_ms: float | None = None


def _problem(error: httpx.HTTPError) -> str:
    return f"no answer ({type(error).__name__})"


class ServiceOperations:
    """Mixed into the client, whose ``_http`` (the service's address, the key, the timeout) these go through."""

    _http: httpx.Client
    api_url: str

    def health(self) -> Health:
        """The service's health check; a failure is a :class:`Health` that says so, never an exception."""
        started = time.perf_counter()
        try:
            answer = self._http.get(HEALTH_PATH, headers={"cache-control": "no-cache"})
        except httpx.HTTPError as error:
            return Health(False, _problem(error))
        latency = round((time.perf_counter() - started) * 1000, 1)
        try:
            body = answer.json() if answer.status_code == 200 else {}
        except ValueError:
            body = {}
        body = body if isinstance(body, dict) else {}
        status = str(body.pop("status", "")) or f"HTTP {answer.status_code}"
        version = body.pop("version", None) or self._openapi_version()
        return Health(status == "ok", status, str(version) if version else None, body, latency)

    def _openapi_version(self) -> str | None:
        try:
            answer = self._http.get(OPENAPI_PATH)
            info = answer.json().get("info", {}) if answer.status_code == 200 else {}
        except (httpx.HTTPError, ValueError, AttributeError):
            return None
        version = info.get("version") if isinstance(info, dict) else None
        return str(version) if version else None

    def metrics(self, url: str | None = None, token: str | None = None) -> Scrape | NoMetrics:
        """One scrape of ``/metrics`` (at ``url`` when it has an address of its own, e.g. its own port), with
        ``Authorization: Bearer token`` when given; :class:`NoMetrics` says why when there is nothing to read."""
        headers = {"accept": "text/plain", "cache-control": "no-cache"}
        if token:
            headers["authorization"] = f"Bearer {token}"
        at = time.time()
        try:
            # An address of its own gets only these headers (not the API key); the service's root gets the client's.
            answer = (
                httpx.get(url, headers=headers, timeout=self._http.timeout)
                if url
                else self._http.get(METRICS_PATH, headers=headers)
            )
        except httpx.HTTPError as error:
            return NoMetrics(f"/metrics did not answer: {_problem(error)}")
        if answer.status_code in (401, 403):
            how = "a different token" if token else "a token"
            return NoMetrics(f"/metrics asks for {how} (HTTP {answer.status_code})", answer.status_code)
        if answer.status_code != 200:
            return NoMetrics(f"this deployment serves no /metrics here (HTTP {answer.status_code})", answer.status_code)
        try:
            return Scrape.parse(answer.text, at)
        except (ValueError, TypeError):
            return NoMetrics("/metrics answered with something that is not Prometheus's text format")
