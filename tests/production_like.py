"""Our service as the production one behaves, for the dashboard and the library to be tried against: it has no
``unitFilter`` (the parameter is ignored, as an unknown parameter is there) and no ``search_facet_values`` (404)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode

from starlette.types import ASGIApp, Receive, Scope, Send

from precon.client import Client
from precon.service.config import DEV_API_KEY, DEV_PRODUCT_ID, ServiceSettings
from precon.service.runtime import DataDirectory
from precon.service.server import ServerThread

OUR_PARAMETERS = frozenset({"unitFilter"})
OUR_OPERATIONS = ("search_facet_values",)


class WithoutOurExtensions:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            if scope["path"].rstrip("/").endswith(OUR_OPERATIONS):
                body = json.dumps({"message": "Not Found"}).encode()
                headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
                await send({"type": "http.response.start", "status": 404, "headers": headers})
                await send({"type": "http.response.body", "body": body})
                return
            pairs = parse_qsl(scope.get("query_string", b"").decode(), keep_blank_values=True)
            kept = [(name, value) for name, value in pairs if name not in OUR_PARAMETERS]
            scope = {**scope, "query_string": urlencode(kept).encode()}
        await self.app(scope, receive, send)


@contextmanager
def plain_service(data_dir: Path, listings: int, *, production_like: bool = False) -> Iterator[str]:
    """Our service on a loopback port over its own catalogue (``production_like``: without our extensions); yields
    its URL. The key and product are the development ones."""
    directory = DataDirectory.open(ServiceSettings(dev=True, data_dir=data_dir, default_listings=listings))
    app = directory.app()
    try:
        with ServerThread(WithoutOurExtensions(app) if production_like else app) as server:  # type: ignore[arg-type]
            yield server.url
    finally:
        directory.close()


def production_like_service(data_dir: Path, listings: int) -> Any:
    return plain_service(data_dir, listings, production_like=True)


def client_for(url: str) -> Client:
    return Client(url, DEV_API_KEY, DEV_PRODUCT_ID, cache=False)
