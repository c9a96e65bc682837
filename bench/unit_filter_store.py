"""``unitFilter`` in the store, without HTTP: the requests ``bench/history.py`` sends, timed in one process.

Opens a data directory's catalogue (one ``bench/history.py`` or ``precon catalogue generate`` built; use a copy: the
shared index files are written beside it), then times, interleaved so both see the same machine:

* ``filter``: ``search_listings`` with a ``filterQuery`` (a page of 20, the stored bytes);
* ``unit_filter``: the same with a ``unitFilter`` of ``bench/history.py``'s kind (an available unit under a price,
  half the time from a floor up), and the page's ``_matchedFloorPlans`` made as the service makes them;
* ``units_index``: the unit filter's mask alone (:meth:`PlanIndex.listings_matching`).

Run::

    .venv/bin/python bench/unit_filter_store.py --data /tmp/copy-of-a-data-dir --requests 200
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from history import sample_listings, unit_filter  # bench/ is not a package: its directory is on the path
from load import percentiles
from mix import Vocabulary, filter_query

from precon import filters
from precon.filters import Expr
from precon.service.api.units import add_matched_floor_plans

try:
    from precon.service.api.units import with_matched_floor_plans
except ImportError:  # code from before pages were answered from the stored bytes with them
    with_matched_floor_plans = None  # type: ignore[assignment]
from precon.service.stores.records import decode_document
from precon.service.stores.sqlite.store import SQLiteStore
from precon.service.stores.types import ListingQuery, SearchHits


def answer_unit_filter(store: SQLiteStore, text: Expr, units: Expr) -> None:
    """The store's page for a unit filter, with ``_matchedFloorPlans`` as the service adds them."""
    hits: SearchHits = store.search_listings(ListingQuery(filter=text, unit_filter=units, limit=20, raw=True))
    if hits.blobs is not None and with_matched_floor_plans is not None:  # as the service answers
        with_matched_floor_plans([b"{}"] * len(hits.blobs), hits.blobs, hits.source, units, hits.matched)
        return
    documents = hits.documents if hits.blobs is None else [decode_document(blob) for _, blob in hits.blobs]
    found = getattr(hits, "matched", None)  # None from code before the search gave them
    if found is None:
        add_matched_floor_plans([{} for _ in documents], documents, units)
    else:
        add_matched_floor_plans([{} for _ in documents], documents, units, found)


def timed(work: Callable[[], object]) -> float:
    started = time.perf_counter()
    work()
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    vocabulary = Vocabulary.from_sample(sample_listings(args.data, rng))
    store = SQLiteStore(args.data / "catalogue.sqlite3", shared_indexes=True)
    pairs = [
        (filters.parse(filter_query(rng, vocabulary)), filters.parse(unit_filter(rng, vocabulary)))
        for _ in range(args.requests)
    ]
    store.search_listings(ListingQuery(unit_filter=pairs[0][1], limit=1))  # builds (or maps) the indexes
    times: dict[str, list[float]] = {"filter": [], "unit_filter": [], "units_index": []}
    index = store._columns()
    plans = store._plans(index)
    for text, units in pairs:
        assert text is not None and units is not None
        plain = ListingQuery(filter=text, limit=20, raw=True)
        times["filter"].append(timed(partial(store.search_listings, plain)))
        times["unit_filter"].append(timed(partial(answer_unit_filter, store, text, units)))
        mask = index.filter(text, partial(store._fallback_mask, index))
        times["units_index"].append(timed(partial(plans.listings_matching, units, among=mask)))
    store.close()
    figures = {kind: percentiles(values) for kind, values in times.items()}
    for kind, values in figures.items():
        print(f"{kind:12} p50 {values['p50']:8} p95 {values['p95']:8} p99 {values['p99']:8} (n={values['n']})")
    print(f"p95 unit_filter / filter: {figures['unit_filter']['p95'] / figures['filter']['p95']:.2f}")


if __name__ == "__main__":
    main()
