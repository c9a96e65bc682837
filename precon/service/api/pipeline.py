"""The path of a request to an operation: its key, its parameters read once, then the operation.

An operation takes one argument, its :class:`~.calls.Call`, injected by the dependency :func:`calls_of` makes
from the operation's parameter model (see :mod:`.requests`). That dependency declares everything the OpenAPI
document says of the request: the path's version and province, the query parameters of the model, and the key
(:func:`authenticated`). FastAPI resolves it like any dependency; for an operation that takes nothing else,
:class:`OperationRoute` resolves it itself with the same functions in the same order (the key, then every
parameter of the path and the query validated by the same models, then the product), which spares each request
FastAPI's walk over the signature (0.2 ms of a 0.9 ms search). Both give the same answers, errors included;
``tests/test_direct_routes.py`` compares them request by request.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Query, Request, Security
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from fastapi.security import APIKeyHeader
from pydantic import BaseModel, ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from precon.service.accounts.model import ApiKey
from precon.service.api.calls import Call, Service
from precon.service.api.parameters import Province, Version

api_key_header = APIKeyHeader(name="x-api-key", auto_error=False, description="The API key of an account")


async def get_service(request: Request) -> Service:
    """The application's service (async, so that resolving it costs no trip to a worker thread)."""
    service: Service = request.app.state.service
    return service


async def authenticated(request: Request, api_key: Annotated[str | None, Security(api_key_header)] = None) -> ApiKey:
    """The caller's key (403 without one, 429 over its rate): checked before any parameter is. On the event loop
    when the checks are local; a key or a rate kept in PostgreSQL or Redis is a round trip, made in a thread."""
    service = await get_service(request)
    if service.checks_locally(request.headers.get("x-api-key")):
        return service.authenticate(request)
    return await run_in_threadpool(service.authenticate, request)


class PathParameters(BaseModel):
    version: Version
    province: Province


@dataclass(frozen=True)
class CallPlan:
    """How one operation's call is made from a request: its parameter model."""

    model: type[BaseModel]

    def read(self, request: Request) -> tuple[PathParameters, BaseModel]:
        """The path and query parameters, validated; every fault of both in one 400, the path's first."""
        errors: list[Any] = []
        path = query = None
        try:
            path = PathParameters.model_validate(request.path_params)
        except ValidationError as error:
            errors += _located("path", error)
        try:
            query = self.model.model_validate(dict(request.query_params))
        except ValidationError as error:
            errors += _located("query", error)
        if path is None or query is None:
            raise RequestValidationError(errors)
        return path, query

    def call(self, request: Request, key: ApiKey, path: PathParameters, query: BaseModel) -> Call[Any]:
        service: Service = request.app.state.service
        return service.call(request, key, path.version.value, path.province.value, query)

    async def resolve(self, request: Request) -> Call[Any]:
        """The dependency resolved without FastAPI: what :func:`calls_of`'s dependency returns."""
        key = await authenticated(request)
        path, query = self.read(request)
        return self.call(request, key, path, query)


def _located(where: str, error: ValidationError) -> list[dict[str, Any]]:
    """Pydantic's errors located as FastAPI locates a parameter's: ``("query", "page")``."""
    return [{**found, "loc": (where, *found["loc"])} for found in error.errors(include_url=False)]


def calls_of(model: type[BaseModel]) -> Callable[..., Any]:
    """The dependency that gives an operation its :class:`Call`, for the query parameters of ``model`` (one of
    :mod:`.requests`)."""
    plan = CallPlan(model)

    async def call_of(request: Request, key: ApiKey, version: Any, province: Any, params: BaseModel) -> Call[Any]:
        return plan.call(request, key, PathParameters(version=version, province=province), params)

    call_of.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [
            inspect.Parameter("request", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Request),
            _keyword("key", Annotated[ApiKey, Depends(authenticated)]),
            _keyword("version", Version),
            _keyword("province", Province),
            _keyword("params", Annotated[model, Query()]),
        ],
        return_annotation=Call,
    )
    call_of.plan = plan  # type: ignore[attr-defined]
    return call_of


def _keyword(name: str, annotation: Any) -> inspect.Parameter:
    return inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=annotation)


def operation_call(endpoint: Callable[..., Any]) -> tuple[str, CallPlan] | None:
    """The argument and plan of an endpoint whose only argument is its call, else None."""
    hints = typing.get_type_hints(endpoint, include_extras=True)
    arguments = [name for name in inspect.signature(endpoint).parameters]
    if len(arguments) != 1:
        return None
    for meta in typing.get_args(hints.get(arguments[0]))[1:]:
        plan = getattr(getattr(meta, "dependency", None), "plan", None)  # Depends(calls_of(...))
        if isinstance(plan, CallPlan):
            return arguments[0], plan
    return None


class OperationRoute(APIRoute):
    """An operation's route. One whose endpoint takes only its call (every operation without a body) is answered
    through the call's :class:`CallPlan`; others, and every route while ``app.dependency_overrides`` holds
    anything, by FastAPI's handler."""

    def get_route_handler(self) -> Callable[[Request], Any]:
        solver = super().get_route_handler()
        found = operation_call(self.endpoint) if not self.dependencies else None
        if found is None:
            return solver
        name, plan = found
        endpoint = self.endpoint
        is_async = inspect.iscoroutinefunction(endpoint)

        async def handler(request: Request) -> Response:
            if request.app.dependency_overrides:
                answered: Response = await solver(request)
                return answered
            call = await plan.resolve(request)
            if is_async:
                response: Response = await endpoint(**{name: call})
            else:
                response = await run_in_threadpool(endpoint, **{name: call})
            return response

        return handler
