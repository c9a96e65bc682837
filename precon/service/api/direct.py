"""Operations whose parameters are read by a plan made once per route, not by FastAPI's generic solver.

FastAPI documents an operation from its signature and, on every request, walks that signature again: for each
declared parameter it works out the annotation's shape, its aliases and its default before validating it. For a
search with sixteen optional parameters that walk cost about 0.2 ms of a 0.9 ms answer, more than the search.

:class:`DirectRoute` keeps FastAPI for what it is good at (routing, the OpenAPI document, the exception
handlers) and swaps the per-request walk for a :class:`ParameterPlan` made when the route is registered: the
same fields, validated by the same pydantic adapters FastAPI builds (``ModelField.validate``), with the same
error locations, so an answer, good or bad, is byte for byte the one FastAPI's solver gives
(``tests/test_direct_routes.py`` compares them request by request). Only what the plan understands is taken
over: path and query parameters of scalar types, the request, and dependencies named in
:attr:`DirectRoute.direct_dependencies`; a route with anything else (a body, headers, cookies, list parameters, other
dependencies) keeps FastAPI's handler, as does every route while ``app.dependency_overrides`` holds anything.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Awaitable, Callable, Sequence
from copy import deepcopy
from dataclasses import dataclass
from typing import Any, ClassVar

import fastapi.routing
from fastapi import Request
from fastapi.dependencies.models import Dependant
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from pydantic import BaseModel, ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import QueryParams
from starlette.responses import Response

Resolver = Callable[[Request], Awaitable[Any]]
"""How a direct route resolves one dependency: from the request alone."""

_SEQUENCE_ORIGINS = (list, tuple, set, frozenset, Sequence)


def _takes_many(annotation: Any) -> bool:
    """Whether a parameter's annotation asks for every repeated value (``list[str]``, ``tuple[int, ...]``)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _takes_many(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return any(_takes_many(arg) for arg in typing.get_args(annotation))
    return isinstance(origin, type) and issubclass(origin, _SEQUENCE_ORIGINS)


def missing_error(loc: tuple[str, str]) -> dict[str, Any]:
    """The error FastAPI reports for a required parameter left out (pydantic's ``missing``, input ``None``)."""
    error: dict[str, Any] = ValidationError.from_exception_data(
        "Field required", [{"type": "missing", "loc": loc, "input": {}}]
    ).errors(include_url=False)[0]
    error["input"] = None
    return error


@dataclass(frozen=True)
class FieldPlan:
    name: str
    """The endpoint's argument."""
    alias: str
    """The name in the request."""
    source: str
    """``path`` or ``query``."""
    field: Any
    """FastAPI's ``ModelField``: its pydantic adapter validates, exactly as FastAPI's solver would call it."""
    required: bool
    default: Any

    def read(self, path: dict[str, Any], query: QueryParams, values: dict[str, Any], errors: list[Any]) -> None:
        raw = (path if self.source == "path" else query).get(self.alias)
        loc = (self.source, self.alias)
        if raw is None:
            if self.required:
                errors.append(missing_error(loc))
            else:
                values[self.name] = deepcopy(self.default)
            return
        value, found = self.field.validate(raw, values, loc=loc)
        if found:
            errors.extend(found)
        else:
            values[self.name] = value


