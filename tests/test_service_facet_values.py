"""search_facet_values (ours) over real HTTP, checked against counts and names computed here from the records."""

from __future__ import annotations

import html
import re
import unicodedata
from collections import Counter
from typing import Any

import pytest

from precon import filters
from precon.service.search.facet_values import highlight_prefixes
from tests.conftest import KEY_ALL, KEY_LITE, Api

PATH = "/v1/all/search_facet_values"


def folded(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", text.casefold()) if not unicodedata.combining(c))


def name_words(text: str) -> list[str]:
    return [folded(w) for w in re.findall(r"[^\W_]+", text)]


def counts_of(records: list[dict[str, Any]], field: str) -> Counter[str]:
    counted: Counter[str] = Counter()
    for record in records:
        value = record.get(field)
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str):
                counted[item] += 1
    return counted


def ranked(counts: Counter[str]) -> list[tuple[str, int]]:
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


def builder_names(api: Api) -> dict[str, str]:
    return {p["path"]: p["name"] for p in api.all_profiles() if p["path"].startswith("Builders/")}


def test_every_builder_is_found_by_each_word_of_its_name(api: Api) -> None:
    records = api.all_listings()
    names = builder_names(api)
    counts = counts_of(records, "builders")
    assert len(counts) > 20
    for path, count in counts.items():
        name = names[path]
        for word in {w.strip(".,&'") for w in name.split()} - {""}:
            body = api.ok(PATH, facet="builders", facetQuery=word[:4], maxFacetHits=1000)
            hit = next((h for h in body["facetHits"] if h["value"] == path), None)
            assert hit is not None, (word, name)
            assert (hit["count"], hit["label"]) == (count, name)
            typed = name_words(word[:4])
            finding = [p for p in counts if all(any(w.startswith(t) for w in name_words(names[p])) for t in typed)]
            assert body["total"] == len(body["facetHits"]) == len(finding)


def test_a_whole_answer_for_a_reference_facet(api: Api) -> None:
    records = api.all_listings()
    names = builder_names(api)
    counts = counts_of(records, "builders")
    body = api.ok(PATH, facet="builders", facetQuery="dev", maxFacetHits=1000)
    expected = [
        (path, count)
        for path, count in ranked(counts)
        if any(folded(w).startswith("dev") for w in names[path].replace(".", " ").split())
    ]
    assert body == {
        "facetHits": [
            {
                "value": path,
                "label": names[path],
                "count": count,
                "highlighted": highlight_prefixes(names[path], ["dev"]),
            }
            for path, count in expected
        ],
        "exhaustiveFacetsCount": True,
        "total": len(expected),
    }
    assert all("<em>Dev</em>" in hit["highlighted"] for hit in body["facetHits"])


def test_an_empty_query_pages_through_every_value_beyond_the_hundred_of_facet_counts(api: Api) -> None:
    records = api.all_listings()
    expected = ranked(counts_of(records, "neighbourhood"))
    assert len(expected) > 100
    body = api.ok(PATH, facet="neighbourhood", maxFacetHits=1000)
    assert body == {
        "facetHits": [{"value": v, "count": c, "highlighted": html.escape(v)} for v, c in expected],
        "exhaustiveFacetsCount": True,
        "total": len(expected),
    }
    top = api.ok("/v1/all/facet_counts", facets="neighbourhood")["neighbourhood"]
    assert len(top) == 100
    found = {hit["value"]: hit["count"] for hit in body["facetHits"]}
    assert all(found[value] == count for value, count in top.items())
    assert list(top.items()) == expected[:100]


def test_accents_case_and_every_word_as_a_prefix(api: Api) -> None:
    names = builder_names(api)
    accented = next(name for name in names.values() if "é" in name)  # Bélanger Developments Inc.
    body = api.ok(PATH, facet="builders", facetQuery="BELANGER")
    assert [hit["label"] for hit in body["facetHits"]] == [accented]
    assert body["facetHits"][0]["highlighted"] == "<em>Bélanger</em> Developments Inc."
    two_words = api.ok(PATH, facet="builders", facetQuery="bel devel")
    assert two_words["facetHits"][0]["highlighted"] == "<em>Bél</em>anger <em>Devel</em>opments Inc."
    assert api.ok(PATH, facet="builders", facetQuery="elanger")["facetHits"] == []  # not the start of a word
    hoods = api.ok(PATH, facet="neighbourhood", facetQuery="quebec")
    assert [hit["value"] for hit in hoods["facetHits"]] == ["Vieux-Québec"]
    assert hoods["facetHits"][0]["highlighted"] == "Vieux-<em>Québec</em>"
    assert api.ok(PATH, facet="neighbourhood", facetQuery="vieux queb zzz")["total"] == 0


def test_highlighted_text_is_escaped(api: Api) -> None:
    body = api.ok(PATH, facet="builders", facetQuery="lavoie volk")
    assert [hit["highlighted"] for hit in body["facetHits"]] == ["<em>Lavoie</em> &amp; <em>Volk</em>ov Developments"]
    body = api.ok(PATH, facet="builders", facetQuery="connell")
    assert [hit["highlighted"] for hit in body["facetHits"]] == ["O&#x27;<em>Connell</em> Builders"]
    assert highlight_prefixes("<script>alert(1)</script> Lofts", ["lof"]) == (
        "&lt;script&gt;alert(1)&lt;/script&gt; <em>Lof</em>ts"
    )
    assert highlight_prefixes("<b>", []) == "&lt;b&gt;"


