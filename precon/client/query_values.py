"""How the client writes a parameter's value into a query string, as the production service reads it: lists
comma-joined, flags ``true``/``false``, filters in their syntax, a centre as ``latitude,longitude``."""

from __future__ import annotations

from collections.abc import Iterable

from precon import filters

Filter = filters.Expr | str | None


def csv_value(values: str | Iterable[str] | None) -> str | None:
    if values is None:
        return None
    if isinstance(values, str):
        return values
    joined = ",".join(v for v in values if v)
    return joined or None


def flag_value(value: bool | None) -> str | None:
    return None if value is None else ("true" if value else "false")


def filter_value(value: Filter) -> str | None:
    if value is None or isinstance(value, str):
        return value or None
    return filters.to_query(value)


def nearby_value(value: tuple[float, float] | str | None) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return f"{value[0]},{value[1]}"
