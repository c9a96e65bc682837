"""The ``filterQuery`` language: parser, reference evaluator and query builder.

The language is Algolia's filter syntax as docs/api.md settles it::

    type:Condo                          match (case-insensitive; any element of an array attribute)
    builders:"Builders/5fH9CC8jgOxPuxqyMk70"   quoted value; ``\\"`` and ``\\\\`` escape inside quotes
    startPrice >= 400000                comparison: = != > >= < <=, spaces optional
    startPrice:400000 TO 900000         inclusive numeric range
    a:x AND (b:y OR NOT c:z)            AND binds tighter than OR; NOT applies to the next term

Keywords (``AND``, ``OR``, ``NOT``, ``TO``) are upper-case. Attribute names are identifiers with dotted nested
paths (``floorPlans.startPrice``), or a quoted name (``"my attr":x``). An unquoted value is any run of
characters other than whitespace, parentheses, ``:`` and ``"`` that is not a bare keyword.

Public API:

* AST: :class:`Match`, :class:`Range`, :class:`Compare`, :class:`Not`, :class:`And`, :class:`Or`, ``Expr``.
* :func:`parse` text -> ``Expr | None`` (raises :class:`FilterSyntaxError`, never a lark exception).
* :func:`compile_predicate` / :func:`evaluate`: the reference semantics over plain ``dict`` records;
  :func:`value_test`: the same test of one value (what an index of distinct values runs).
* :func:`to_query` and the builders :func:`eq`, :func:`any_of`, :func:`between`, :func:`compare`,
  :func:`and_`, :func:`or_`, :func:`not_`, :func:`from_selection`.
* :func:`attributes`: the attribute paths an expression uses.
* :func:`plan_matches`, :func:`matching_units`: one floor plan (and its units) against a ``unitFilter``.
"""

from __future__ import annotations

from precon.filters.evaluation import Predicate, compile_predicate, evaluate, fold_text, value_test
from precon.filters.expressions import (
    MAX_DEPTH,
    MAX_LENGTH,
    UNIT_FIELDS,
    And,
    Compare,
    CompareOp,
    Expr,
    FilterSyntaxError,
    Match,
    Not,
    Or,
    Range,
)
from precon.filters.parsing import parse
from precon.filters.plans import (
    UNIT_PREFIX,
    matching_units,
    names_units,
    plan_and_units,
    plan_matches,
    unit_rows,
)
from precon.filters.rendering import (
    and_,
    any_of,
    attributes,
    between,
    compare,
    eq,
    from_selection,
    not_,
    numeric_bounds,
    or_,
    to_query,
)

__all__ = [
    "MAX_DEPTH",
    "MAX_LENGTH",
    "UNIT_FIELDS",
    "UNIT_PREFIX",
    "And",
    "Compare",
    "CompareOp",
    "Expr",
    "FilterSyntaxError",
    "Match",
    "Not",
    "Or",
    "Predicate",
    "Range",
    "and_",
    "any_of",
    "attributes",
    "between",
    "compare",
    "compile_predicate",
    "eq",
    "evaluate",
    "fold_text",
    "from_selection",
    "matching_units",
    "names_units",
    "not_",
    "numeric_bounds",
    "or_",
    "parse",
    "plan_and_units",
    "plan_matches",
    "to_query",
    "unit_rows",
    "value_test",
]
