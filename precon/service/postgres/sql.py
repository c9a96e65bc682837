"""Filter expressions as PostgreSQL ``WHERE`` fragments: the SQLite store's compilers, with ``%s`` placeholders.

The semantics are those of :func:`precon.filters.evaluate` (the tests hold both to it): an indexed attribute is a
typed column or a sub-query on ``listing_terms``/``listing_numbers``; a path the index does not hold is tested
by the evaluator itself over the stored documents (in Python, by :class:`~.store.PostgresCatalogueStore`), whose
matching row ids reach SQL as one array parameter. Every value is a bound parameter, never part of the text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from precon import filters
from precon.filters import Compare, Expr
from precon.service.plans import UnitFilterCompiler
from precon.service.schema import IndexedAttribute
from precon.service.sql_filter import FALSE, Fragment, ListingFilterCompiler

PG_FALSE: Fragment = ("false", [])

Fallback = Callable[[Expr], Sequence[int]]
"""The row ids of the listings for which an expression on an unindexed path holds."""


def placeholders(sql: str) -> str:
    """SQLite's ``?`` placeholders as psycopg's ``%s`` (the compilers' fixed SQL holds no other ``?`` or ``%``)."""
    assert "%" not in sql
    return sql.replace("?", "%s")


class PostgresFilterCompiler(ListingFilterCompiler):
    """:class:`ListingFilterCompiler` over the PostgreSQL tables (``listings l``), booleans as SQL booleans."""

    def __init__(self, fallback: Fallback) -> None:
        super().__init__(document_column="l.doc", id_column="l.id")
        self.fallback = fallback

    def compile(self, expr: Expr) -> Fragment:
        fragment = super().compile(expr)
        return PG_FALSE if fragment == FALSE else fragment

    def _compare(self, expr: Compare) -> Fragment:
        # Also reached directly (``!=`` is NOT of ``=``), not only through compile(): SQLite's FALSE is ``0``.
        fragment = super()._compare(expr)
        return PG_FALSE if fragment == FALSE else fragment

    def _equals(self, attribute: IndexedAttribute, value: Any) -> Fragment:
        if attribute.multi:
            return (
                f"{self.id_column} IN (SELECT listing FROM listing_terms WHERE attr = %s AND term = %s)",
                [attribute.path, value],
            )
        return f"coalesce({column(attribute)} = %s, false)", [value]

    def _numeric(self, attribute: IndexedAttribute, op: str, value: float | tuple[float, float]) -> Fragment:
        test = "BETWEEN %s AND %s" if op == "BETWEEN" else f"{op} %s"
        bound = list(value) if isinstance(value, tuple) else [value]
        if attribute.multi:
            return (
                f"{self.id_column} IN (SELECT listing FROM listing_numbers WHERE attr = %s AND num {test})",
                [attribute.path, *bound],
            )
        return f"coalesce({column(attribute)} {test}, false)", bound

    def _fallback(self, expr: Expr) -> Fragment:
        return f"{self.id_column} = ANY(%s)", [list(self.fallback(expr))]


def unit_clause(expr: Expr) -> Fragment:
    """The listings ``l`` with at least one floor plan for which the unit expression holds."""
    sql, params = UnitFilterCompiler().listing_clause(expr)
    return placeholders(sql), params


def column(attribute: IndexedAttribute) -> str:
    """The quoted column of a single-valued attribute (a fixed identifier from the schema, never from a request)."""
    return f'l."{attribute.column}"'


def expression_text(expr: Expr) -> str:
    return filters.to_query(expr)
