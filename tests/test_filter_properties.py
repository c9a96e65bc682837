"""The filterQuery language's properties, drawn by Hypothesis: round trips through the parser and the builder, only
FilterSyntaxError from any text, and the laws of evaluation (tests/test_filters.py: the cases by hand)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from precon.filters import (
    And,
    Compare,
    Expr,
    FilterSyntaxError,
    Match,
    Not,
    Or,
    Range,
    evaluate,
    from_selection,
    parse,
    to_query,
)

# ---------------------------------------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------------------------------------

ATTRS = st.one_of(
    st.sampled_from(
        [
            "type",
            "startPrice",
            "floorPlans.startPrice",
            "floorPlans.floorPlanType",
            "constructionStartedTBD",
            "_geoloc.lat",
            "AND",
            "TO",
            "NOTE",
            "OR.x",
            "my attr",
            'qu"ote',
            "back\\slash",
            "Région",
            "a.",
            "1st",
        ]
    ),
    st.text(min_size=1, max_size=8),
)
VALUES = st.one_of(
    st.sampled_from(
        [
            "Condo",
            "Pre-Construction",
            "Builders/5fH9CC8jgOxPuxqyMk70",
            "AND",
            "OR",
            "NOT",
            "TO",
            "ANDROID",
            "Semi Detached",
            '"',
            "\\",
            '\\"',
            "",
            " ",
            "true",
            ">=",
            "(",
            ")",
            ":",
            "Montréal",
            "L'Atelier & Co",
            "-5",
            "1e+20",
        ]
    ),
    st.text(max_size=12),
)
NUMBERS = st.one_of(
    st.integers(min_value=-(10**25), max_value=10**25),
    st.floats(allow_nan=False, allow_infinity=False),
)
OPS = st.sampled_from(["=", "!=", "<", "<=", ">", ">="])


@st.composite
def ranges(draw: st.DrawFn) -> Range:
    low, high = sorted([draw(NUMBERS), draw(NUMBERS)])
    return Range(draw(ATTRS), low, high)


LEAVES = st.one_of(
    st.builds(Match, ATTRS, VALUES),
    st.builds(Compare, ATTRS, OPS, NUMBERS),
    ranges(),
)
EXPRS: st.SearchStrategy[Expr] = st.recursive(
    LEAVES,
    lambda children: st.one_of(
        st.builds(Not, children),
        st.lists(children, min_size=2, max_size=4).map(lambda xs: And(tuple(xs))),
        st.lists(children, min_size=2, max_size=4).map(lambda xs: Or(tuple(xs))),
    ),
    max_leaves=25,
)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(EXPRS)
def test_round_trip(expr: Expr) -> None:
    text = to_query(expr)
    assert parse(text) == expr
    assert to_query(parse(text)) == text


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(st.text(min_size=1, max_size=6), st.lists(VALUES, max_size=3), max_size=4),
    st.dictionaries(st.text(min_size=1, max_size=6), st.tuples(st.none() | NUMBERS, st.none() | NUMBERS)),
)
def test_from_selection_round_trip(
    facets: dict[str, list[str]], bounds: dict[str, tuple[float | None, float | None]]
) -> None:
    fixed: dict[str, tuple[float | None, float | None]] = {}
    for k, (lo, hi) in bounds.items():
        fixed[k] = (lo, hi) if lo is None or hi is None else (min(lo, hi), max(lo, hi))
    expr = from_selection(facets, fixed)
    assert parse(to_query(expr)) == expr


FILTER_ALPHABET = st.one_of(
    st.sampled_from(list(' \t():"\\<>=!-+.eE0123456789abxyzT')),
    st.sampled_from(["AND", "OR", "NOT", "TO", " AND ", " OR ", "NOT ", " TO ", "type", "a.b"]),
    st.sampled_from([">=", "!=", '\\"']),
    st.characters(),
)


@settings(max_examples=1000, deadline=None)
@given(st.lists(FILTER_ALPHABET, max_size=30).map("".join))
def test_random_text_only_raises_filter_syntax_error(text: str) -> None:
    try:
        expr = parse(text)
    except FilterSyntaxError as err:
        assert 0 <= err.position <= len(text)
        assert str(err).startswith("filterQuery: ")
        return
    if expr is not None:
        assert parse(to_query(expr)) == expr


@settings(max_examples=300, deadline=None)
@given(EXPRS, st.integers(min_value=0, max_value=200), st.text(max_size=3))
def test_mutated_queries_only_raise_filter_syntax_error(expr: Expr, cut: int, insert: str) -> None:
    text = to_query(expr)
    cut = min(cut, len(text))
    mutated = text[:cut] + insert + text[cut + 1 :]
    try:
        parse(mutated)
    except FilterSyntaxError as err:
        assert 0 <= err.position <= len(mutated)


RECORD_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.floats(allow_nan=False, allow_infinity=False, min_value=-5, max_value=5),
    st.sampled_from(["Condo", "condo", "5", "", "true", "-1.5"]),
)
RECORDS = st.fixed_dictionaries(
    {},
    optional={
        "type": RECORD_VALUES | st.lists(RECORD_VALUES, max_size=3),
        "startPrice": RECORD_VALUES,
        "floorPlans": st.lists(
            st.fixed_dictionaries({}, optional={"startPrice": RECORD_VALUES, "floorPlanType": RECORD_VALUES}),
            max_size=3,
        ),
    },
)
SMALL_EXPRS: st.SearchStrategy[Expr] = st.recursive(
    st.one_of(
        st.builds(
            Match,
            st.sampled_from(["type", "startPrice", "floorPlans.startPrice", "floorPlans.floorPlanType"]),
            st.sampled_from(["Condo", "5", "5.0", "true", "0", "-1.5", ""]),
        ),
        st.builds(
            Compare,
            st.sampled_from(["type", "startPrice", "floorPlans.startPrice"]),
            OPS,
            st.integers(-6, 6),
        ),
    ),
    lambda children: st.one_of(
        st.builds(Not, children),
        st.lists(children, min_size=2, max_size=3).map(lambda xs: And(tuple(xs))),
        st.lists(children, min_size=2, max_size=3).map(lambda xs: Or(tuple(xs))),
    ),
    max_leaves=6,
)


@settings(max_examples=300, deadline=None)
@given(SMALL_EXPRS, RECORDS)
def test_evaluation_laws(expr: Expr, record: dict[str, Any]) -> None:
    result = evaluate(expr, record)
    assert evaluate(Not(expr), record) is (not result)
    assert evaluate(parse(to_query(expr)), record) is result
    if isinstance(expr, Compare) and expr.op == "!=":
        assert result is (not evaluate(Compare(expr.attr, "=", expr.value), record))


def test_a_parsed_expression_is_kept_and_a_bad_one_fails_every_time() -> None:
    text = 'minBeds >= 2 AND sellingStatus:"Selling Now"'
    assert parse(text) is parse(text)
    assert parse(text) == And((Compare("minBeds", ">=", 2), Match("sellingStatus", "Selling Now")))
    for _ in range(2):
        with pytest.raises(FilterSyntaxError):
            parse("minBeds >= ")
