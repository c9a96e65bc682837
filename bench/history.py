"""Benchmark of the market over time: units, history and the simulation, at scale.

What it measures, in one run, at ``--listings`` listings (50,000 by default) with their units:

1. **The catalogue**: generated (``precon.service.catalogue.generate``), given ``--history-days`` days of simulated
   history in memory and loaded with it, as a new data directory gets its catalogue: the time of each step and how
   many listings, units and history entries that is.
2. **The service** (``precon serve`` on that data directory, its own process, no rate limit), answering pairs of
   requests one client at a time, each pair's two kinds interleaved so that both see the same machine:

   * ``unitFilter`` with ``units.*`` conditions (a price under a quantile, an available status, a floor) beside
     the same ``filterQuery`` alone; target: p95 at most 3 times the plain search's;
   * ``changes`` with ``since`` (the last 30 days) and a ``filterQuery`` beside ``search_listings`` with that
     ``filterQuery``; target: p95 at most 2 times;
   * ``listing_history?id=`` beside ``listing?id=`` of the same listings; target: p95 at most 1.5 times;
   * ``market_stats`` by month and ``cityOrDistrict`` over the last two years with a ``filterQuery`` beside
     ``facet_counts`` of ``cityOrDistrict`` with that ``filterQuery``; target: p95 at most 5 times (its columns are
     built by the first request, timed apart as ``market_stats_first_s``);
   * the PSS of the service's process tree, sampled while it answers: target at most 1.5 GB.
3. **The simulation**: ``precon catalogue simulate --days --simulate-days`` (730) on a copy of the data directory,
   timed from the command's start to its end; target under 10 minutes at 50,000 listings.

The targets are printed and kept in the JSON; they never fail the run. The process exits non-zero only when the
service fails to start or an answer is not 200.

Run (from the project root)::

    .venv/bin/python bench/history.py                          # 50,000 listings, two years, 300 requests a kind
    .venv/bin/python bench/history.py --listings 2500 --requests 100    # a quick run
    .venv/bin/python bench/history.py --reuse                  # keep the catalogue built in --data

Figures go to stdout and, as JSON, to ``bench/out/history-<listings>.json``.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

from load import percentiles, run_mix  # bench/ is not a package: its directory is on the path
from mix import PRODUCT, Vocabulary, filter_query
from serving import OUT_DIR, PRECON, MemorySampler, Service, create_key

DEFAULT_LISTINGS = 50_000
DEFAULT_SEED = 1
DEFAULT_HISTORY_DAYS = 730
DEFAULT_REQUESTS = 300
WARMUP = 20
SAMPLE = 2000
CHANGES_WINDOW_DAYS = 30

TARGETS = {"unit_filter": 3.0, "changes": 2.0, "listing_history": 1.5, "market_stats": 5.0}
"""p95 of each kind at most this many times its baseline's."""
PSS_TARGET_MB = 1536.0
SIMULATE_TARGET_S = 600.0

JsonDict = dict[str, Any]


@dataclass(frozen=True)
class Call:
    """One request of the run: what :func:`load.run_mix` sends (its category, path and query)."""

    category: str
    path: str
    params: dict[str, str]

    def query(self) -> dict[str, str]:
        return {"product_id": PRODUCT, **self.params}


def build(data_dir: Path, listings: int, seed: int, days: int) -> JsonDict:
    """The data directory's catalogue, with its simulated past: the time of each step, and what it holds."""
    from precon.service import catalogue
    from precon.service.config import ServiceSettings
    from precon.service.stores.loading import load_past
    from precon.service.stores.simulation import last_past_day, simulated_past
    from precon.service.stores.sqlite.store import SQLiteStore

    shutil.rmtree(data_dir, ignore_errors=True)
    data_dir.mkdir(parents=True)
    started = time.perf_counter()
    built = catalogue.generate(listings, seed)
    generated = time.perf_counter()
    past = simulated_past(built.listings, days, seed, last_past_day())
    simulated = time.perf_counter()
    del built.listings[:]  # the past's documents are the ones loaded
    store = SQLiteStore(ServiceSettings(data_dir=data_dir).catalogue_path)
    load_past(store, past, built.profiles)
    store.close()
    loaded = time.perf_counter()
    return {
        "generate_s": round(generated - started, 1),
        "simulate_in_memory_s": round(simulated - generated, 1),
        "load_s": round(loaded - simulated, 1),
    }


