"""Registering an operation: its paths (every version and province, with and without a trailing slash, GET with
HEAD), its route class and the answers the OpenAPI document lists for it."""

from __future__ import annotations

import typing
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel

from precon.service.api import wire
from precon.service.api.pipeline import OperationRoute

API = "/{version}/{province}/"


def _error(description: str, model: type[BaseModel] | object = wire.Error) -> dict[str, Any]:
    return {"model": model, "description": description}


ERRORS: dict[int | str, dict[str, Any]] = {
    400: _error("A bad parameter or body: the message says which and what is wrong"),
    403: _error("No key, an unknown key, or a version or province the key's products do not grant"),
    413: _error("A request body over 64 KiB"),
    429: _error("Over the key's rate: retry after `Retry-After` seconds"),
    500: _error("An unexpected failure (no detail leaves the service)", wire.ServerError),
}
NOT_FOUND = {404: _error("No such record in this version and province")}


def operation(
    router: APIRouter,
    name: str,
    method: str,
    answer_model: Any,
    *,
    summary: str,
    route_name: str | None = None,
    openapi_extra: dict[str, Any] | None = None,
    errors: dict[int | str, dict[str, Any]] | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Registers an operation under every version and province, with and without a trailing slash; a GET answers
    HEAD too. ``answer_model`` is the schema of its 200 answer (the operation builds the bytes itself)."""
    responses: dict[int | str, dict[str, Any]] = {
        200: {"model": answer_model, "description": "OK"},
        **ERRORS,
        **(errors or {}),
    }
    if method == "GET":
        responses[304] = {"description": "Not Modified: the `If-None-Match` ETag is still current"}
    if method == "POST":
        responses[408] = _error("The request body did not arrive within 15 s")
    route_name = route_name or name
    common: dict[str, Any] = {
        "response_model": None,
        "route_class_override": OperationRoute,
        "responses": responses,
    }

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        if not _takes_a_call(fn):
            raise TypeError(f"{fn.__name__} must take its Call (a dependency of calls_of): it is how keys are checked")
        router.add_api_route(
            API + name, fn, methods=[method], name=route_name, summary=summary, openapi_extra=openapi_extra, **common
        )
        router.add_api_route(API + name + "/", fn, methods=[method], include_in_schema=False, **common)
        if method == "GET":
            head = {
                **common,
                "responses": {status: {"description": r["description"]} for status, r in responses.items()},
            }
            router.add_api_route(
                API + name, fn, methods=["HEAD"], name=f"{route_name}_head", summary=f"{summary} (headers only)", **head
            )
            router.add_api_route(API + name + "/", fn, methods=["HEAD"], include_in_schema=False, **head)
        return fn

    return register


def _takes_a_call(fn: Callable[..., Any]) -> bool:
    """Whether an endpoint has its :class:`~.calls.Call` injected (and so its key checked)."""
    hints = typing.get_type_hints(fn, include_extras=True)
    return any(
        getattr(getattr(meta, "dependency", None), "plan", None) is not None
        for hint in hints.values()
        for meta in typing.get_args(hint)[1:]
    )
