"""Benchmark of filterQuery tests on paths the column index does not hold, against reading every document for them.

A ``filterQuery`` may name any path of a listing (``floorPlans.units.unitNumber:201``, ``floorPlans.units.price <
700000``, ``floorPlans.name:"Suite 1B"``). Until 2026-12-07 the store answered such a test by reading and testing every
stored document, once per generation and expression (the first such search after any write waited again). Now a
unit's price or floor compared as a number comes from the floor plans' index; any test of a unit's number or floor
from the units' values, any test of another path the column index lacks from ``listing_values``, and a unit's price
matched, a unit's status or a text attribute compared as a number from the same rows (layout 11; all
``precon/service/search/held_values.py``): no filter reads a document.

At ``--listings`` listings (the catalogue ``bench/after_write.py`` makes, in ``--data``, copied), ``--rounds``
rounds, each: a day's updates (``--written`` listings, a unit sold and another's price raised), then, each timed in
the process (the store, not HTTP):

* **units' price, a new bound**: ``floorPlans.units.price < <a new bound each round>``;
* **unit number, after a day's updates**: ``floorPlans.units.unitNumber:201``, the same each round;
* **unit number in a city, a new one**: ``cityOrDistrict:<a city> AND floorPlans.units.unitNumber:<new>``;
* **unit number, a new one**: ``floorPlans.units.unitNumber:<new>`` over the whole catalogue;
* **plan name, a new one**: ``floorPlans.name:<new>`` over the whole catalogue (from ``listing_values``);
* **unit price matched, a new one**: ``floorPlans.units.price:<new>`` over the whole catalogue (from the units'
  prices: every unit's, held once read);
* before the rounds, the process's **first unit number** and **first plan name** questions, which read the units'
  values and the plans' names whole;
* **every document read**, the baseline: every stored document read and tested by the reference evaluator, as the
  store did before, for the new unit number.

Run (from the project root)::

    .venv/bin/python bench/document_filters.py --listings 20000 --rounds 5

Figures go to stdout and, as JSON, to ``bench/out/document_filters-<listings>.json``.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path
from typing import Any

import orjson
from after_write import OUT, sold_one, work_copy  # bench/, where this runs from

from precon.filters import compile_predicate, parse
from precon.service.runtime import settle_heap
from precon.service.stores.sqlite.store import SQLiteStore
from precon.service.stores.types import ListingQuery

KINDS = ("units' price, a new bound", "unit number, after a day's updates", "unit number in a city, a new one",
         "unit number, a new one", "plan name, a new one", "unit price matched, a new one",
         "every document read")  # fmt: skip


def timed(store: SQLiteStore, question: str) -> float:
    started = time.perf_counter()
    store.search_listings(ListingQuery(filter=parse(question), facets=("type",), limit=20))
    return (time.perf_counter() - started) * 1000


def every_document(store: SQLiteStore, question: str) -> float:
    """Every stored document read and tested for ``question``, as the store did before."""
    test = compile_predicate(parse(question))
    started = time.perf_counter()
    rows = store._db().execute("SELECT id, doc FROM listing_docs")
    matched = [rowid for rowid, doc in rows if test(orjson.loads(doc))]
    assert matched is not None
    return (time.perf_counter() - started) * 1000


def run(path: Path, rounds: int, written: int) -> tuple[dict[str, float], dict[str, Any]]:
    """The first unit-number and plan-name questions' times in the process (their values read whole), and each
    kind's figures."""
    store = SQLiteStore(path)
    times: dict[str, list[float]] = {kind: [] for kind in KINDS}
    try:
        cities = [value for value, _ in store.search_listings(ListingQuery(facets=("cityOrDistrict",), limit=0))
                  .facets["cityOrDistrict"]]  # fmt: skip
        ids = store.listing_ids()
        store.search_listings(ListingQuery(unit_filter=parse("units.price < 1"), limit=1))  # both indexes held
        first = {
            "first_unit_number_ms": timed(store, "floorPlans.units.unitNumber:201"),  # the units' values read whole
            "first_plan_name_ms": timed(store, 'floorPlans.name:"Suite 9Z"'),  # the plans' names read whole
        }
        settle_heap()  # as a serving process does once started
        for round_ in range(rounds):
            day = ids[round_ * written : (round_ + 1) * written]
            store.update_listings(day, sold_one)
            number = 301 + 100 * round_
            for kind, question in (
                (KINDS[0], f"floorPlans.units.price < {600_000 + 1_000 * round_}"),
                (KINDS[1], "floorPlans.units.unitNumber:201"),
                (KINDS[2], f'cityOrDistrict:"{cities[round_ % len(cities)]}" AND floorPlans.units.unitNumber:{number}'),
                (KINDS[3], f"floorPlans.units.unitNumber:{number + 2}"),
                (KINDS[4], f'floorPlans.name:"Suite {round_ + 1}A"'),
                (KINDS[5], f"floorPlans.units.price:{700_001 + 17 * round_}"),
            ):
                times[kind].append(timed(store, question))
            times[KINDS[6]].append(every_document(store, f"floorPlans.units.unitNumber:{number + 2}"))
    finally:
        store.close()
    return first, {
        kind: {
            "p50_ms": statistics.median(values),
            "p95_ms": max(values) if len(values) < 20 else statistics.quantiles(values, n=20)[18],
        }
        for kind, values in times.items()
    }


def main() -> None:
    args, work = work_copy(__doc__, rounds=5)
    first, figures = run(work, args.rounds, args.written)
    baseline = figures[KINDS[6]]["p50_ms"]
    for name, took in first.items():
        print(f"{name} in the process (its values read whole): {took:.1f} ms, {took / baseline:.2f}x of every "
              "document read")  # fmt: skip
    for kind in KINDS:
        found = figures[kind]
        found["to_every_document_p50"] = found["p50_ms"] / baseline
        print(f"{kind:>36}: p50 {found['p50_ms']:9.1f} ms  p95 {found['p95_ms']:9.1f} ms  "
              f"{found['to_every_document_p50']:.3f}x of every "
              "document read")  # fmt: skip
    OUT.mkdir(exist_ok=True)
    result = {"listings": args.listings, "rounds": args.rounds, "written": args.written,
              **first, **figures}  # fmt: skip
    (OUT / f"document_filters-{args.listings}.json").write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