def holdings(data_dir: Path) -> JsonDict:
    db = sqlite3.connect(data_dir / "catalogue.sqlite3")
    try:
        count = lambda sql: int(db.execute(sql).fetchone()[0])  # noqa: E731
        return {
            "listings": count("SELECT count(*) FROM listings"),
            "units": count("SELECT count(*) FROM listing_plan_units"),
            "history_entries": count("SELECT count(*) FROM listing_history"),
            "file_mb": round((data_dir / "catalogue.sqlite3").stat().st_size / 2**20),
        }
    finally:
        db.close()


def sample_listings(data_dir: Path, rng: random.Random) -> list[JsonDict]:
    db = sqlite3.connect(data_dir / "catalogue.sqlite3")
    try:
        ids = [row[0] for row in db.execute("SELECT id FROM listings")]
        chosen = rng.sample(ids, min(SAMPLE, len(ids)))
        marks = ",".join("?" * len(chosen))
        return [
            orjson.loads(doc) for (doc,) in db.execute(f"SELECT doc FROM listing_docs WHERE id IN ({marks})", chosen)
        ]
    finally:
        db.close()


def unit_filter(rng: random.Random, vocabulary: Vocabulary) -> str:
    price = vocabulary.price(rng, 0.3, 0.9)
    clauses = [f"units.price <= {price}", 'units.status:"Available"']
    if rng.random() < 0.5:
        clauses.append(f"units.floor >= {rng.randint(2, 15)}")
    return " AND ".join(clauses)


def paired_calls(count: int, vocabulary: Vocabulary, rng: random.Random) -> list[Call]:
    """``count`` requests of each kind, each kind's baseline beside it, interleaved."""
    since = (datetime.now(UTC) - timedelta(days=CHANGES_WINDOW_DAYS)).strftime("%Y-%m-%dT%H:%M:%SZ")
    two_years = (datetime.now(UTC) - timedelta(days=730)).strftime("%Y-%m-%dT%H:%M:%SZ")
    search = "/v1/all/search_listings"
    calls: list[Call] = []
    for _ in range(count):
        text = filter_query(rng, vocabulary)
        calls.append(Call("filter", search, {"filterQuery": text, "perPage": "20"}))
        calls.append(Call("unit_filter", search, {"filterQuery": text, "unitFilter": unit_filter(rng, vocabulary)}))
        text = filter_query(rng, vocabulary)
        calls.append(Call("changes_baseline", search, {"filterQuery": text, "perPage": "20"}))
        calls.append(Call("changes", "/v1/all/changes", {"filterQuery": text, "since": since, "perPage": "20"}))
        listing_id = rng.choice(vocabulary.sample)["listingId"]
        calls.append(Call("listing", "/v1/all/listing", {"id": listing_id}))
        calls.append(Call("listing_history", "/v1/all/listing_history", {"id": listing_id, "perPage": "20"}))
        text = filter_query(rng, vocabulary)
        calls.append(Call("market_baseline", "/v1/all/facet_counts", {"filterQuery": text, "facets": "cityOrDistrict"}))
        market = {"filterQuery": text, "groupBy": "cityOrDistrict", "interval": "month", "since": two_years}
        calls.append(Call("market_stats", "/v1/all/market_stats", market))
    return calls


def serve_and_measure(data_dir: Path, requests: int, seed: int) -> JsonDict:
    rng = random.Random(seed)
    vocabulary = Vocabulary.from_sample(sample_listings(data_dir, rng))
    key = create_key(data_dir)
    calls = paired_calls(requests, vocabulary, rng)
    service = Service.start(data_dir, OUT_DIR / f"history-serve-{data_dir.name}.log")
    try:
        with MemorySampler(service.process.pid) as memory:
            first_market = market_stats_first(service.base_url, key)
            run_mix(service, key, paired_calls(WARMUP, vocabulary, rng), 1)
            samples, _ = run_mix(service, key, calls, 1)
            memory.sample()
        failed = [s for s in samples if s.status != 200]
        if failed:
            raise SystemExit(f"{len(failed)} answers were not 200, the first {failed[0]}")
        latency = {
            kind: percentiles([s.latency_ms for s in samples if s.category == kind])
            for kind in (
                *("filter", "unit_filter", "changes_baseline", "changes", "listing", "listing_history"),
                *("market_baseline", "market_stats"),
            )
        }
        figures = {"latency_ms": latency, "pss_peak_mb": round(memory.peak_mb), **service.memory_mb()}
        return {**figures, "market_stats_first_s": first_market}
    finally:
        service.stop()


