"""The shapes of every answer: JSON with an ``ETag``, the errors of docs/api.md, paged envelopes, facet counts."""

from __future__ import annotations

import math
import zlib
from typing import Any

import orjson
from fastapi import Request
from starlette.responses import Response

from precon.service.errors import ApiError

CACHE_CONTROL = "private, max-age=60"
MAX_ANSWER_BYTES = 24 * 1024 * 1024
"""The largest answer sent: a page of 1000 whole listings is about 10 MB; past this, ask for less."""


def _etag(body: bytes) -> str:
    """The body's CRC-32 and length: a validator of one URL's answers over time, at a tenth of a cryptographic
    hash's cost (about 25 µs for a page of 20 whole listings)."""
    return f'"{zlib.crc32(body):08x}-{len(body):x}"'


class EncodedResults(list[bytes]):
    """``results`` already encoded, one JSON value each (see :mod:`precon.service.api.splice`): :func:`encode` puts
    them in place as they are."""


RESULTS_FIRST = b'{"results":[]'


def encode(payload: Any) -> bytes:
    """``orjson.dumps(payload)``, where ``payload["results"]`` may be :class:`EncodedResults` (``results`` first)."""
    results = payload.get("results") if isinstance(payload, dict) else None
    if not isinstance(results, EncodedResults):
        return orjson.dumps(payload)
    rest = orjson.dumps({**payload, "results": []})
    if not rest.startswith(RESULTS_FIRST):
        raise ValueError("encoded results must come first")
    return b'{"results":[' + b",".join(results) + b"]" + rest[len(RESULTS_FIRST) :]


def _etag_matches(header: str | None, etag: str) -> bool:
    if not header:
        return False
    candidates = [part.strip() for part in header.split(",")]
    return "*" in candidates or any(c.removeprefix("W/") == etag for c in candidates)


def answer(request: Request, payload: Any, cache_control: str = CACHE_CONTROL) -> Response:
    """A JSON answer with an ``ETag``; a matching ``If-None-Match`` gets 304 and no body."""
    body = encode(payload)
    if len(body) > MAX_ANSWER_BYTES:
        raise ApiError(
            400,
            f"the answer would be {len(body) / 2**20:.0f} MiB, over the {MAX_ANSWER_BYTES // 2**20} MiB limit: "
            "ask for fewer results (perPage), fewer attributes (retrieveAttributes) or no referrences",
        )
    etag = _etag(body)
    headers = {"ETag": etag, "Cache-Control": cache_control}
    if request.method in ("GET", "HEAD") and _etag_matches(request.headers.get("if-none-match"), etag):
        return Response(status_code=304, headers=headers)
    return Response(body, media_type="application/json", headers=headers)


def error_response(request: Request, error: ApiError) -> Response:
    request_id = request.scope.get("state", {}).get("request_id", "")
    return Response(
        orjson.dumps(error.payload(request_id)),
        status_code=error.status,
        media_type="application/json",
        headers=error.headers,
    )


def envelope(results: list[Any], total: int, page: int, per_page: int) -> dict[str, Any]:
    return {
        "results": results,
        "total": total,
        "page": page,
        "pages": pages(total, per_page),
        "perPage": per_page,
    }


def facets_payload(facets: dict[str, list[tuple[str, int]]], as_list: bool = False) -> dict[str, Any]:
    if as_list:
        return {name: [{"value": v, "count": c} for v, c in values] for name, values in facets.items()}
    return {name: dict(values) for name, values in facets.items()}


def pages(total: int, per_page: int) -> int:
    return math.ceil(total / per_page) if per_page > 0 else 0