def test_max_facet_hits_cuts_the_hits_not_the_total(api: Api) -> None:
    every = api.ok(PATH, facet="neighbourhood", maxFacetHits=1000)
    few = api.ok(PATH, facet="neighbourhood", maxFacetHits=3)
    assert few == {**every, "facetHits": every["facetHits"][:3]}
    assert len(api.ok(PATH, facet="neighbourhood")["facetHits"]) == 10
    for bad in ("0", "1001", "ten"):
        assert api.get(PATH, facet="neighbourhood", maxFacetHits=bad).status_code == 400


def test_filter_query_unit_filter_and_search_scope_the_counts(api: Api) -> None:
    records = api.all_listings()
    listing_filter = filters.parse("type:Condo")
    unit = filters.parse("numberOfBedrooms >= 2 AND startPrice <= 800000")
    kept = [
        r
        for r in records
        if filters.evaluate(listing_filter, r) and any(filters.evaluate(unit, p) for p in r.get("floorPlans") or [])
    ]
    body = api.ok(
        PATH,
        facet="cityOrDistrict",
        filterQuery="type:Condo",
        unitFilter="numberOfBedrooms >= 2 AND startPrice <= 800000",
        maxFacetHits=1000,
    )
    expected = ranked(counts_of(kept, "cityOrDistrict"))
    assert [(h["value"], h["count"]) for h in body["facetHits"]] == expected
    counts = api.ok(
        "/v1/all/facet_counts",
        facets="cityOrDistrict",
        filterQuery="type:Condo",
        unitFilter="numberOfBedrooms >= 2 AND startPrice <= 800000",
    )
    assert counts == {"cityOrDistrict": dict(expected)}
    searched = api.ok(PATH, facet="type", search="toronto", maxFacetHits=1000)
    assert {h["value"]: h["count"] for h in searched["facetHits"]} == api.ok(
        "/v1/all/facet_counts", facets="type", search="toronto"
    )["type"]
    on = api.ok("/v1/on/search_facet_values", facet="cityOrDistrict", maxFacetHits=1000)
    ontario = [r for r in records if r.get("state") == "Ontario"]
    assert [(h["value"], h["count"]) for h in on["facetHits"]] == ranked(counts_of(ontario, "cityOrDistrict"))


def test_numeric_and_boolean_facets(api: Api) -> None:
    records = api.all_listings()
    years = Counter(str(r["completionYear"]) for r in records if r.get("completionYear") is not None)
    body = api.ok(PATH, facet="completionYear", facetQuery="202", maxFacetHits=1000)
    assert [(h["value"], h["count"]) for h in body["facetHits"]] == [
        (v, c) for v, c in ranked(years) if v.startswith("202")
    ]
    featured = api.ok(PATH, facet="isFeatured", facetQuery="tr")
    assert [h["value"] for h in featured["facetHits"]] == ["true"]


def error(api: Api, key: str = KEY_ALL, path: str = PATH, **params: Any) -> tuple[int, str]:
    response = api.get(path, key, **params)
    body = response.json()
    assert body["requestId"] == response.headers["x-request-id"]
    return response.status_code, body["message"]


def test_errors(api: Api) -> None:
    assert error(api) == (400, "facet is required")
    assert error(api, facet="*") == (400, "facet must name one facetable attribute, got '*'")
    assert error(api, facet="type,amenities") == (400, "facet must name one facetable attribute, got 'type,amenities'")
    status, message = error(api, facet="colour")
    assert status == 400 and message.startswith("facets: 'colour' is not a facetable attribute")
    assert error(api, facet="type", facetQuery="x" * 513) == (
        400,
        "facetQuery is 513 characters long; at most 512 are allowed",
    )
    status, message = error(api, facet="type", filterQuery="type:")
    assert status == 400 and message.startswith("filterQuery: expected a value after ':' at position 5")
    status, message = error(api, facet="type", unitFilter="beds > 2")
    assert status == 400 and message.startswith("unitFilter: 'beds' is not a floor plan field")
    lite = "/v1-lite/all/search_facet_values"
    assert error(api, KEY_LITE, lite, facet="amenities") == (
        400,
        "facet: 'amenities' is not an attribute of a v1-lite listing",
    )
    assert error(api, KEY_LITE, lite, facet="floorPlans.status") == (
        400,
        "facet: 'floorPlans.status' is not an attribute of a v1-lite listing",
    )
    assert api.ok(lite, KEY_LITE, facet="marketers") == api.ok(PATH, facet="marketers")
    status, message = error(api, KEY_LITE, lite, facet="type", unitFilter="status:Available")
    assert status == 400 and message.startswith("unitFilter: v1-lite has no floor plans")
    assert api.ok(lite, KEY_LITE, facet="builders", facetQuery="dev") == api.ok(
        PATH, facet="builders", facetQuery="dev"
    )
    assert api.get(PATH, None, facet="type").status_code == 403


@pytest.mark.parametrize("suffix", ["", "/"])
def test_etag_and_trailing_slash_as_on_every_read(api: Api, suffix: str) -> None:
    first = api.get(PATH + suffix, facet="type", facetQuery="con")
    assert first.status_code == 200 and first.headers["Cache-Control"] == "private, max-age=60"
    again = api.http.get(
        api.url + PATH + suffix,
        params={"facet": "type", "facetQuery": "con"},
        headers={"x-api-key": KEY_ALL, "if-none-match": first.headers["ETag"]},
    )
    assert again.status_code == 304