def market_stats_first(base_url: str, key: str) -> float:
    """Seconds to the first ``market_stats`` answer: the one that builds the generation's market columns (longer
    than a mix's request may take)."""
    import httpx

    started = time.perf_counter()
    answer = httpx.get(
        base_url + "/v1/all/market_stats", params={"product_id": PRODUCT}, headers={"x-api-key": key}, timeout=900
    )
    if answer.status_code != 200:
        raise SystemExit(f"market_stats answered {answer.status_code}: {answer.text[:200]}")
    return round(time.perf_counter() - started, 1)


def simulate(data_dir: Path, days: int, seed: int) -> JsonDict:
    """``precon catalogue simulate`` on a copy of the data directory, timed."""
    copy = data_dir.with_name(data_dir.name + "-simulated")
    shutil.rmtree(copy, ignore_errors=True)
    copy.mkdir()
    shutil.copy2(data_dir / "catalogue.sqlite3", copy / "catalogue.sqlite3")
    command = [str(PRECON), "catalogue", "simulate", "--days", str(days), "--seed", str(seed), "--data", str(copy)]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"simulate failed: {done.stderr}")
    shutil.rmtree(copy, ignore_errors=True)
    return {"days": days, "seconds": round(elapsed, 1), "said": done.stderr.strip().splitlines()[-1]}


def ratios(latency: JsonDict) -> JsonDict:
    def p95(kind: str) -> float:
        return float(latency[kind]["p95"])

    return {
        "unit_filter": round(p95("unit_filter") / p95("filter"), 2),
        "changes": round(p95("changes") / p95("changes_baseline"), 2),
        "listing_history": round(p95("listing_history") / p95("listing"), 2),
        "market_stats": round(p95("market_stats") / p95("market_baseline"), 2),
    }


def report(figures: JsonDict) -> list[str]:
    lines = [f"catalogue: {figures['catalogue']}", f"build: {figures.get('build')}"]
    for kind, values in figures["service"]["latency_ms"].items():
        lines.append(f"  {kind:17} p50 {values['p50']:8} p95 {values['p95']:8} p99 {values['p99']:8} (n={values['n']})")
    checks = []
    for name, value in figures["ratios"].items():
        checks.append((f"p95 {name} / its baseline", value, f"<= {TARGETS[name]}", value <= TARGETS[name]))
    pss = figures["service"]["pss_peak_mb"]
    checks.append(("service PSS peak, MB", pss, f"<= {PSS_TARGET_MB:.0f}", pss <= PSS_TARGET_MB))
    if "simulate" in figures:
        seconds = figures["simulate"]["seconds"]
        checks.append(("simulate seconds", seconds, f"< {SIMULATE_TARGET_S:.0f}", seconds < SIMULATE_TARGET_S))
    for label, value, target, holds in checks:
        lines.append(f"  {label:32} {value:>10} {target:>8}  {'ok' if holds else 'MISSED'}")
    lines.append(f"  market_stats' first answer (its columns built): {figures['service']['market_stats_first_s']} s")
    if "simulate" in figures:
        lines.append(f"  simulate said: {figures['simulate']['said']}")
    return lines


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--listings", type=int, default=DEFAULT_LISTINGS)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--history-days", type=int, default=DEFAULT_HISTORY_DAYS)
    parser.add_argument("--simulate-days", type=int, default=DEFAULT_HISTORY_DAYS, help="0 to skip the simulation")
    parser.add_argument("--requests", type=int, default=DEFAULT_REQUESTS, help="of each kind")
    parser.add_argument("--data", type=Path, default=None, help="default bench/out/history-<listings>")
    parser.add_argument("--reuse", action="store_true", help="keep the catalogue already built in --data")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    OUT_DIR.mkdir(exist_ok=True)
    data_dir = args.data or OUT_DIR / f"history-{args.listings}"
    figures: JsonDict = {"listings": args.listings, "seed": args.seed, "history_days": args.history_days}
    if not (args.reuse and (data_dir / "catalogue.sqlite3").exists()):
        figures["build"] = build(data_dir, args.listings, args.seed, args.history_days)
    figures["catalogue"] = holdings(data_dir)
    figures["service"] = serve_and_measure(data_dir, args.requests, args.seed)
    figures["ratios"] = ratios(figures["service"]["latency_ms"])
    if args.simulate_days:
        figures["simulate"] = simulate(data_dir, args.simulate_days, args.seed)
    print("\n".join(report(figures)))
    (OUT_DIR / f"history-{args.listings}.json").write_bytes(orjson.dumps(figures, option=orjson.OPT_INDENT_2))


if __name__ == "__main__":
    main()
