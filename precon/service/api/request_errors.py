"""A request that breaks its operation's declared parameters or body, said as the API's 400: which parameter,
what is wrong with it, and what was sent (FastAPI's own answer would be a 422 in pydantic's words)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from precon.client.models import PROVINCES, VERSIONS
from precon.service.errors import ApiError, bad_request, blank_profile_id

PATTERN_HELP = {
    "nearby": "must be 'latitude,longitude' in decimal degrees",
    "facet": "must name one facetable attribute",
}
"""What a parameter's pattern means, where it is more than "must not be blank"."""

MAX_SHOWN = 80


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 1] + "…"


SPELLED_AS = {"perpage": "perPage", "product_Id": "product_id"}
"""The parameter a misspelling the production service accepts stands for: an error names the parameter."""


def _where(loc: Sequence[Any]) -> tuple[str, str]:
    """(where, name): ``("query", "page")``, ``("body", "targetUrl")``; the body itself is ``("body", "")``."""
    where = str(loc[0]) if loc else "body"
    name = ".".join(str(part) for part in loc[1:])
    return where, SPELLED_AS.get(name, name) if where == "query" else name


def _reason(error: dict[str, Any], name: str) -> str:
    kind = error.get("type", "")
    ctx = error.get("ctx") or {}
    if kind == "missing":
        return "is required"
    if kind in ("int_parsing", "int_from_float", "int_type"):
        return "must be a whole number"
    if kind in ("float_parsing", "float_type", "finite_number"):
        return "must be a number"
    if kind == "greater_than_equal":
        return f"must be at least {ctx.get('ge')}"
    if kind == "less_than_equal":
        return f"must be at most {ctx.get('le')}"
    if kind in ("enum", "literal_error"):
        return f"must be one of {ctx.get('expected', '')}".replace("'", "")
    if kind == "string_pattern_mismatch":
        return PATTERN_HELP.get(name, "must not be blank")
    if kind in ("string_type", "str_type"):
        return "must be a string"
    if kind == "value_error":
        return str(error.get("msg", "")).removeprefix("Value error, ")
    return str(error.get("msg", "is not valid")).lower()


def _message(error: dict[str, Any]) -> str:
    where, name = _where(error.get("loc", ()))
    kind = error.get("type", "")
    value = error.get("input")
    if kind == "json_invalid":
        return "the request body is not valid JSON"
    if where == "body" and not name:
        if kind == "missing":
            return "a JSON request body is required"
        return "the request body must be a JSON object"
    if where == "path" and name == "version":
        return f"unknown API version {_shown(value)}; use one of {', '.join(VERSIONS)}"
    if where == "path" and name == "province":
        return f"unknown province {_shown(value)}; use one of {', '.join(('all', *PROVINCES))}"
    if kind == "string_too_long" and isinstance(value, str):
        return (
            f"{name} is {len(value)} characters long; at most {(error.get('ctx') or {}).get('max_length')} are allowed"
        )
    text = f"{name} {_reason(error, name)}"
    if kind != "missing" and value is not None and not isinstance(value, dict | list):
        text += f", got {_shown(value)}"
    return text


def request_error(errors: Sequence[Any], path: str) -> ApiError:
    """The 400 for these validation errors of a request to ``path``."""
    first = [dict(error) for error in errors]
    if path.rstrip("/").endswith("/profile") and any(tuple(e.get("loc", ())) == ("query", "id") for e in first):
        return blank_profile_id()  # the production service's own answer for a profile without an id
    return bad_request("; ".join(dict.fromkeys(_message(error) for error in first)))
