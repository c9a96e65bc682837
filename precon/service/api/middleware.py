"""What every request passes through before an operation: an id, a body limit enforced while the body streams,
a deadline for the body to arrive, and a JSON 500 for anything unexpected (with no detail leaving the service)."""

from __future__ import annotations

import logging
import time
import uuid
from urllib.parse import parse_qsl

import anyio
import orjson
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from precon.service.errors import server_error_body

log = logging.getLogger("precon.service")

MAX_BODY_BYTES = 64 * 1024
BODY_DEADLINE_S = 15.0
"""The longest a request body may take to arrive, from the first read of it: a body that trickles in or stops
cannot hold a connection and a worker for longer."""


def body_too_large() -> HTTPException:
    return HTTPException(413, f"the request body is over {MAX_BODY_BYTES} bytes")


def limited_receive(receive: Receive) -> Receive:
    """``receive`` that refuses a body past :data:`MAX_BODY_BYTES` as it streams (chunked or not), before it is
    held whole, and one that does not arrive within :data:`BODY_DEADLINE_S`. Starlette and FastAPI re-raise an
    ``HTTPException`` from here, so the answer is the API's 413 or 408."""
    received = 0
    deadline: float | None = None

    async def receive_within_limits() -> Message:
        nonlocal received, deadline
        if deadline is None:
            deadline = time.monotonic() + BODY_DEADLINE_S
        try:
            with anyio.fail_after(max(deadline - time.monotonic(), 0.001)):
                message = await receive()
        except TimeoutError:
            raise HTTPException(408, f"the request body did not arrive within {BODY_DEADLINE_S:g} s") from None
        if message["type"] == "http.request":
            received += len(message.get("body", b""))
            if received > MAX_BODY_BYTES:
                raise body_too_large()
        return message

    return receive_within_limits


def nul_holder(scope: Scope) -> str | None:
    """What part of the request holds a NUL character (``"the path"``, ``"parameter 'search'"``), or None.
    No value of the catalogue, no key and no id holds one, and PostgreSQL refuses them in text: refused here, for
    every store alike, rather than failing deep in one."""
    if "\x00" in scope.get("path", ""):
        return "the path"
    query = scope.get("query_string", b"")
    if b"%00" not in query.lower() and b"\x00" not in query:
        return None
    for name, value in parse_qsl(query.decode("latin-1"), keep_blank_values=True):
        if "\x00" in name or "\x00" in value:
            return f"parameter {name.replace(chr(0), '%00')!r}"
    return "the query string"


class RequestIdMiddleware:
    """Gives every request an id, sent back as ``x-request-id`` on every answer, error or not; limits bodies."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = uuid.uuid4().hex
        scope.setdefault("state", {})["request_id"] = request_id
        started = False

        async def send_with_id(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"x-request-id"]
                headers.append((b"x-request-id", request_id.encode()))
                message["headers"] = headers
            await send(message)

        async def answer(status: int, body: dict[str, str]) -> None:
            await send_with_id(
                {"type": "http.response.start", "status": status, "headers": [(b"content-type", b"application/json")]}
            )
            await send({"type": "http.response.body", "body": orjson.dumps(body)})

        for name, value in scope.get("headers", []):
            if name == b"content-length" and value.isdigit() and int(value) > MAX_BODY_BYTES:
                await answer(413, {"requestId": request_id, "message": str(body_too_large().detail)})
                return
        holder = nul_holder(scope)
        if holder is not None:
            message = f"{holder} holds a NUL character (%00), which no value may"
            await answer(400, {"requestId": request_id, "message": message})
            return
        try:
            await self.app(scope, limited_receive(receive), send_with_id)
        except ClientDisconnect:
            log.info("the client left before its request body arrived: %s", scope.get("path"))
        except Exception:
            # Answered here rather than re-raised, so the connection stays usable and no trace leaves.
            log.exception("unexpected failure on %s", scope.get("path"))
            if not started:
                await answer(500, server_error_body(scope.get("path", "")))
