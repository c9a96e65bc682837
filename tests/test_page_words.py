"""Every page in people's words: a walk through each page of the dashboard (over a catalogue with a year of history,
a saved search and a compare list) keeping every table and CSV it makes, none of which may hold ``nan``, ``None`` or
an attribute's name (``startPrice``, ``listing_id``) where a person reads it; then the places the service's names
used to show: a listing's history, a saved search's filters, the market grouped by bedrooms, the Changes CSV."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import streamlit as st

from precon.client import Client
from precon.dashboard import labels
from precon.dashboard.filter_state import FilterState
from precon.dashboard.saved_searches import SavedSearches
from precon.service.embedded import EmbeddedService
from tests.dashboard_support import embedded_over, make_catalogue, open_page, page_text

LISTINGS = 120
HISTORY_DAYS = 400
BAD_TEXT = {"nan", "none", "nat", "<na>", "null"}
IDENTIFIER = re.compile(r"^[a-z]+(?:[A-Z_][A-Za-z]*)+$")
"""``startPrice``, ``listing_id``: a name of the code's, not a word of people's."""


@pytest.fixture(scope="module")
def history_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_catalogue(tmp_path_factory.mktemp("words-data"), LISTINGS, HISTORY_DAYS)


@pytest.fixture(scope="module")
def oracle(history_data: Path) -> Iterator[Client]:
    with EmbeddedService(history_data, listings=LISTINGS) as service:
        yield service.client


@dataclass
class Kept:
    """What the pages handed to Streamlit: each table (its frame and the headers people see) and each CSV."""

    tables: list[tuple[pd.DataFrame, list[str], Any]] = field(default_factory=list)
    csvs: list[tuple[str, str]] = field(default_factory=list)


@pytest.fixture
def kept(history_data: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Kept]:
    seen = Kept()

    def keeping(original: Any) -> Any:
        def table(data: Any = None, *args: Any, **kwargs: Any) -> Any:
            frame = getattr(data, "data", data)  # a Styler's frame
            if isinstance(frame, pd.DataFrame):
                config = kwargs.get("column_config") or {}
                headers = [_header(config.get(c), c) for c in frame.columns]
                seen.tables.append((frame, headers, kwargs.get("placeholder")))
            return original(data, *args, **kwargs)

        return table

    def download(label: str, data: Any, *args: Any, **kwargs: Any) -> Any:
        made = data() if callable(data) else data
        text = made.decode("utf-8-sig") if isinstance(made, bytes) else str(made)
        if str(kwargs.get("mime", "")).startswith("text/csv") or str(kwargs.get("file_name", "")).endswith(".csv"):
            seen.csvs.append((str(kwargs.get("file_name")), text))
        return original_download(label, data, *args, **kwargs)

    original_download = st.download_button
    monkeypatch.setattr(st, "dataframe", keeping(st.dataframe))
    monkeypatch.setattr(st, "table", keeping(st.table))
    monkeypatch.setattr(st, "download_button", download)
    with embedded_over(history_data, LISTINGS, monkeypatch):
        yield seen


def _header(config: Any, name: object) -> str:
    if isinstance(config, str):
        return config
    if isinstance(config, dict) and config.get("label"):
        return str(config["label"])
    return str(name)


def _bad_cells(frame: pd.DataFrame, placeholder: Any) -> list[str]:
    """Cells a person would read as ``nan`` or ``None``: such text, or a missing value with no placeholder (which
    Streamlit draws as "None")."""
    bad = []
    for column in frame.columns:
        for value in frame[column]:
            if isinstance(value, str) and value.strip().lower() in BAD_TEXT:
                bad.append(f"{column}={value!r}")
            elif placeholder is None and labels.blank(value) and not isinstance(value, str):
                bad.append(f"{column}=<missing, shown as None>")
    return bad


def check(seen: Kept, page: str) -> None:
    for frame, headers, placeholder in seen.tables:
        assert not _bad_cells(frame, placeholder), (page, list(frame.columns), _bad_cells(frame, placeholder)[:5])
        assert not [h for h in headers if IDENTIFIER.match(h)], (page, headers)
    for name, text in seen.csvs:
        rows = list(csv.reader(io.StringIO(text)))
        assert rows, (page, name)
        assert not [h for h in rows[0] if IDENTIFIER.match(h)], (page, name, rows[0])
        odd = [c for row in rows for c in row if c.strip().lower() in BAD_TEXT]
        assert not odd, (page, name, odd[:5])
    seen.tables.clear()
    seen.csvs.clear()


def a_listing_with_history(oracle: Client) -> str:
    found = oracle.search_listings(per_page=50, filter='sellingStatus:"Selling Now"').results
    totals = {f.id: oracle.listing_history(f.id or "", per_page=0).total for f in found if f.id}
    return max(totals, key=lambda i: totals[i])


def test_every_page_tables_and_csvs_in_peoples_words(kept: Kept, oracle: Client, history_data: Path) -> None:
    listing_id = a_listing_with_history(oracle)
    others = [f.id for f in oracle.search_listings(per_page=3).results if f.id and f.id != listing_id]
    profile = oracle.search_profiles(collection="Builders", per_page=1).results[0]
    collection, _, profile_id = (profile.path or "").partition("/")
    city = max((c := oracle.facet_counts(["cityOrDistrict"])["cityOrDistrict"]), key=lambda k: c[k])
    state = FilterState().with_value("city", city).with_value("selling", "Selling Now").with_range("beds", 2, 2)
    SavedSearches(history_data / "dashboard.sqlite3").save("Two beds", state, deployment="embedded:x")
    pages = [
        ("views/home.py", {}),
        ("views/search.py", {"beds": "2"}),
        ("views/map.py", {}),
        ("views/facets.py", {}),
        ("views/saved.py", {}),
        ("views/changes.py", {"window": "365"}),
        ("views/market.py", {"groupBy": "bedrooms"}),
        ("views/market.py", {"groupBy": "city", "interval": "quarter"}),
        ("views/listing.py", {"id": listing_id}),
        ("views/compare.py", {"ids": ",".join([listing_id, *others[:2]])}),
        ("views/profiles.py", {}),
        ("views/profile.py", {"collection": collection, "id": profile_id}),
        ("views/webhooks.py", {}),
        ("views/status.py", {}),
    ]
    walked = []
    for page, query in pages:
        app = open_page(page, query)
        assert not app.exception, (page, [e.value for e in app.exception])
        walked.append((page, len(kept.tables), len(kept.csvs)))
        check(kept, page)
    assert sum(t for _, t, _ in walked) >= 15 and sum(c for _, _, c in walked) >= 6, walked


def test_a_listings_history_and_a_saved_searchs_filters_read_as_people_say_them(
    kept: Kept, oracle: Client, history_data: Path
) -> None:
    listing_id = a_listing_with_history(oracle)
    app = open_page("views/listing.py", {"id": listing_id})
    assert not app.exception, [e.value for e in app.exception]
    [history] = [frame for frame, _, _ in kept.tables if "scope" in frame.columns]
    assert set(history["scope"]) <= {"Listing", "Floor plan", "Unit"}
    assert set(history["change"]) <= {"Added", "Changed", "Removed"}
    assert not {"startPrice", "price", "status", "sellingStatus"} & set(history["field"])

    city = max((c := oracle.facet_counts(["cityOrDistrict"])["cityOrDistrict"]), key=lambda k: c[k])
    state = (
        FilterState()
        .with_value("city", city)
        .with_value("selling", "Selling Now")
        .with_range("beds", 2, 2)
        .with_range("price", None, 800_000)
    )
    SavedSearches(history_data / "dashboard.sqlite3").save("Two beds", state.with_available(True), deployment="x")
    text = page_text(open_page("views/saved.py"))
    assert f"Filters: {city} · Selling Now · 2 bed · up to \\$800,000 · available units" in text, text
    assert "numberOfBedrooms" not in text and "cityOrDistrict" not in text


def test_the_changes_csv_names_its_columns_and_leaves_unknowns_blank(kept: Kept) -> None:
    app = open_page("views/changes.py", {"window": "365"})
    assert not app.exception, [e.value for e in app.exception]
    [(_, text)] = kept.csvs
    rows = list(csv.DictReader(io.StringIO(text)))
    assert rows and "When (UTC)" in rows[0] and "What changed" in rows[0]
    assert {row["Field"] for row in rows} <= {"Start price", "Selling status", "Status", "Price", ""}
    listing_level = [row for row in rows if row["Kind"] in ("Launches", "Sell-outs", "Price increases", "Price cuts")]
    assert listing_level and all(row["Plan"] == row["Unit"] == "" for row in listing_level)
