"""What every router shares: operation registration, the service dependency, shaping and facet names."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request

from precon.service.calls import Call, Service
from precon.service.errors import bad_request
from precon.service.schema import ATTRIBUTE_ALIASES, DEFAULT_FACETS, LISTING_ATTRIBUTES
from precon.service.shaping import ListingShaper

API = "/{version}/{province}/"
Q = Query  # documented parameters are declared as text; the service reads and validates them itself
UNIT_FILTER_HELP = "(ours) filterQuery syntax over one floor plan: listings with a plan for which it all holds"


async def get_service(request: Request) -> Service:
    """The application's service (async, so that resolving it costs no trip to a worker thread)."""
    service: Service = request.app.state.service
    return service


ServiceDep = Annotated[Service, Depends(get_service)]


def operation(
    router: APIRouter,
    name: str,
    method: str,
    *,
    route_name: str | None = None,
    openapi_extra: dict[str, Any] | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Registers an operation under every version and province, with and without a trailing slash."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        router.add_api_route(API + name, fn, methods=[method], name=route_name or name, openapi_extra=openapi_extra)
        router.add_api_route(API + name + "/", fn, methods=[method], include_in_schema=False)
        return fn

    return register


def requested_shape(call: Call) -> ListingShaper:
    """How this call's listings are to be shaped: its version, ``retrieveAttributes`` and ``referrences``."""
    return ListingShaper(
        version=call.version,
        store=call.store,
        media=call.media,
        retrieve=call.params.names("retrieveAttributes"),
        references=call.params.names("referrences"),
    )


def facet_names(call: Call, names: list[str]) -> tuple[str, ...]:
    """The facets asked for, validated; ``*`` is every facetable attribute."""
    chosen: list[str] = []
    for name in names:
        if name == "*":
            chosen += DEFAULT_FACETS
        elif ATTRIBUTE_ALIASES.get(name, name) in LISTING_ATTRIBUTES:
            chosen.append(name)
        else:
            raise bad_request(
                f"facets: {name!r} is not a facetable attribute; use '*' or any of "
                f"{', '.join(sorted(LISTING_ATTRIBUTES))}"
            )
    return tuple(dict.fromkeys(chosen))
