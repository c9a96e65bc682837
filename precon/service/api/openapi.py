"""The OpenAPI document as the service really behaves: FastAPI's, less what never happens here.

- No body on a HEAD answer.
- No 422: a request that breaks its declared parameters is a 400 (see :mod:`precon.service.api.request_errors`).
- An optional query parameter is absent, empty (``page=``, which counts as absent) or a value of its type, never
  ``null``: the ``anyOf`` with ``null`` that pydantic writes for ``int | None`` becomes one with ``""``.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

UNUSED_SCHEMAS = ("HTTPValidationError", "ValidationError")


EMPTY = {"type": "string", "enum": [""]}
BOOLEAN_DIGITS = {"type": "string", "enum": ["", "1", "0"]}


def _optional_query(schema: dict[str, Any]) -> dict[str, Any]:
    """An optional query parameter's schema: its type, or ``""`` where the type is not already a string."""
    options = schema.get("anyOf")
    if isinstance(options, list):
        kept = [option for option in options if option != {"type": "null"}]
        if len(kept) == 1:
            schema = {**{k: v for k, v in schema.items() if k != "anyOf"}, **kept[0]}
    if schema.get("type") == "string" or "anyOf" in schema:
        return schema
    described = {k: v for k, v in schema.items() if k in ("title", "description")}
    typed = {k: v for k, v in schema.items() if k not in described}
    if typed.get("type") == "boolean":
        return {**described, "anyOf": [typed, BOOLEAN_DIGITS]}
    return {**described, "anyOf": [typed, EMPTY]}


def truthful_openapi(app: FastAPI) -> dict[str, Any]:
    """The document, made once and kept (as FastAPI's own is)."""
    if app.openapi_schema is not None:
        return app.openapi_schema
    document = get_openapi(
        title=app.title,
        version=app.version,
        description=app.description,
        routes=app.routes,
    )
    for operations in document.get("paths", {}).values():
        for method, operation in operations.items():
            operation.get("responses", {}).pop("422", None)
            if method == "head":
                for response in operation.get("responses", {}).values():
                    response.pop("content", None)
            for parameter in operation.get("parameters", []):
                if parameter.get("in") == "query" and not parameter.get("required"):
                    parameter["schema"] = _optional_query(parameter.get("schema", {}))
    schemas = document.get("components", {}).get("schemas", {})
    for name in UNUSED_SCHEMAS:
        schemas.pop(name, None)
    app.openapi_schema = document
    return document
