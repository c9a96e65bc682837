"""Benchmark of the listings service: latency, throughput and memory of ``search_listings`` over a real mix.

What it measures, in one run:

1. The time to build a catalogue of ``--listings`` listings with ``precon catalogue generate``.
2. The service's start: from launching ``precon serve`` until ``/healthz`` answers, then from there until the
   first search is answered (the in-memory column index is built on open or on the first search, whichever
   the installed service does); both are printed, and their sum is the time from start to first answer.
3. A running ``precon serve`` process (its own process, no rate limit; ``--workers N`` is passed through when
   the installed ``precon serve --help`` offers it) answering a seeded mix of
   ``search_listings`` requests built from the catalogue's real values: about a quarter each of text search,
   facet counts, filters (``filterQuery``) and distance (``nearby``/``radius``); all ``perPage=20``, a few
   on pages 1 to 5. The mix runs after a warm-up (not counted) with one client (concurrency 1, sequential)
   and with 16 threads (each its own keep-alive connection: :mod:`lean_http`); latency is client-side.
4. The service's memory as the PSS of its whole process tree (the ``precon serve`` process and every
   descendant, e.g. worker processes: the sum of ``Pss`` in each ``/proc/<pid>/smaps_rollup``, so pages the
   workers share are counted once), sampled every half second while the mix runs: the peak, and the value
   after each phase.
5. A naive baseline in this process: every listing record loaded into memory, each request answered by a
   full scan in Python (text words, ``precon.filters`` predicates, haversine, facet counting, sort, page);
   the baseline/service latency ratios are the headline figures, since absolute times on a shared machine
   are noisy. The baseline also cross-checks the service's totals and page order. It is skipped with
   ``--no-baseline``, and always above 100,000 listings (its scans and the copy of every record would take
   most of the run); the mix is then drawn from a sample of the catalogue read on its own, the same sample
   and mix as with the baseline.

Targets (printed, never failing the run), at 50,000 listings: throughput at concurrency 16 at least 1.7 times
that at concurrency 1, p95 at most 120 ms at concurrency 16 and at most 10 ms at concurrency 1, PSS at most
450 MB; at 500,000 listings: p95 at concurrency 1 at most 50 ms, PSS at most 2 GB (the targets of the nearer
size are printed, with a note, for other sizes). The process exits non-zero only when the service fails to
start or a response is not 200.

Run (from the project root)::

    .venv/bin/python bench/service.py                      # 50,000 listings, seed 1, 600 requests
    .venv/bin/python bench/service.py --listings 2000      # a quick run
    .venv/bin/python bench/service.py --reuse              # keep an existing catalogue in --data
    .venv/bin/python bench/service.py --listings 500000    # the scale point (no baseline; generation takes minutes)
    .venv/bin/python bench/service.py --workers 2          # when ``precon serve`` offers --workers

Figures go to stdout and, as JSON, to ``bench/out/service-<listings>.json`` (``service-<listings>-w<N>.json``
with ``--workers N``).
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import random
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

from load import Sample, by_category, client_for, run_mix, send
from mix import CATEGORIES, PER_PAGE, BenchRequest, JsonDict, Vocabulary, build_mix
from naive import NaiveCatalogue, run_baseline
from serving import (
    OUT_DIR,
    MemorySampler,
    Service,
    ServiceFailed,
    build_catalogue,
    create_key,
    read_listings,
    sample_listings,
    serve_offers_workers,
)

DEFAULT_LISTINGS = 50_000
DEFAULT_SEED = 1
DEFAULT_REQUESTS = 600
DEFAULT_BASELINE_REQUESTS = 150
WARMUP_REQUESTS = 30
CONCURRENCY_LEVELS = (1, 16)
BASELINE_MAX_LISTINGS = 100_000
"""Above this many listings the naive baseline is skipped (as with ``--no-baseline``)."""


@dataclass(frozen=True)
class Targets:
    listings: int
    p95_c1_ms: float
    p95_c16_ms: float | None = None
    scaling_c16: float | None = None
    """Throughput at concurrency 16 over that at concurrency 1, at least."""
    pss_mb: float = 0.0


TARGETS = (
    Targets(50_000, p95_c1_ms=10.0, p95_c16_ms=120.0, scaling_c16=1.7, pss_mb=450.0),
    Targets(500_000, p95_c1_ms=50.0, pss_mb=2048.0),
)


# -- figures --------------------------------------------------------------------------------------------------


def ratio(baseline: float | None, service: float | None) -> float | None:
    return None if not baseline or not service else round(baseline / service, 1)


def agreement(service: Sequence[Sample], baseline: Sequence[tuple[Sample, tuple[str, ...]]]) -> JsonDict:
    """Where the baseline and the service disagree: totals everywhere, page order where no text ranks it."""
    totals = order = 0
    for served, (naive, ids) in zip(service, baseline, strict=True):
        totals += served.total != naive.total
        order += served.category != "text" and served.ids != ids
    return {"checked": len(baseline), "total_mismatches": totals, "order_mismatches": order}


def _fmt(value: float | None, width: int = 8) -> str:
    return f"{'-':>{width}}" if value is None else f"{value:>{width}.2f}"


def print_latency_table(runs: dict[str, JsonDict]) -> None:
    print(f"\n{'conc':>4}  {'category':<8} {'n':>5} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'req/s':>8}")
    for run in runs.values():
        for category, stats in run["latency"].items():
            rps = _fmt(run["requests_per_s"]) if category == "all" else ""
            print(
                f"{run['concurrency']:>4}  {category:<8} {stats['n']:>5} {_fmt(stats['p50'])} "
                f"{_fmt(stats['p95'])} {_fmt(stats['p99'])} {rps}"
            )


def print_baseline_table(baseline: JsonDict) -> None:
    print(
        f"\nNaive baseline: the first {baseline['requests']} requests of the mix, full scans in Python in this "
        "process (no HTTP); service figures for the same requests at concurrency 1 (over HTTP)."
    )
    print(
        f"{'category':<8} {'n':>4} {'naive p50':>10} {'naive p95':>10} {'svc p50':>8} {'svc p95':>8} "
        f"{'x p50':>7} {'x p95':>7}"
    )
    for category, row in baseline["by_category"].items():
        print(
            f"{category:<8} {row['naive']['n']:>4} {_fmt(row['naive']['p50'], 10)} {_fmt(row['naive']['p95'], 10)} "
            f"{_fmt(row['service']['p50'])} {_fmt(row['service']['p95'])} "
            f"{_fmt(row['ratio_p50'], 7)} {_fmt(row['ratio_p95'], 7)}"
        )
    check = baseline["agreement"]
    print(
        f"cross-check over {check['checked']} requests: {check['total_mismatches']} totals and "
        f"{check['order_mismatches']} page orders (non-text) differ between the baseline and the service"
    )


def baseline_figures(
    service: Sequence[Sample], baseline: Sequence[tuple[Sample, tuple[str, ...]]], load_s: float
) -> JsonDict:
    naive_stats = by_category([s for s, _ in baseline])
    service_stats = by_category(service)
    rows = {
        name: {
            "naive": naive_stats[name],
            "service": service_stats[name],
            "ratio_p50": ratio(naive_stats[name]["p50"], service_stats[name]["p50"]),
            "ratio_p95": ratio(naive_stats[name]["p95"], service_stats[name]["p95"]),
        }
        for name in naive_stats
    }
    return {
        "requests": len(baseline),
        "load_s": round(load_s, 1),
        "by_category": rows,
        "agreement": agreement(service, baseline),
    }


def targets(listings: int, runs: dict[str, JsonDict], pss_mb: float) -> list[JsonDict]:
    """The targets of the nearest size (in ratio) to ``listings``, each with its value and whether it holds."""
    chosen = min(TARGETS, key=lambda t: abs(math.log(listings / t.listings)))
    note = "" if listings == chosen.listings else f" (set for {chosen.listings:,} listings)"
    c1, c16 = runs.get("c1"), runs.get("c16")
    checked = []

    def check(label: str, value: float | None, holds: Callable[[float], bool]) -> None:
        checked.append({"target": label + note, "value": value, "pass": value is not None and holds(value)})

    p95_c1 = c1["latency"]["all"]["p95"] if c1 else None
    check(f"p95 at concurrency 1 <= {chosen.p95_c1_ms:g} ms", p95_c1, lambda v: v <= chosen.p95_c1_ms)
    if chosen.p95_c16_ms is not None:
        p95_c16 = c16["latency"]["all"]["p95"] if c16 else None
        limit = chosen.p95_c16_ms
        check(f"p95 at concurrency 16 <= {limit:g} ms", p95_c16, lambda v: v <= limit)
    if chosen.scaling_c16 is not None:
        scaling = round(c16["requests_per_s"] / c1["requests_per_s"], 2) if c1 and c16 else None
        least = chosen.scaling_c16
        check(f"throughput at concurrency 16 >= {least:g} x concurrency 1", scaling, lambda v: v >= least)
    check(f"peak PSS of the service tree <= {chosen.pss_mb:g} MB", round(pss_mb, 1), lambda v: v <= chosen.pss_mb)
    return checked


# -- the run --------------------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--listings", type=int, default=DEFAULT_LISTINGS)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--requests", type=int, default=DEFAULT_REQUESTS)
    parser.add_argument("--baseline", type=int, default=DEFAULT_BASELINE_REQUESTS, help="Requests the baseline answers")
    parser.add_argument(
        "--no-baseline",
        action="store_true",
        help=f"Skip the naive baseline (always skipped above {BASELINE_MAX_LISTINGS:,} listings)",
    )
    parser.add_argument(
        "--workers", type=int, default=None, help="Passed to precon serve when it offers --workers; else ignored"
    )
    parser.add_argument("--data", type=Path, default=None, help="Default: bench/out/data-<listings>-<seed>")
    parser.add_argument("--reuse", action="store_true", help="Keep an existing catalogue in --data")
    parser.add_argument(
        "--metrics-pair",
        type=int,
        default=0,
        metavar="ROUNDS",
        help="Then the mix at concurrency 16 with /metrics off and on, ROUNDS times each (a service started for each)",
    )
    return parser.parse_args(argv)


def measure_service(
    service: Service, key: str, mix: Sequence[BenchRequest], warmup: Sequence[BenchRequest]
) -> JsonDict:
    """The warm-up (its first request timed on its own, and from the moment ``/healthz`` answered: it may build
    the service's column index), then the mix at each concurrency, the service tree's PSS sampled throughout;
    the concurrency-1 samples keep each answer's total and page ids for the cross-check."""
    first = None
    first_after_healthy_s = None
    memory = {"healthy": service.memory_mb()}
    with MemorySampler(service.process.pid) as sampler:
        if warmup:
            with client_for(service, key) as client:
                first, _ = send(client, warmup[0])
            first_after_healthy_s = time.perf_counter() - service.healthy_at
            memory["first search"] = service.memory_mb()
            run_mix(service, key, warmup[1:], 1)
        memory["warm-up"] = service.memory_mb()
        runs: dict[str, JsonDict] = {}
        samples_c1: list[Sample] = []
        for concurrency in CONCURRENCY_LEVELS:
            samples, wall = run_mix(service, key, mix, concurrency, keep_bodies=concurrency == 1)
            if concurrency == 1:
                samples_c1 = samples
            runs[f"c{concurrency}"] = {
                "concurrency": concurrency,
                "wall_s": round(wall, 2),
                "requests_per_s": round(len(samples) / wall, 1),
                "failures": sum(s.status != 200 for s in samples),
                "failed_statuses": dict(Counter(str(s.status) for s in samples if s.status != 200)),
                "latency": by_category(samples),
            }
            memory[f"c{concurrency}"] = service.memory_mb()
        sampler.sample()
    return {
        "first_request_ms": None if first is None else round(first.latency_ms, 1),
        "first_after_healthy_s": None if first_after_healthy_s is None else round(first_after_healthy_s, 2),
        "runs": runs,
        "c1": samples_c1,
        "memory_by_phase": memory,
        "peak_pss_mb": max(sampler.peak_mb, *(m["PSS"] for m in memory.values())),
        "processes": max(sampler.processes, *(int(m["processes"]) for m in memory.values())),
    }


METRICS_SIDES = {"metrics off": "false", "metrics on": "true"}


def compare_metrics(
    data_dir: Path,
    key: str,
    mix: Sequence[BenchRequest],
    warmup: Sequence[BenchRequest],
    workers: int | None,
    rounds: int,
) -> JsonDict:
    """``/metrics`` on against off (``PRECON_SERVICE_METRICS``; the JSON request log on for both): a service started
    with each in turn, ``rounds`` times in alternating order so that both sides meet the same machine, the mix at
    the highest concurrency after the warm-up; the medians of each side, and what the service counted."""
    concurrency = CONCURRENCY_LEVELS[-1]
    seen: dict[str, list[JsonDict]] = {side: [] for side in METRICS_SIDES}
    counted = None
    for number in range(rounds):
        order = list(METRICS_SIDES.items()) if number % 2 == 0 else list(reversed(METRICS_SIDES.items()))
        for side, setting in order:
            log = OUT_DIR / f"service-{side.replace(' ', '-')}.log"
            service = Service.start(data_dir, log, workers, {"PRECON_SERVICE_METRICS": setting})
            try:
                run_mix(service, key, warmup, concurrency)
                samples, wall = run_mix(service, key, mix, concurrency)
                if setting == "true":
                    text = httpx.get(service.base_url + "/metrics", timeout=30).text
                    counted = sum(
                        float(line.rsplit(" ", 1)[1])
                        for line in text.splitlines()
                        if line.startswith("precon_requests_total{") and 'operation="healthz"' not in line
                    )
            finally:
                service.stop()
            latencies = sorted(sample.latency_ms for sample in samples)
            seen[side].append(
                {
                    "requests_per_s": round(len(samples) / wall, 1),
                    "p50_ms": round(statistics.median(latencies), 2),
                    "p95_ms": round(latencies[int(0.95 * (len(latencies) - 1))], 2),
                }
            )
    medians = {
        side: {figure: statistics.median(run[figure] for run in runs) for figure in runs[0]}
        for side, runs in seen.items()
    }
    off, on = medians["metrics off"]["requests_per_s"], medians["metrics on"]["requests_per_s"]
    slower = round((1 - on / off) * 100, 1)
    for side, figures in medians.items():
        print(f"{side} at c{concurrency}: " + ", ".join(f"{k} {v}" for k, v in figures.items()))
    expected = len(warmup) + len(mix)
    print(
        f"metrics on: {slower} % slower than off at c{concurrency} (target at most 5 %); counted {counted} of "
        f"{expected} requests"
    )
    return {"rounds": seen, "medians": medians, "slower_percent": slower, "counted": counted, "sent": expected}


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    data_dir: Path = args.data or OUT_DIR / f"data-{args.listings}-{args.seed}"
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    print(f"Precon service benchmark: {args.listings:,} listings, seed {args.seed}, {args.requests} requests")
    with_baseline = not args.no_baseline and args.listings <= BASELINE_MAX_LISTINGS
    if not args.no_baseline and not with_baseline:
        print(
            f"note: no naive baseline above {BASELINE_MAX_LISTINGS:,} listings (its full scans in Python, and a copy "
            "of every record in this process, would take most of the run); the mix is drawn from a sample"
        )
    workers = None
    if args.workers is not None:
        if serve_offers_workers():
            workers = args.workers
        else:
            print(f"note: the installed precon serve has no --workers; --workers {args.workers} is left out")

    build_s = build_catalogue(args.listings, args.seed, data_dir, args.reuse)
    print(f"catalogue: {data_dir} " + ("(reused)" if build_s is None else f"built in {build_s:.1f} s"))

    started = time.perf_counter()
    rng = random.Random(args.seed)
    naive = None
    if with_baseline:
        docs = read_listings(data_dir)
        vocabulary = Vocabulary.of(docs, rng)
    else:
        vocabulary = Vocabulary.from_sample(sample_listings(data_dir, rng))
    requests = build_mix(WARMUP_REQUESTS + args.requests, vocabulary, rng)
    warmup, mix = requests[:WARMUP_REQUESTS], requests[WARMUP_REQUESTS:]
    if with_baseline:
        naive = NaiveCatalogue(docs)
        del docs
    # The records held for the baseline are millions of objects: out of the collector's way, or its passes over
    # them land in the client's timings.
    gc.collect()
    gc.freeze()
    load_s = time.perf_counter() - started
    if naive is not None:
        print(f"read {len(naive.records):,} listings into this process for the mix and the baseline in {load_s:.1f} s")
    else:
        print(f"read a sample of {len(vocabulary.sample):,} listings for the mix in {load_s:.1f} s")
    shares = Counter(r.category for r in mix)
    print("mix: " + ", ".join(f"{c} {shares[c]}" for c in CATEGORIES) + f"; {WARMUP_REQUESTS} warm-up requests")

    key = create_key(data_dir)
    try:
        service = Service.start(data_dir, OUT_DIR / f"service-{args.listings}.log", workers)
    except ServiceFailed as error:
        print(f"FAILED: {error}", file=sys.stderr)
        return 2
    try:
        print(f"service pid {service.process.pid} at {service.base_url}, healthy after {service.started_s:.1f} s")
        measured = measure_service(service, key, mix, warmup)
    finally:
        service.stop()
    metrics_pair = None
    if args.metrics_pair:
        metrics_pair = compare_metrics(data_dir, key, mix, warmup, workers, args.metrics_pair)
    runs: dict[str, JsonDict] = measured["runs"]
    first_after = measured["first_after_healthy_s"]
    to_first = None if first_after is None else round(service.started_s + first_after, 2)
    print(
        f"start: /healthz answered {service.started_s:.2f} s after launch; the first search answered "
        f"{first_after} s after that (the request itself {measured['first_request_ms']} ms); "
        f"launch to first search answered {to_first} s"
    )
    print_latency_table(runs)
    c1_rps, c16_rps = runs["c1"]["requests_per_s"], runs[f"c{CONCURRENCY_LEVELS[-1]}"]["requests_per_s"]
    print(f"throughput: {c16_rps} req/s at concurrency 16 against {c1_rps} at 1 ({c16_rps / c1_rps:.2f} x)")

    baseline = None
    if naive is not None:
        subset = mix[: args.baseline]
        baseline = baseline_figures(measured["c1"][: len(subset)], run_baseline(naive, subset), load_s)
        print_baseline_table(baseline)

    phases = measured["memory_by_phase"]
    peak_pss = measured["peak_pss_mb"]
    end = phases[f"c{CONCURRENCY_LEVELS[-1]}"]
    print(
        f"\nservice memory: peak PSS of the process tree ({measured['processes']} process(es)) {peak_pss:.1f} MB; "
        f"at the end PSS {end['PSS']:.1f} MB, main process VmHWM {end.get('VmHWM', 0):.1f} MB, "
        f"VmRSS {end.get('VmRSS', 0):.1f} MB"
    )
    print("PSS after each phase: " + ", ".join(f"{k} {v['PSS']:.1f} MB" for k, v in phases.items()))
    checked = targets(args.listings, runs, peak_pss)
    for target in checked:
        print(f"{'PASS' if target['pass'] else 'MISS'}  {target['target']}: {target['value']}")
    failures = sum(run["failures"] for run in runs.values())
    print(f"failed responses: {failures}")

    report = {
        "listings": args.listings,
        "seed": args.seed,
        "requests": args.requests,
        "warmup_requests": WARMUP_REQUESTS,
        "per_page": PER_PAGE,
        "cpus": os.cpu_count(),
        "workers": workers,
        "build_s": None if build_s is None else round(build_s, 1),
        "service_start_s": round(service.started_s, 2),
        "first_search_after_healthy_s": first_after,
        "start_to_first_search_s": to_first,
        "first_request_ms": measured["first_request_ms"],
        "service": runs,
        "throughput_c16_over_c1": round(c16_rps / c1_rps, 2),
        "baseline": baseline,
        "memory_mb": {
            "peak_pss": round(peak_pss, 1),
            "processes": measured["processes"],
            **{name: round(value, 1) for name, value in end.items()},
        },
        "memory_by_phase_mb": {k: {n: round(v, 1) for n, v in m.items()} for k, m in phases.items()},
        "targets": checked,
        "failures": failures,
        "metrics_pair": metrics_pair,
    }
    out = OUT_DIR / f"service-{args.listings}{'' if workers is None else f'-w{workers}'}.json"
    out.write_bytes(orjson.dumps(report, option=orjson.OPT_INDENT_2))
    print(f"figures written to {out}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
