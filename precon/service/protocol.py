"""The HTTP protocol the service runs under: uvicorn's, except that a request it cannot even read (a request
line or headers over its limit of about 64 KiB, or bytes that are not HTTP) gets the API's JSON 400 with an
``x-request-id``, like every other answer, instead of uvicorn's plain text."""

from __future__ import annotations

import uuid

import orjson
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

UNREADABLE = "the request could not be read: its request line or headers are malformed, or longer than 64 KiB"


def unreadable_request_answer() -> bytes:
    request_id = uuid.uuid4().hex
    body = orjson.dumps({"requestId": request_id, "message": UNREADABLE})
    head = (
        "HTTP/1.1 400 Bad Request\r\n"
        "content-type: application/json\r\n"
        f"content-length: {len(body)}\r\n"
        f"x-request-id: {request_id}\r\n"
        "connection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


class JsonErrorsProtocol(HttpToolsProtocol):
    def send_400_response(self, msg: str) -> None:
        self.transport.write(unreadable_request_answer())
        self.transport.close()
