"""What every router shares: operation registration, the service dependency, shaping and facet names."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, ClassVar

from fastapi import APIRouter, Depends, Request, Security
from fastapi.security import APIKeyHeader
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool

from precon.service.accounts.keys import ApiKey
from precon.service.api import wire
from precon.service.api.calls import Service
from precon.service.api.direct import DirectRoute, Resolver

API = "/{version}/{province}/"

api_key_header = APIKeyHeader(name="x-api-key", auto_error=False, description="The API key of an account")


async def get_service(request: Request) -> Service:
    """The application's service (async, so that resolving it costs no trip to a worker thread)."""
    service: Service = request.app.state.service
    return service


ServiceDep = Annotated[Service, Depends(get_service)]


async def authenticated(
    request: Request, service: ServiceDep, api_key: Annotated[str | None, Security(api_key_header)]
) -> ApiKey:
    """The caller's key (403 without one, 429 over its rate): checked before any parameter is. On the event loop
    when the checks are local; a key or a rate kept in PostgreSQL or Redis is a round trip, made in a thread."""
    if service.checks_locally(request.headers.get("x-api-key")):
        return service.authenticate(request)
    return await run_in_threadpool(service.authenticate, request)


async def _key_of(request: Request) -> ApiKey:
    """:func:`authenticated`, from the request alone (it reads the key from the request's headers itself)."""
    return await authenticated(request, await get_service(request), None)


class OperationRoute(DirectRoute):
    """An operation's route: its parameters read by a plan made once (see :mod:`.direct`), its key checked and
    its service found as :func:`authenticated` and :func:`get_service` would."""

    direct_dependencies: ClassVar[dict[Callable[..., Any], Resolver]] = {
        get_service: get_service,
        authenticated: _key_of,
    }


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
        "dependencies": [Depends(authenticated)],
        "response_model": None,
        "route_class_override": OperationRoute,
        "responses": responses,
    }

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
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
