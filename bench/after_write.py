"""Benchmark of the first request after a write: the column index, the floor plans' index and the market columns
patched by the listings the write wrote, against a warm request and against the floor plans' index and the market
columns built whole, interleaved on one catalogue.

At ``--listings`` listings (2,500 by default; a generated catalogue with its units and ``--history-days`` days of
history, 730 by default, made once in ``--data``), a store serving searches takes ``--rounds`` writes of each kind,
one after the other:

* **a day's updates**: ``--written`` stored listings (20 by default) each with a unit sold and another's price
  raised, as a simulated day writes them; then the first search (the column index patched:
  ``precon_index_patches_total``), then the first search with a ``unitFilter`` (the floor plans' index patched:
  ``precon_plan_index_patches_total``), then the first ``market_stats`` (the market columns patched:
  ``precon_market_patches_total``: the market whole by month over the last two years, and by bedrooms), then the
  first ``market_stats`` with a ``unitFilter`` (the unit ledger patched);
* **a listing created**: one new listing; then the first search (its listing appended to the index);
* **warm**: both searches again, nothing written;
* **plans built whole**, **market built whole**, **ledger built whole**: the floor plans' index, the market
  columns and the unit ledger (``market_stats`` under a ``unitFilter``) of the same generation read whole, as before
  they were patched.

Each is timed in the process, from the request's call to its answer (the store, not HTTP), with Python's collector
set as a serving process sets it once started (``settle_heap``: what was loaded frozen, young collections rarer).
Target (issue 43): the first request of each kind after a day's updates within 2 times a warm one's p95.

Run (from the project root)::

    .venv/bin/python bench/after_write.py
    .venv/bin/python bench/after_write.py --listings 50000 --rounds 10

Figures go to stdout and, as JSON, to ``bench/out/after_write-<listings>.json``.
"""

from __future__ import annotations

import argparse
import copy
import json
import shutil
import sqlite3
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prometheus_client import REGISTRY

from precon.filters import parse
from precon.service.config import ServiceSettings
from precon.service.runtime import DataDirectory, settle_heap
from precon.service.search.plan_index import PlanIndex
from precon.service.stores.market_stats import MarketGroup
from precon.service.stores.sqlite.market_columns import build_market_columns
from precon.service.stores.sqlite.market_units import build_unit_ledger
from precon.service.stores.sqlite.store import SQLiteStore
from precon.service.stores.types import ListingQuery

OUT = Path(__file__).with_name("out")
QUERY = ListingQuery(facets=("cityOrDistrict", "type", "sellingStatus"), limit=20)
UNIT_QUERY = ListingQuery(unit_filter=parse("units.status:Available AND units.price < 700000"), limit=20)
KINDS = ("warm", "after a day's updates", "after a listing created", "unitFilter warm",
         "unitFilter after a day's updates", "plans built whole", "market_stats warm",
         "market_stats after a day's updates", "market built whole", "market_stats unitFilter warm",
         "market_stats unitFilter after a day's updates", "ledger built whole")  # fmt: skip
MONTH_MS = 30 * 86_400_000


def catalogue(data: Path, listings: int, history_days: int) -> Path:
    """A generated catalogue of ``listings`` listings and ``history_days`` days of history, made once."""
    path = data / "catalogue.sqlite3"
    if not path.exists():
        settings = ServiceSettings(
            data_dir=data, default_listings=listings, default_history_days=history_days, dev=True
        )
        DataDirectory.open(settings, serving=False).close()
    return path


def sold_one(_: str, doc: dict[str, Any]) -> dict[str, Any] | None:
    changed = copy.deepcopy(doc)
    units = [u for plan in changed.get("floorPlans") or [] for u in plan.get("units") or []]
    available = [u for u in units if u.get("status") == "Available"]
    if len(available) < 2:
        return None
    available[0]["status"] = "Sold"
    available[1]["price"] = (available[1].get("price") or 500_000) + 1_000
    return changed


def timed(store: SQLiteStore, query: ListingQuery = QUERY) -> float:
    started = time.perf_counter()
    store.search_listings(query)
    return (time.perf_counter() - started) * 1000


def whole_plans(store: SQLiteStore) -> float:
    """The floor plans' index of the current generation read whole (what a unitFilter search waited for before)."""
    index = store._columns()
    started = time.perf_counter()
    PlanIndex(store._db(), index.rowids, index.generation)
    return (time.perf_counter() - started) * 1000


def timed_market(store: SQLiteStore, ids: list[str], unit_filter: bool = False) -> float:
    """``market_stats`` as the Market page first asks it: the market whole by month over two years, then by
    bedrooms; with ``unit_filter``, the market whole of the available units under 700,000."""
    end = int(time.time() * 1000)
    boundaries = list(range(end - 24 * MONTH_MS, end + 1, MONTH_MS))
    started = time.perf_counter()
    if unit_filter:
        store.market_stats(boundaries, [MarketGroup(None, tuple(ids))], unit_filter=UNIT_QUERY.unit_filter)
    else:
        store.market_stats(boundaries, [MarketGroup(None, tuple(ids))])
        plan = "floorPlans.numberOfBedrooms"
        store.market_stats(boundaries, [MarketGroup(str(n), tuple(ids), (plan, str(n))) for n in (1, 2, 3)])
    return (time.perf_counter() - started) * 1000


