"""Tests for the filterQuery language: parser, evaluator and builder (tests/test_filter_properties.py: the
properties and round trips, drawn by Hypothesis)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from precon.filters import (
    MAX_DEPTH,
    MAX_LENGTH,
    And,
    Compare,
    Expr,
    FilterSyntaxError,
    Match,
    Not,
    Or,
    Range,
    and_,
    any_of,
    attributes,
    between,
    compare,
    compile_predicate,
    eq,
    evaluate,
    from_selection,
    not_,
    or_,
    parse,
    to_query,
)

# ---------------------------------------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------------------------------------

CHAIN = 'startPrice >= 400000  AND startPrice <= 900000 AND type:"Condo" OR type:"Townhouse" AND minBeds >= 1'

PARSE_CASES: list[tuple[str, Expr]] = [
    (
        CHAIN,
        Or(
            (
                And(
                    (
                        Compare("startPrice", ">=", 400000),
                        Compare("startPrice", "<=", 900000),
                        Match("type", "Condo"),
                    )
                ),
                And((Match("type", "Townhouse"), Compare("minBeds", ">=", 1))),
            )
        ),
    ),
    ("constructionStatus:Pre-Construction", Match("constructionStatus", "Pre-Construction")),
    ("constructionStartedTBD:true", Match("constructionStartedTBD", "true")),
    ("floorPlans.startPrice > 1000", Compare("floorPlans.startPrice", ">", 1000)),
    ("floorPlans.startPrice>1000", Compare("floorPlans.startPrice", ">", 1000)),
    ("startPrice:400000 TO 900000", Range("startPrice", 400000, 900000)),
    ('builders:"Builders/5fH9CC8jgOxPuxqyMk70"', Match("builders", "Builders/5fH9CC8jgOxPuxqyMk70")),
    ("builders:Builders/5fH9CC8jgOxPuxqyMk70", Match("builders", "Builders/5fH9CC8jgOxPuxqyMk70")),
    ("NOT type:Condo", Not(Match("type", "Condo"))),
    ("NOT(type:Condo)", Not(Match("type", "Condo"))),
    ("NOT startPrice < 5", Not(Compare("startPrice", "<", 5))),
    (
        "a:1 AND (b:2 OR (c:3 AND NOT (d:4 OR e:5)))",
        And(
            (
                Match("a", "1"),
                Or(
                    (
                        Match("b", "2"),
                        And((Match("c", "3"), Not(Or((Match("d", "4"), Match("e", "5")))))),
                    )
                ),
            )
        ),
    ),
    ("((a:1))", Match("a", "1")),
    (
        "(a:1 AND b:2) AND (c:3 AND d:4)",
        And((Match("a", "1"), Match("b", "2"), Match("c", "3"), Match("d", "4"))),
    ),
    ("a:1 OR (b:2 OR c:3)", Or((Match("a", "1"), Match("b", "2"), Match("c", "3")))),
    ("NOT a:1 AND b:2", And((Not(Match("a", "1")), Match("b", "2")))),
    ('type:"Semi Detached"', Match("type", "Semi Detached")),
    ('name:"say \\"hi\\" \\\\ bye"', Match("name", 'say "hi" \\ bye')),
    ('name:"a\\nb"', Match("name", "a\\nb")),  # unknown escapes are kept as written
    ('name:"AND"', Match("name", "AND")),
    ('name:"x:y (z)"', Match("name", "x:y (z)")),
    ('name:""', Match("name", "")),
    ("name:L'Atelier&Co+1", Match("name", "L'Atelier&Co+1")),
    ("city:Montréal", Match("city", "Montréal")),
    ("type:ANDROID", Match("type", "ANDROID")),
    ("code:a_b.c-d", Match("code", "a_b.c-d")),
    ("x:a>b", Match("x", "a>b")),
    ('"my attr":x', Match("my attr", "x")),
    ('"weird \\"attr\\"" >= 2', Compare('weird "attr"', ">=", 2)),
    ("NOTE:x", Match("NOTE", "x")),
    ("and:x", Match("and", "x")),
    ("_geoloc.lat < 43.7", Compare("_geoloc.lat", "<", 43.7)),
    ("p >= -5", Compare("p", ">=", -5)),
    ("p>=-5", Compare("p", ">=", -5)),
    ("p = +5", Compare("p", "=", 5)),
    ("p != 5", Compare("p", "!=", 5)),
    ("p<=-0.25", Compare("p", "<=", -0.25)),
    ("p < .5", Compare("p", "<", 0.5)),
    ("p > 1.5e3", Compare("p", ">", 1500.0)),
    ("p > 1e+20", Compare("p", ">", 1e20)),
    ("p > -2.5E-3", Compare("p", ">", -0.0025)),
    ("p:-10 TO -2.5", Range("p", -10, -2.5)),
    ("p:5 TO 5", Range("p", 5, 5)),
    ("  a:1   OR\tb:2\n", Or((Match("a", "1"), Match("b", "2")))),
    ("type: Condo", Match("type", "Condo")),
]


@pytest.mark.parametrize(("text", "expected"), PARSE_CASES, ids=[c[0][:40] for c in PARSE_CASES])
def test_parse(text: str, expected: Expr) -> None:
    assert parse(text) == expected


@pytest.mark.parametrize(("text", "expected"), PARSE_CASES, ids=[c[0][:40] for c in PARSE_CASES])
def test_canonical_form_parses_back(text: str, expected: Expr) -> None:
    canonical = to_query(parse(text))
    assert parse(canonical) == expected
    assert to_query(parse(canonical)) == canonical


@pytest.mark.parametrize("text", [None, "", "   ", "\t\n"])
def test_parse_empty(text: str | None) -> None:
    assert parse(text) is None


def test_integral_numbers_stay_exact() -> None:
    big = 10**30 + 1
    assert parse(f"p > {big}") == Compare("p", ">", big)
    result = parse(f"p > {big}")
    assert isinstance(result, Compare)
    assert result.value == big
    assert isinstance(result.value, int)


# ---------------------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------------------

ERROR_CASES: list[tuple[str, int, str]] = [
    ("type:", 5, "expected a value after ':' at position 5"),
    ("type:   ", 8, "expected a value after ':'"),
    ("(type:Condo", 11, "unexpected end of input at position 11"),
    ("type:Condo )", 11, "unexpected ')' at position 11"),
    ("a >", 3, "expected a number after '>' at position 3"),
    ('type:"Condo', 5, "unterminated quoted value starting at position 5"),
    ('type:Condo AND "na', 15, "unterminated quoted attribute name starting at position 15"),
    ("AND type:x", 0, "unexpected 'AND' at position 0"),
    ("startPrice:900 TO 100", 11, "range low 900 is above high 100 at position 11"),
    ("(a:900 TO 100)", 3, "range low 900 is above high 100 at position 3"),
    ("price >= abc", 9, "expected a number after '>=' at position 9, found 'abc'"),
    ("price >= 5abc", 9, "expected a number after '>=' at position 9"),
    ("type:AND", 5, "expected a value after ':' at position 5, found 'AND'"),
    ("type:x AND", 10, "unexpected end of input at position 10"),
    ("type:x OR OR y:z", 10, "unexpected 'OR' at position 10"),
    ("a:b c:d", 4, "unexpected 'c' at position 4"),
    ("a:b ANDx:y", 4, "unexpected 'ANDx' at position 4"),
    ("NOT NOT a:b", 4, "unexpected 'NOT' at position 4"),
    ("NOT", 3, "unexpected end of input at position 3"),
    ("price ! = 5", 6, "unexpected '!' at position 6"),
    ("price == 5", 7, "expected a number after '=' at position 7"),
    ("price", 5, "unexpected end of input at position 5"),
    ("x:1 TO abc", 7, "expected a number after 'TO' at position 7"),
    ("x:1 TO", 6, "expected a number after 'TO' at position 6"),
    ("x:abc TO 5", 2, "range low must be a number"),
    ('x:"1" TO 5', 2, "range low must be a number"),
    ("p > 1e999", 4, "out of range at position 4"),
    ('"":x', 0, "empty attribute name at position 0"),
    ("()", 1, "unexpected ')' at position 1"),
    (")", 0, "unexpected ')' at position 0"),
    ("a:b)", 3, "unexpected ')' at position 3"),
    (":x", 0, "unexpected ':' at position 0"),
    ("5 > p", 0, "unexpected '5' at position 0"),
    ("a:(b)", 2, "expected a value after ':' at position 2"),
    ("a:b TO 5", 2, "range low must be a number"),
]


@pytest.mark.parametrize(("text", "position", "fragment"), ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_parse_errors(text: str, position: int, fragment: str) -> None:
    with pytest.raises(FilterSyntaxError) as info:
        parse(text)
    err = info.value
    assert err.position == position
    assert fragment in err.message
    assert str(err) == f"filterQuery: {err.message}"
    assert f"position {position}" in str(err)
    assert isinstance(err, ValueError)


def test_error_is_not_a_lark_error() -> None:
    with pytest.raises(FilterSyntaxError) as info:
        parse("a:b )")
    assert type(info.value) is FilterSyntaxError
    assert info.value.__cause__ is None


def test_too_long() -> None:
    ok = "a:" + "x" * (MAX_LENGTH - 2)
    assert parse(ok) == Match("a", "x" * (MAX_LENGTH - 2))
    with pytest.raises(FilterSyntaxError) as info:
        parse(ok + "x")
    assert info.value.position == MAX_LENGTH
    assert "4096" in str(info.value)


def test_nesting_limit() -> None:
    assert parse("(" * MAX_DEPTH + "a:b" + ")" * MAX_DEPTH) == Match("a", "b")
    text = "(" * (MAX_DEPTH + 1) + "a:b" + ")" * (MAX_DEPTH + 1)
    with pytest.raises(FilterSyntaxError) as info:
        parse(text)
    assert info.value.position == MAX_DEPTH
    assert "nested deeper than 64" in str(info.value)
    # Far deeper than the recursion limit still fails cleanly.
    deep = "(" * 2000 + "a:b" + ")" * 2000
    with pytest.raises(FilterSyntaxError):
        parse(deep)
    with pytest.raises(FilterSyntaxError):
        parse("(" * 4000)


# ---------------------------------------------------------------------------------------------------------
# Evaluation
# ---------------------------------------------------------------------------------------------------------

CONDO: dict[str, Any] = {
    "listingId": "ZXGJ8B",
    "type": ["Condo", "Townhouse"],
    "constructionStatus": "Pre-construction",
    "constructionStartedTBD": True,
    "startPrice": 650000,
    "endPrice": None,
    "squareFeet": "750",
    "minBeds": 1,
    "builders": ["Builders/5fH9CC8jgOxPuxqyMk70"],
    "floorPlans": [
        {"name": "A", "startPrice": 500000, "floorPlanType": ["1 Bed", "Den"], "baths": "1.5"},
        {"name": "B", "startPrice": 1200000, "floorPlanType": "2 Bed"},
        {"name": "C", "startPrice": None},
    ],
    "address": {"city": "Toronto", "geo": {"lat": 43.65}},
    "tags": [],
}
HOUSE: dict[str, Any] = {
    "listingId": "AB12CD",
    "type": "Detached",
    "constructionStatus": "Pre Construction",
    "constructionStartedTBD": False,
    "startPrice": "",
    "squareFeet": "n/a",
    "minBeds": 3,
    "floorPlans": [],
}

EVAL_CASES: list[tuple[str, dict[str, Any], bool]] = [
    # any-element arrays, case-insensitivity
    ("type:Condo", CONDO, True),
    ("type:condo", CONDO, True),
    ("type:TOWNHOUSE", CONDO, True),
    ("type:Detached", CONDO, False),
    ("type:Detached", HOUSE, True),
    ("constructionStatus:Pre-Construction", CONDO, True),
    ("constructionStatus:Pre-Construction", HOUSE, True),  # spaces, hyphens and underscores compare alike
    ("constructionStatus:PreConstruction", HOUSE, False),
    ("constructionStatus:Pre--construction_", CONDO, True),
    ('constructionStatus:"Pre Construction"', HOUSE, True),
    ('builders:"Builders/5fH9CC8jgOxPuxqyMk70"', CONDO, True),
    ("builders:Builders/other", CONDO, False),
    ("tags:x", CONDO, False),
    # nested floorPlans paths
    ("floorPlans.startPrice > 1000000", CONDO, True),
    ("floorPlans.startPrice < 400000", CONDO, False),
    ("floorPlans.startPrice:400000 TO 600000", CONDO, True),
    ("floorPlans.startPrice:600000 TO 1000000", CONDO, False),
    ("floorPlans.floorPlanType:den", CONDO, True),
    ('floorPlans.floorPlanType:"2 bed"', CONDO, True),
    ('floorPlans.floorPlanType:"3 bed"', CONDO, False),
    ("floorPlans.baths >= 1.5", CONDO, True),
    ("floorPlans.startPrice > 0", HOUSE, False),
    ("address.city:toronto", CONDO, True),
    ("address.geo.lat > 43", CONDO, True),
    ("address.geo.lat > 43", HOUSE, False),
    ("address.city.name:x", CONDO, False),
    # numbers as text, "" is no value
    ("squareFeet >= 700", CONDO, True),
    ("squareFeet = 750", CONDO, True),
    ("squareFeet:700 TO 800", CONDO, True),
    ("squareFeet:750", CONDO, True),
    ("squareFeet:750.0", CONDO, False),  # a string value is matched as a string
    ("squareFeet > 0", HOUSE, False),
    ("startPrice >= 0", HOUSE, False),
    ("startPrice <= 0", HOUSE, False),
    ("startPrice:0 TO 1000000000", HOUSE, False),
    ("startPrice:650000", CONDO, True),
    ("startPrice:650000.0", CONDO, True),  # a numeric value is matched as a number
    ("startPrice:6.5e5", CONDO, True),
    ("startPrice:abc", CONDO, False),
    ("startPrice = 650000", CONDO, True),
    ("startPrice:650000 TO 650000", CONDO, True),
    ("startPrice > 650000", CONDO, False),
    ("minBeds:1", CONDO, True),
    # booleans
    ("constructionStartedTBD:true", CONDO, True),
    ("constructionStartedTBD:TRUE", CONDO, True),
    ("constructionStartedTBD:1", CONDO, True),
    ("constructionStartedTBD:false", CONDO, False),
    ("constructionStartedTBD:false", HOUSE, True),
    ("constructionStartedTBD:0", HOUSE, True),
    ("constructionStartedTBD:yes", CONDO, False),
    ("constructionStartedTBD > 0", CONDO, False),  # a bool is not a number
    # != is NOT (attr = v)
    ("startPrice != 650000", CONDO, False),
    ("startPrice != 1", CONDO, True),
    ("startPrice != 1", HOUSE, True),
    ("missing != 1", CONDO, True),
    ("floorPlans.startPrice != 500000", CONDO, False),  # one plan equals it
    ("floorPlans.startPrice != 1", CONDO, True),
    # missing attributes / None
    ("missing:x", CONDO, False),
    ("missing > 0", CONDO, False),
    ("missing:0 TO 1", CONDO, False),
    ("endPrice >= 0", CONDO, False),
    ("endPrice:null", CONDO, False),
    ("NOT missing:x", CONDO, True),
    # boolean structure
    (CHAIN, CONDO, True),
    (CHAIN, HOUSE, False),
    ("type:Detached OR minBeds >= 1 AND type:Condo", CONDO, True),
    ("(type:Detached OR minBeds >= 1) AND type:Detached", CONDO, False),
    ("NOT (type:Condo AND minBeds >= 2)", CONDO, True),
    ("NOT type:Condo", CONDO, False),
    ("type:Condo AND type:Townhouse AND minBeds:1", CONDO, True),
]


@pytest.mark.parametrize(
    ("text", "record", "expected"),
    EVAL_CASES,
    ids=[f"{c[0][:40]}-{c[1]['listingId']}" for c in EVAL_CASES],
)
def test_evaluate(text: str, record: dict[str, Any], expected: bool) -> None:
    expr = parse(text)
    assert evaluate(expr, record) is expected
    assert compile_predicate(expr)(record) is expected


def test_evaluate_none_matches_everything() -> None:
    assert evaluate(None, {}) is True
    assert evaluate(parse("  "), CONDO) is True


def test_evaluate_odd_values() -> None:
    record = {"a": [None, {"x": 1}, ["Condo"]], "n": float("nan"), "s": "inf", "t": (1, 2)}
    assert not evaluate(parse("a:Condo"), record)  # nested lists are not flattened twice
    assert not evaluate(parse("n >= 0"), record)
    assert not evaluate(parse("s > 0"), record)  # non-finite text is no number
    assert evaluate(parse("t = 2"), record)


# ---------------------------------------------------------------------------------------------------------
# Builder
# ---------------------------------------------------------------------------------------------------------


def test_builders() -> None:
    assert eq("type", "Condo") == Match("type", "Condo")
    assert eq("tbd", True) == Match("tbd", "true")
    assert eq("tbd", False) == Match("tbd", "false")
    assert eq("beds", 2) == Match("beds", "2")
    assert eq("price", 2.5) == Match("price", "2.5")
    assert any_of("type", []) is None
    assert any_of("type", ["Condo"]) == Match("type", "Condo")
    assert any_of("type", ["Condo", "Townhouse"]) == Or((Match("type", "Condo"), Match("type", "Townhouse")))
    assert between("p") is None
    assert between("p", 1, 2) == Range("p", 1, 2)
    assert between("p", low=1) == Compare("p", ">=", 1)
    assert between("p", high=2) == Compare("p", "<=", 2)
    assert compare("p", "!=", 3) == Compare("p", "!=", 3)
    a, b, c = Match("a", "1"), Match("b", "2"), Match("c", "3")
    assert and_() is None
    assert and_(None, a, None) == a
    assert and_(a, and_(b, c)) == And((a, b, c))
    assert or_(or_(a, b), None, c) == Or((a, b, c))
    assert not_(a) == Not(a)
    assert not_(not_(a)) == a
    with pytest.raises(ValueError):
        not_(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        between("p", 3, 1)
    with pytest.raises(ValueError):
        compare("p", "=", math.inf)
    with pytest.raises(ValueError):
        compare("p", "~", 1)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        And((a,))
    assert attributes(parse(CHAIN)) == {"startPrice", "type", "minBeds"}
    assert attributes(None) == set()


def test_ast_is_normalised_and_hashable() -> None:
    a, b, c = Match("a", "1"), Match("b", "2"), Match("c", "3")
    assert And((a, And((b, c)))) == And((a, b, c))
    assert Or((Or((a, b)), c)).items == (a, b, c)
    assert len({And((a, b)), And((a, b)), Or((a, b))}) == 2
    assert Compare("p", ">", 1) == Compare("p", ">", 1.0)


def test_to_query_rendering() -> None:
    a, b, c = Match("a", "1"), Match("b", "2"), Match("c", "3")
    assert to_query(None) == ""
    assert to_query(And((a, Or((b, c))))) == "a:1 AND (b:2 OR c:3)"
    assert to_query(Or((a, And((b, c))))) == "a:1 OR b:2 AND c:3"
    assert to_query(Not(And((a, b)))) == "NOT (a:1 AND b:2)"
    assert to_query(Not(Not(a))) == "NOT (NOT a:1)"
    assert to_query(Match("type", "Semi Detached")) == 'type:"Semi Detached"'
    assert to_query(Match("type", "AND")) == 'type:"AND"'
    assert to_query(Match("type", 'say "hi" \\')) == 'type:"say \\"hi\\" \\\\"'
    assert to_query(Match("my attr", "x")) == '"my attr":x'
    assert to_query(Match("TO", "x")) == '"TO":x'
    assert to_query(Compare("p", ">", 1e20)) == "p > 1e+20"
    assert to_query(Range("p", -1.5, 10**20)) == "p:-1.5 TO 100000000000000000000"
    assert to_query(eq("tbd", True)) == "tbd:true"


def test_from_selection() -> None:
    expr = from_selection(
        facets={"type": ["Condo", "Townhouse"], "builders": ["Builders/x"], "empty": [], "tbd": [True]},
        ranges={"startPrice": (400000, 900000), "minBeds": (1, None), "unused": (None, None)},
    )
    assert expr == And(
        (
            Match("builders", "Builders/x"),
            Compare("minBeds", ">=", 1),
            Range("startPrice", 400000, 900000),
            Match("tbd", "true"),
            Or((Match("type", "Condo"), Match("type", "Townhouse"))),
        )
    )
    assert to_query(expr) == (
        "builders:Builders/x AND minBeds >= 1 AND startPrice:400000 TO 900000 AND tbd:true "
        "AND (type:Condo OR type:Townhouse)"
    )
    assert from_selection() is None
    assert from_selection(facets={"type": ["Condo"]}) == Match("type", "Condo")
    both = from_selection(facets={"p": ["x"]}, ranges={"p": (1, 2)})
    assert both == And((Match("p", "x"), Range("p", 1, 2)))
