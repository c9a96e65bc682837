"""The benchmarks' HTTP client: one keep-alive connection on the standard library's ``http.client``.

The benchmarks run the client on the same two cores as the services they measure. ``httpx`` spends 0.5-1.0 ms
of CPU a request in the client (measured against ``/healthz`` and the query mix, on this machine), which is as
much as the fastest requests take in the service: a benchmark driven by it measures the client. This one spends
0.2-0.3 ms. Both sides of a comparison use it, so the comparison stays like for like.
"""

from __future__ import annotations

import http.client
from collections.abc import Mapping
from urllib.parse import urlencode, urlsplit

FAILED = 0
"""The status of an answer that never came (refused, reset, timed out)."""


class LeanClient:
    """GET requests on one persistent connection, reopened after a failure; one per thread."""

    def __init__(self, base_url: str, headers: Mapping[str, str] | None = None, timeout: float = 120.0) -> None:
        parts = urlsplit(base_url)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 80
        self.prefix = parts.path.rstrip("/")
        self.headers = dict(headers or {})
        self.timeout = timeout
        self._connection: http.client.HTTPConnection | None = None

    def get(self, path: str, params: Mapping[str, str] | None = None) -> tuple[int, bytes]:
        """The status and body of ``GET path?params``; :data:`FAILED` and the error's text when none came."""
        target = self.prefix + path + ("?" + urlencode(params) if params else "")
        for attempt in (1, 2):
            connection = self._connection or http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            self._connection = connection
            try:
                connection.request("GET", target, headers=self.headers)
                response = connection.getresponse()
                body = response.read()
            except (OSError, http.client.HTTPException) as error:
                connection.close()
                self._connection = None
                # A keep-alive connection the server closed while idle fails on first use: once more, anew.
                if attempt == 1 and isinstance(error, http.client.RemoteDisconnected | BrokenPipeError):
                    continue
                return FAILED, str(error).encode()
            if response.will_close:
                connection.close()
                self._connection = None
            return response.status, body
        return FAILED, b"unreachable"

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def __enter__(self) -> LeanClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