def whole_market(store: SQLiteStore, build: Callable[[sqlite3.Connection], object]) -> float:
    """The market columns (the unit ledger) of the current generation read whole (what the first market_stats, with a
    unitFilter, waited for before)."""
    started = time.perf_counter()
    with store._reading() as db:
        build(db)
    return (time.perf_counter() - started) * 1000


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[18] if len(values) > 1 else values[0]


def run(path: Path, rounds: int, written: int) -> dict[str, Any]:
    store = SQLiteStore(path)
    times: dict[str, list[float]] = {kind: [] for kind in KINDS}
    try:
        store.search_listings(QUERY)
        store.search_listings(UNIT_QUERY)
        ids = store.listing_ids()
        timed_market(store, ids)
        timed_market(store, ids, unit_filter=True)
        template = store.get_listings([ids[0]], None)[ids[0]]
        settle_heap()  # as a serving process does once started (precon serve, each worker)
        for round_ in range(rounds):
            chosen = ids[(round_ * written) % len(ids) :][:written]
            store.update_listings(chosen, sold_one)
            times["after a day's updates"].append(timed(store))
            times["unitFilter after a day's updates"].append(timed(store, UNIT_QUERY))
            times["plans built whole"].append(whole_plans(store))
            times["unitFilter warm"].append(timed(store, UNIT_QUERY))
            times["market_stats after a day's updates"].append(timed_market(store, ids))
            times["market_stats unitFilter after a day's updates"].append(timed_market(store, ids, True))
            times["market built whole"].append(whole_market(store, build_market_columns))
            times["ledger built whole"].append(whole_market(store, build_unit_ledger))
            times["market_stats warm"].append(timed_market(store, ids))
            times["market_stats unitFilter warm"].append(timed_market(store, ids, True))
            store.upsert_listings([{**copy.deepcopy(template), "listingId": f"BENCH-{time.time_ns()}"}])
            times["after a listing created"].append(timed(store))
            times["warm"].append(timed(store))
    finally:
        store.close()
    return {
        name: {"p50_ms": statistics.median(v), "p95_ms": p95(v), "runs": len(v), "each_ms": [round(t, 1) for t in v]}
        for name, v in times.items()
    }


PATCHES = {
    "column index": ("precon_index_patches_total", {}),
    "plans' index": ("precon_plan_index_patches_total", {}),
    "market columns": ("precon_market_patches_total", {"kind": "columns"}),
    "unit ledger": ("precon_market_patches_total", {"kind": "ledger"}),
}


def patches() -> dict[str, float]:
    """How many times each index was patched so far in this process (the rest of its new generations: built whole)."""
    return {
        name: REGISTRY.get_sample_value(metric, {"catalogue": "work", **labels}) or 0.0
        for name, (metric, labels) in PATCHES.items()
    }


def work_copy(description: str | None, rounds: int) -> tuple[argparse.Namespace, Path]:
    """The command's arguments (``--listings``, ``--rounds``, ``--written``, ``--history-days``, ``--data``) and a
    copy of their catalogue (made once in ``--data``) to write to."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--listings", type=int, default=2500)
    parser.add_argument("--rounds", type=int, default=rounds)
    parser.add_argument("--written", type=int, default=20)
    parser.add_argument("--history-days", type=int, default=730)
    parser.add_argument("--data", type=Path, default=None)
    args = parser.parse_args()
    data = args.data or OUT / f"after-write-{args.listings}-{args.history_days}d"
    data.mkdir(parents=True, exist_ok=True)
    work = data / "work.sqlite3"
    shutil.copy(catalogue(data, args.listings, args.history_days), work)
    return args, work


def main() -> None:
    args, work = work_copy(__doc__, rounds=20)
    figures = run(work, args.rounds, args.written)
    patched = patches()
    ratio = figures["after a day's updates"]["p95_ms"] / figures["warm"]["p95_ms"]
    unit_ratio = figures["unitFilter after a day's updates"]["p95_ms"] / figures["unitFilter warm"]["p95_ms"]
    market_ratio = figures["market_stats after a day's updates"]["p95_ms"] / figures["market_stats warm"]["p95_ms"]
    ledger_ratio = (
        figures["market_stats unitFilter after a day's updates"]["p95_ms"]
        / figures["market_stats unitFilter warm"]["p95_ms"]
    )
    result = {
        "listings": args.listings, "written": args.written, **figures,
        "updates_to_warm_p95": ratio, "unit_filter_updates_to_warm_p95": unit_ratio,
        "market_updates_to_warm_p95": market_ratio, "market_unit_filter_updates_to_warm_p95": ledger_ratio,
        "history_days": args.history_days, "patches": patched,
    }  # fmt: skip
    for name in KINDS:
        print(f"{name:>34}: p50 {figures[name]['p50_ms']:8.1f} ms  p95 {figures[name]['p95_ms']:8.1f} ms")
    print(f"patched in {args.rounds} rounds (the other generations built whole): {patched}")
    print(f"first search after a day's updates / warm, p95: {ratio:.2f}x (target 2x)")
    print(f"first unitFilter search after a day's updates / warm, p95: {unit_ratio:.2f}x (target 2x)")
    print(f"first market_stats after a day's updates / warm, p95: {market_ratio:.2f}x (target 2x)")
    print(f"first market_stats with a unitFilter after a day's updates / warm, p95: {ledger_ratio:.2f}x (target 2x)")
    OUT.mkdir(exist_ok=True)
    (OUT / f"after_write-{args.listings}.json").write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
