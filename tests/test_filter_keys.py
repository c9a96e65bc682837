"""The filters SQL applies to stored documents travel as keys (``precon_match(doc, key)``), compiled once from the
request's parsed filter, and are forgotten only once long unused."""

from __future__ import annotations

import pytest

from precon import filters
from precon.service.search import sql_filter
from precon.service.search.sql_filter import FilterKeys


def test_a_filter_has_one_key_and_its_predicate_is_the_evaluators() -> None:
    keys = FilterKeys()
    expr = filters.parse("developer.name:Acme AND floorPlans.beds >= 2")
    assert expr is not None
    key = keys.key(expr)
    assert keys.key(filters.parse("developer.name:Acme AND floorPlans.beds >= 2")) == key  # type: ignore[arg-type]
    assert keys.key(filters.parse("developer.name:Other")) != key  # type: ignore[arg-type]
    document = {"developer": {"name": "acme"}, "floorPlans": [{"beds": 1}, {"beds": 3}]}
    assert keys.predicate(key)(document) == filters.evaluate(expr, document) is True


def test_an_unknown_key_is_an_error_not_a_match() -> None:
    with pytest.raises(LookupError):
        FilterKeys().predicate(12345)


def test_filters_long_unused_are_forgotten_past_the_most(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [1000.0]
    monkeypatch.setattr(sql_filter.time, "monotonic", lambda: clock[0])
    keys = FilterKeys()
    keys.MOST = 3
    old = [keys.key(filters.parse(f"a:{n}")) for n in range(3)]  # type: ignore[arg-type]
    clock[0] += keys.KEEP_S / 2
    kept = keys.key(filters.parse("a:0"))  # type: ignore[arg-type]  # used again: kept
    clock[0] += keys.KEEP_S / 2 + 1
    keys.key(filters.parse("a:new"))  # type: ignore[arg-type]
    assert kept == old[0] and keys.predicate(kept)({"a": "0"})
    for forgotten in old[1:]:
        with pytest.raises(LookupError):
            keys.predicate(forgotten)
