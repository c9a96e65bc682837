"""(ours) bench/market_peer.py's SQL checked: DuckDB's ``market_stats`` (bench/market_sql.py: the catalogue loaded,
each unit's state per month precomputed, one statement per question) equals the service's answer over real HTTP,
every figure of every group and interval, on a small catalogue with a simulated past, a listing deleted after its
sales, and a unit that first appears sold."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import httpx
import pytest

from bench import market_sql
from bench.market_sql import Question
from precon.service.config import ServiceSettings
from precon.service.runtime import DataDirectory
from precon.service.server import ServerThread
from tests.conftest import KEY_ALL


@dataclass
class Peer:
    url: str
    http: httpx.Client
    con: duckdb.DuckDBPyConnection
    since: str
    until: str

    def ours(self, question: Question) -> dict[str, Any]:
        response = self.http.get(self.url + "/v1/all/market_stats", params=question.params())
        assert response.status_code == 200, response.text
        answer: dict[str, Any] = response.json()
        return answer


def _changed(directory: DataDirectory) -> None:
    """A listing with sales deleted (its units count until it went), a unit added already sold (no sale), and a
    listing of 2-bedroom units created at the first instant of last month (it does not exist at that month's start:
    what exists at an interval's end was created before it)."""
    db = directory.live._db()
    (sold_in,) = db.execute(
        "SELECT min(listing_id) FROM listing_history WHERE scope = 'unit' AND field = 'status' AND to_value = ?",
        (b'"Sold"',),
    ).fetchone()
    directory.live.delete_listing(sold_in)
    (listing_id,) = db.execute("SELECT max(listing_id) FROM listings").fetchone()
    listing = next(iter(directory.live.get_listings([listing_id], None).values()))
    plans = [dict(plan) for plan in listing["floorPlans"]]
    plan = next(plan for plan in plans if plan.get("units"))
    plan["units"] = [*plan["units"], {**plan["units"][0], "unitNumber": "9999", "status": "Sold"}]
    directory.live.upsert_listings([{**listing, "floorPlans": plans}])
    template = next(
        record
        for record in directory.live.get_listings(directory.live.listing_ids(), None).values()
        if any(plan.get("numberOfBedrooms") == 2 and plan.get("units") for plan in record.get("floorPlans") or [])
    )
    now = datetime.now(UTC)
    last_month = datetime(now.year - (now.month == 1), (now.month - 2) % 12 + 1, 1, tzinfo=UTC)
    born = {**template, "listingId": "BORN01", "path": "Listings/BORN01"}
    born["floorPlans"] = [{k: v for k, v in plan.items() if k != "id"} for plan in template["floorPlans"]]
    directory.live.upsert_listings([born], at=last_month.timestamp())


@pytest.fixture(scope="module")
def peer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Peer]:
    data_dir: Path = tmp_path_factory.mktemp("market-peer")
    settings = ServiceSettings(
        data_dir=data_dir, default_listings=90, default_seed=3, default_history_days=100, rate_limit=0, dev=True
    )
    directory = DataDirectory.open(settings)
    directory.accounts.create_key("everything", key=KEY_ALL)
    _changed(directory)
    con = duckdb.connect()
    market_sql.load(con, data_dir / "catalogue.sqlite3")
    market_sql.precompute(con)
    (oldest,) = con.execute("SELECT min(at_text) FROM history").fetchone()
    until = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    with ServerThread(directory.app()) as server, httpx.Client(timeout=60, headers={"x-api-key": KEY_ALL}) as http:
        yield Peer(server.url, http, con, oldest, until)
    con.close()
    directory.close()


def questions(peer: Peer) -> list[Question]:
    window = {"since": peer.since, "until": peer.until}
    return [
        Question("whole by month", **window),
        Question("by city by quarter", **window, interval="quarter", group_by="cityOrDistrict"),
        Question("Toronto", **window, filter_query="cityOrDistrict:Toronto"),
        Question("by bedrooms", **window, group_by="floorPlans.numberOfBedrooms"),
        Question("2 bedrooms", **window, unit_filter="numberOfBedrooms = 2"),
        Question(
            "filtered, grouped by bedrooms, by quarter",
            **window,
            interval="quarter",
            group_by="floorPlans.numberOfBedrooms",
            group_limit=3,
            filter_query='NOT cityOrDistrict:Toronto OR sellingStatus:"Selling Now"',
            unit_filter="numberOfBedrooms >= 2",
        ),
        Question("by selling status", **window, group_by="sellingStatus", filter_query="NOT cityOrDistrict:Toronto"),
    ]


def test_every_figure_duckdb_computes_is_the_service_s(peer: Peer) -> None:
    asked = questions(peer)
    for question in asked:
        assert market_sql.covered(peer.con, question), question.name
        ours, theirs = peer.ours(question), market_sql.answer(peer.con, question)
        assert market_sql.disagreements(ours, theirs) == [], question.name
        assert len(ours["series"]) >= 1 and len(ours["series"][0]["points"]) >= 2, question.name
    whole = market_sql.answer(peer.con, asked[0])["series"][0]["points"]
    assert sum(p["unitsSold"] for p in whole) > 0 and sum(p["priceIncreases"] + p["priceCuts"] for p in whole) > 0
    assert all(p["medianPrice"] is not None for p in whole)


def test_a_figure_changed_is_a_disagreement_named(peer: Peer) -> None:
    """The comparison can fail: one figure of one interval off, and it is named."""
    question = questions(peer)[1]
    ours = peer.ours(question)
    theirs = market_sql.answer(peer.con, question)
    point = theirs["series"][1]["points"][0]
    point["unitsSold"] += 1
    point["medianPrice"] = None if point["medianPrice"] is None else point["medianPrice"] * (1 + 1e-6)
    found = market_sql.disagreements(ours, theirs)
    assert found and found[0].startswith(f"{ours['series'][1]['group']} {point['start']} unitsSold")


def test_the_deleted_listing_and_the_unit_first_seen_sold_are_counted_as_the_service_counts_them(peer: Peer) -> None:
    """The SQL sees the two edge cases: the deleted listing's units exist until it went, the unit added sold makes
    the month's units one more, sold, and no sale."""
    (deleted,) = peer.con.execute("SELECT count(*) FROM units u JOIN listings l USING (listing_id) "
                                  "WHERE l.deleted AND u.gone_ms IS NOT NULL").fetchone()  # fmt: skip
    (added,) = peer.con.execute("SELECT count(*) FROM units WHERE unit_key = '9999' AND born_ms IS NOT NULL").fetchone()
    assert deleted > 0 and added == 1
    (born_at_a_month_start,) = peer.con.execute(
        "SELECT count(*) FROM units WHERE listing_id = 'BORN01' AND born_ms % 1000 = 0 "
        "AND date_trunc('month', make_timestamp(born_ms * 1000)) = make_timestamp(born_ms * 1000)"
    ).fetchone()
    assert born_at_a_month_start > 0


def test_duckdb_s_median_is_the_mean_of_the_middle_two_as_ours_is(peer: Peer) -> None:
    """docs/api.md: an even count's median is the mean of its middle two; DuckDB's ``median`` of doubles is that."""
    (found,) = peer.con.execute("SELECT median(x) FROM (VALUES (1.0::DOUBLE), (2.0), (4.0), (10.0)) t(x)").fetchone()
    assert found == 3.0
