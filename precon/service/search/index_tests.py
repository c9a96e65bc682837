"""Which tests of a ``filterQuery`` the column index (:mod:`~precon.service.search.columns`) answers itself, and
which it leaves to its fallback (:meth:`~precon.service.stores.sqlite.reads.SQLiteReads._unindexed`: the floor
plans' index and the values rows hold, :func:`~precon.service.search.held_values.answered_by`). What a search
needs besides the index is known before it runs: whether it may run on the event loop depends on it."""

from __future__ import annotations

from precon.filters import And, Compare, Expr, Not, Or
from precon.schema import LISTING_ATTRIBUTES
from precon.service.search.sql_filter import canonical_path


def index_answers(expr: Expr) -> bool:
    """Whether the column index answers ``expr`` alone, no test of it left to the fallback: every attribute it tests
    is one the index holds (its values of another kind too: :mod:`~precon.service.search.attribute_rows`)."""
    if isinstance(expr, And | Or):
        return all(index_answers(item) for item in expr.items)
    if isinstance(expr, Not):
        return index_answers(expr.expr)
    return LISTING_ATTRIBUTES.get(canonical_path(expr.attr)) is not None


def left_to_fallback(expr: Expr) -> list[Expr]:
    """The tests of ``expr`` that the column index leaves to its fallback, as it asks them (``a != v`` as
    ``a = v``, which it negates)."""
    if isinstance(expr, And | Or):
        return [test for item in expr.items for test in left_to_fallback(item)]
    if isinstance(expr, Not):
        return left_to_fallback(expr.expr)
    if isinstance(expr, Compare) and expr.op == "!=":
        expr = Compare(expr.attr, "=", expr.value)
    return [] if index_answers(expr) else [expr]