@dataclass(frozen=True)
class ParameterPlan:
    """One route's arguments, in the order FastAPI's solver produces them and their errors: the dependencies
    first (an exception there, such as a 403, ends the request before any parameter is read), then path and
    query parameters."""

    call: Callable[..., Any]
    is_async: bool
    request_name: str | None
    dependencies: tuple[tuple[str | None, Resolver], ...]
    fields: tuple[FieldPlan, ...]

    @classmethod
    def of(cls, dependant: Dependant, resolvers: dict[Callable[..., Any], Resolver]) -> ParameterPlan | None:
        """The plan for a route's dependant, or None where it has anything the plan does not read as FastAPI
        would."""
        call = dependant.call
        if call is None or not _answers_with_a_response(call):
            return None
        if dependant.header_params or dependant.cookie_params or dependant.body_params:
            return None
        special = (
            dependant.websocket_param_name,
            dependant.http_connection_param_name,
            dependant.response_param_name,
            dependant.background_tasks_param_name,
            dependant.security_scopes_param_name,
        )
        if any(name is not None for name in special):
            return None
        dependencies: list[tuple[str | None, Resolver]] = []
        for sub in dependant.dependencies:
            resolver = resolvers.get(sub.call) if sub.call is not None else None
            if resolver is None:
                return None
            dependencies.append((sub.name, resolver))
        fields: list[FieldPlan] = []
        for source, params in (("path", dependant.path_params), ("query", dependant.query_params)):
            for field in params:
                info = field.field_info
                if _takes_many(info.annotation) or _is_model(info.annotation):
                    return None
                if info.validation_alias not in (None, field.alias):
                    return None
                if getattr(info, "validate_default", False) or info.default_factory is not None:
                    return None
                required = info.is_required()
                default = None if required else info.default
                fields.append(FieldPlan(field.name, field.alias, source, field, required, default))
        is_async = inspect.iscoroutinefunction(call)
        return cls(call, is_async, dependant.request_param_name, tuple(dependencies), tuple(fields))

    async def answer(self, request: Request) -> Response:
        values: dict[str, Any] = {}
        for name, resolve in self.dependencies:
            value = await resolve(request)
            if name is not None:
                values[name] = value
        if self.request_name is not None:
            values[self.request_name] = request
        errors: list[Any] = []
        path_params, query = request.path_params, request.query_params
        for field in self.fields:
            field.read(path_params, query, values, errors)
        if errors:
            raise RequestValidationError(errors)
        if self.is_async:
            response: Response = await self.call(**values)
        else:
            response = await run_in_threadpool(self.call, **values)
        return response


def _is_model(annotation: Any) -> bool:
    """A parameter model (FastAPI reads each of its fields from the query)."""
    candidates = typing.get_args(annotation) if typing.get_origin(annotation) in (typing.Union, types.UnionType) else ()
    return any(isinstance(kind, type) and issubclass(kind, BaseModel) for kind in (annotation, *candidates))


def _effective_dependant(route: APIRoute) -> Dependant | None:
    """The dependant FastAPI's own handler would solve for ``route`` here: a router's inclusion can add
    dependencies, and FastAPI builds the handler of each inclusion within a context that says so. Without that
    context to read (another FastAPI), None: the route keeps FastAPI's handler rather than risk skipping a
    dependency."""
    context_var = getattr(fastapi.routing, "_effective_route_context_var", None)
    if context_var is None:
        return None
    context = context_var.get()
    if context is not None and getattr(context, "original_route", None) is route:
        dependant: Dependant | None = getattr(context, "dependant", None)
        return dependant
    return route.dependant


def _answers_with_a_response(call: Callable[..., Any]) -> bool:
    """Whether the endpoint builds its own Response (FastAPI then sends it as it is, with no response model)."""
    try:
        returned = typing.get_type_hints(call).get("return")
    except (NameError, TypeError):
        return False
    return isinstance(returned, type) and issubclass(returned, Response)


class DirectRoute(APIRoute):
    """An ``APIRoute`` whose requests are answered through a :class:`ParameterPlan` where the route allows it.

    Subclasses name the dependencies they resolve directly in :attr:`direct_dependencies`: each dependency
    function mapped to a coroutine that gives the same value from the request alone."""

    direct_dependencies: ClassVar[dict[Callable[..., Any], Resolver]] = {}

    def get_route_handler(self) -> Callable[[Request], Any]:
        solver = super().get_route_handler()
        dependant = _effective_dependant(self)
        plan = ParameterPlan.of(dependant, self.direct_dependencies) if dependant is not None else None
        if plan is None:
            return solver

        async def handler(request: Request) -> Response:
            if getattr(request.app, "dependency_overrides", None):
                response: Response = await solver(request)
                return response
            return await plan.answer(request)

        return handler
