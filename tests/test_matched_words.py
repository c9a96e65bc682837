"""Where a listing matched the search words, read from the service's highlights: every shape a service may send."""

from __future__ import annotations

from typing import Any

import pytest

from precon.dashboard.matched_words import MatchedField, matched_fields, matched_summary


def entry(value: str, level: str = "full", words: list[str] | None = None) -> dict[str, Any]:
    return {"value": value, "matchLevel": level, "matchedWords": words or []}


def test_fields_in_the_searchable_order_with_the_text_found_there_unescaped() -> None:
    highlight = {
        "summary": entry("Steps from the <em>park</em> &amp; the <em>Parkway</em>"),
        "name": entry("The <em>Parkhill</em> Residences"),
        "cityOrDistrict": entry("Toronto", "none"),
        "amenities": [entry("Gym", "none"), entry("<em>Park</em>"), entry("<em>park</em>")],
        "fullAddress": entry("1 &lt;b&gt;<em>Park</em>&lt;/b&gt; Rd"),
    }
    assert matched_fields(highlight) == [
        MatchedField("name", ("Parkhill",)),
        MatchedField("summary", ("park", "Parkway")),
        MatchedField("amenities", ("Park",)),
        MatchedField("fullAddress", ("Park",)),
    ]
    assert matched_summary(highlight) == "Name “Parkhill” · Summary “park”, “Parkway” · Amenities “Park” · +1 more"
    assert matched_summary(highlight, most=4).endswith("Address “Park”")


@pytest.mark.parametrize(
    "highlight",
    [None, {}, "text", {"name": "plain"}, {"name": entry("Park", "none")}, {"name": [1, None]}, {"name": {}}],
)
def test_nothing_said_where_the_highlights_say_nothing_matched(highlight: Any) -> None:
    assert matched_fields(highlight) == []
    assert matched_summary(highlight) == ""


def test_a_service_that_marks_nothing_but_names_the_words() -> None:
    assert matched_summary({"name": entry("Park House", "partial", ["park"])}) == "Name “park”"


def test_a_field_shown_beside_comes_last_named_without_its_text() -> None:
    highlight = {"name": entry("<em>Park</em> Towns"), "amenities": [entry("<em>Park</em>")]}
    assert matched_summary(highlight, shown=("name",)) == "Amenities “Park” · Name"
    assert matched_summary({"name": entry("<em>Park</em> Towns")}, shown=("name",)) == "Name"
