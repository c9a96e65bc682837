"""The service past one machine, on loopback: PostgreSQL, Redis, HAProxy (deploy/haproxy.cfg) and 3 replicas, and
a single node (SQLite) to measure one replica against.

What it does, in one run (``make bench-cluster``; ``--quick`` for a short one):

1. Starts a throw-away PostgreSQL cluster (tests/pg_support.py's, here with fsync and synchronous commits on, as a
   real server has them), a redis-server, a webhook receiver, HAProxy running deploy/haproxy.cfg with three
   replicas declared, and the first replica (``precon serve --workers 1 --dev``, its own data directory, sharing
   PostgreSQL and Redis through ``PRECON_SERVICE_DATABASE_URL`` and ``PRECON_SERVICE_REDIS_URL``), which
   generates the catalogue (``--listings``) into PostgreSQL on its first start and builds its local SQLite copy
   of it. At the same time a single node (``precon serve --workers 1 --dev``, no database URL: SQLite in its own
   data directory) generates the same catalogue (same ``--listings`` and ``--seed``) on its first start.
2. Throughput: bench/mix.py's query mix (text, facets, filters, distance) through HAProxy at concurrency
   ``--concurrency``, with 1 replica, then 2, then 3 (each new replica warmed on its own port first). PostgreSQL's
   CPU time per read request (every backend and background process of the cluster, from /proc) is reported for
   each (target: under 1 ms: reads are answered from each replica's local copy).
3. One replica against one single node (with 1 replica up, before the others start): the same mix at the same
   concurrency sent to the single node's own port and to the first replica's own port (not through HAProxy), in
   ``--rounds`` interleaved rounds each (single, replica, replica, single, ...) so that noise on the machine falls
   on both; req/s of each, and the ratio replica/single (target: at least 0.8). The answers of their first rounds
   are compared (same total, same ids). The single node is stopped afterwards.
4. Write-to-read lag under load (3 replicas up): while the mix runs through HAProxy, a writer upserts one listing
   every 0.5 to 1 s for ``--lag-seconds`` straight into PostgreSQL (``PostgresCatalogueStore.upsert_listings``, its
   ``name`` given a new token each time), noting when the commit returned; a poller per replica asks that
   replica's own port every 10 ms for the written listings (``multiple_listings``) until the token shows, and
   for ``/healthz`` until its ``generation`` reaches the write's. Lag = the answer's arrival (an upper bound) minus
   the commit's return; p50, p99 and max per replica and overall (target: p99 under 1 s).
5. Failover: the mix through HAProxy and a stream of webhook events (``trigger_profile_webhook``, one
   ``profile.updated`` delivery each to the receiver) for ``--seconds``; halfway, one replica is killed with
   SIGKILL. Reported: requests that failed as clients saw them (GETs are retried on another replica by HAProxy,
   and so are the triggers, each sent with a fresh ``Idempotency-Key``, see deploy/haproxy.cfg; a trigger whose
   connection failed all the same is sent again by the client with the same key, twice at most, and counted
   failed only then), triggers sent again and answers replayed, events acknowledged but never
   delivered (lost), deliveries that came twice (the same ``webhook-id``), and how long HAProxy took to take the
   replica out. The killed replica is then started again and rejoins.
6. Rate limit: the replicas restarted with ``PRECON_SERVICE_RATE_LIMIT``/``RATE_BURST`` set, and one key hammers
   through HAProxy for ``--limit-seconds``: the requests let through against ``burst + rate x seconds``, what one
   limit across all replicas allows (a limiter per replica would let through up to 3 times that).

Figures go to stdout (a table at the end, with the targets and whether each held) and, as JSON, to
``bench/out/cluster.json``; logs of every part to ``bench/out/cluster/``. Exits non-zero when a part fails to
start.

Run (from the project root)::

    .venv/bin/python bench/cluster.py            # 20,000 listings, 30 s of failover, 30 s of writes
    .venv/bin/python bench/cluster.py --quick    # 5,000 listings, shorter phases
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import httpx
import orjson

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH_DIR))

from cluster_failover import failover, subscribe  # noqa: E402
from cluster_lag import LAG_AT_REST_S, REWARM_SLOWER, rewarm, write_lag  # noqa: E402
from cluster_report import print_report, targets  # noqa: E402
from cluster_stack import (  # noqa: E402
    KEY,
    REPLICAS,
    REQUEST_TIMEOUT_S,
    WORK_DIR,
    Endpoint,
    JsonDict,
    Stack,
    cpu_by_part,
    cpu_s,
    http,
    postmaster_pid,
    read_vocabulary,
    warm,
)
from load import Sample, by_category, run_mix  # noqa: E402
from mix import BenchRequest, build_mix  # noqa: E402
from serving import OUT_DIR  # noqa: E402
from stack import Replica, StackError  # noqa: E402

RATE_LIMIT = 20.0
RATE_BURST = 40


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="5,000 listings and shorter phases")
    parser.add_argument("--listings", type=int, default=None, help="Default 20,000 (5,000 with --quick)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--requests", type=int, default=None, help="Mix requests per throughput run (default 800)")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=None, help="Failover phase (default 30 s; 12 with --quick)")
    parser.add_argument("--limit-seconds", type=float, default=None, help="Rate-limit phase (default 8 s)")
    parser.add_argument("--rounds", type=int, default=3, help="Rounds each of the single node and one replica")
    parser.add_argument(
        "--lag-seconds", type=float, default=None, help="Writes under load (default 30 s; 12 with --quick)"
    )
    parser.add_argument(
        "--switch-interval-ms", type=float, default=None, help="The replicas' PRECON_SERVICE_SWITCH_INTERVAL_MS"
    )
    args = parser.parse_args(argv)
    args.listings = args.listings or (5_000 if args.quick else 20_000)
    args.requests = args.requests or (300 if args.quick else 800)
    args.seconds = args.seconds or (12.0 if args.quick else 30.0)
    args.limit_seconds = args.limit_seconds or (4.0 if args.quick else 8.0)
    args.lag_seconds = args.lag_seconds or (12.0 if args.quick else 30.0)
    return args


# -- throughput -------------------------------------------------------------------------------------------------


def throughput(stack: Stack, replicas: int, mix: Sequence[BenchRequest], concurrency: int) -> JsonDict:
    before, cpu_before = stack.served_by(), cpu_by_part(stack)
    samples, wall = run_mix(cast(Any, Endpoint(stack.proxy.url)), KEY, mix, concurrency)
    after, cpu_after = stack.served_by(), cpu_by_part(stack)
    latency = by_category(samples)["all"]
    cpu = {part: cpu_after[part] - cpu_before[part] for part in cpu_after}
    return {
        "replicas": replicas,
        "requests": len(samples),
        "wall_s": round(wall, 2),
        "requests_per_s": round(len(samples) / wall, 1),
        "p50_ms": latency["p50"],
        "p95_ms": latency["p95"],
        "latency_by_category_ms": {
            name: {"p50": stats["p50"], "p95": stats["p95"]} for name, stats in by_category(samples).items()
        },
        "failures": sum(s.status != 200 for s in samples),
        "served_by": {name: after.get(name, 0) - before.get(name, 0) for name in after},
        "cpu_ms_per_request": {part: round(seconds * 1000 / len(samples), 1) for part, seconds in cpu.items()},
        "postgres_cpu_ms_per_read": round(cpu["postgres"] * 1000 / len(samples), 3),
        "cpus_busy": round(sum(cpu.values()) / wall, 2),
    }


# -- one replica against one single node ------------------------------------------------------------------------


def direct_cpu(stack: Stack, target: Replica) -> dict[str, float]:
    """CPU seconds used so far by ``target``'s process tree, by PostgreSQL and by this process (the clients)."""
    assert target.process is not None
    times = os.times()
    return {
        "service": cpu_s(target.process.pid),
        "postgres": cpu_s(postmaster_pid(stack)),
        "clients": times.user + times.system,
    }


def health(base_url: str) -> JsonDict:
    answer = httpx.get(base_url + "/healthz", timeout=REQUEST_TIMEOUT_S)
    answer.raise_for_status()
    return cast(JsonDict, answer.json())


def direct_round(
    stack: Stack, target: Replica, mix: Sequence[BenchRequest], concurrency: int, keep_bodies: bool
) -> tuple[JsonDict, list[Sample]]:
    """The mix once on ``target``'s own port: its figures, and its samples."""
    before = direct_cpu(stack, target)
    samples, wall = run_mix(cast(Any, Endpoint(target.url)), KEY, mix, concurrency, keep_bodies=keep_bodies)
    after = direct_cpu(stack, target)
    cpu = {part: after[part] - before[part] for part in after}
    return {
        "requests": len(samples),
        "wall_s": round(wall, 3),
        "requests_per_s": round(len(samples) / wall, 1),
        "failures": sum(s.status != 200 for s in samples),
        "cpu_s": {part: round(seconds, 3) for part, seconds in cpu.items()},
    }, samples


def direct_summary(rounds: Sequence[JsonDict], samples: Sequence[Sample]) -> JsonDict:
    requests = sum(r["requests"] for r in rounds)
    wall = sum(r["wall_s"] for r in rounds)
    latency = by_category(samples)
    cpu = {part: sum(r["cpu_s"][part] for r in rounds) for part in rounds[0]["cpu_s"]}
    return {
        "requests": requests,
        "wall_s": round(wall, 2),
        "requests_per_s": round(requests / wall, 1),
        "rounds_requests_per_s": [r["requests_per_s"] for r in rounds],
        "p50_ms": latency["all"]["p50"],
        "p95_ms": latency["all"]["p95"],
        "latency_by_category_ms": {
            name: {"p50": stats["p50"], "p95": stats["p95"]} for name, stats in latency.items() if name != "all"
        },
        "failures": sum(r["failures"] for r in rounds),
        "cpu_ms_per_request": {part: round(seconds * 1000 / requests, 3) for part, seconds in cpu.items()},
    }


def single_vs_replica(
    stack: Stack, replica: Replica, mix: Sequence[BenchRequest], concurrency: int, rounds: int
) -> JsonDict:
    """The mix on the single node's port and on ``replica``'s, ``rounds`` times each, interleaved (single, replica,
    replica, single, ...). The first round of each keeps its answers, to compare them."""
    targets = {"single": stack.single, "replica": replica}
    figures: dict[str, list[JsonDict]] = {name: [] for name in targets}
    samples: dict[str, list[Sample]] = {name: [] for name in targets}
    first: dict[str, list[Sample]] = {}
    order = []
    for number in range(rounds):
        names = ["single", "replica"] if number % 2 == 0 else ["replica", "single"]
        for name in names:
            round_figures, round_samples = direct_round(stack, targets[name], mix, concurrency, number == 0)
            figures[name].append(round_figures)
            samples[name] += round_samples
            first.setdefault(name, round_samples)
            order.append(name)
            print(f"  round {number + 1}, {name}: {round_figures['requests_per_s']} req/s")
    single, copy = (direct_summary(figures[name], samples[name]) for name in ("single", "replica"))
    pairs = zip(first["single"], first["replica"], strict=True)
    compared = [(a, b) for a, b in pairs if a.status == 200 and b.status == 200]
    return {
        "replica": replica.name,
        "rounds": rounds,
        "order": order,
        "single": {**single, "health": health(stack.single.url)},
        "one_replica": {**copy, "health": health(replica.url)},
        "ratio_replica_over_single": round(copy["requests_per_s"] / single["requests_per_s"], 3),
        "ratio_by_round": [
            round(b["requests_per_s"] / a["requests_per_s"], 3)
            for a, b in zip(figures["single"], figures["replica"], strict=True)
        ],
        "answers_compared": len(compared),
        "answers_same_total": sum(a.total == b.total for a, b in compared),
        "answers_same_ids": sum(a.ids == b.ids for a, b in compared),
        "answers_same_id_sets": sum(set(a.ids) == set(b.ids) for a, b in compared),
    }


# -- the rate limit ---------------------------------------------------------------------------------------------


def restart_with_rate_limit(stack: Stack) -> None:
    for replica in stack.replicas:
        replica.stop()
        replica.env.update(PRECON_SERVICE_RATE_LIMIT=f"{RATE_LIMIT:g}", PRECON_SERVICE_RATE_BURST=str(RATE_BURST))
        replica.start(wait=False)
    for replica in stack.replicas:
        replica.wait_healthy()
        stack.proxy.wait_status(replica.name, "UP")


def rate_limit(stack: Stack, seconds: float, concurrency: int) -> JsonDict:
    """One key as fast as ``concurrency`` clients go for ``seconds``: how many got through."""
    statuses: Counter[int] = Counter()
    lock = threading.Lock()
    stop = threading.Event()

    def hammer() -> None:
        with http(stack.proxy.url) as client:
            while not stop.is_set():
                try:
                    status = client.get("/v1/all/search_listings", params={"perPage": "1"}).status_code
                except httpx.HTTPError:
                    status = 0
                with lock:
                    statuses[status] += 1

    before = stack.served_by()
    threads = [threading.Thread(target=hammer) for _ in range(concurrency)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started
    after = stack.served_by()
    allowed = statuses[200]
    ceiling = RATE_BURST + RATE_LIMIT * elapsed
    return {
        "rate_per_s": RATE_LIMIT,
        "burst": RATE_BURST,
        "seconds": round(elapsed, 2),
        "requests": sum(statuses.values()),
        "allowed": allowed,
        "refused_429": statuses[429],
        "other": {str(k): v for k, v in statuses.items() if k not in (200, 429)},
        "ceiling": round(ceiling, 1),
        "allowed_over_ceiling": round(allowed / ceiling, 2),
        "held": allowed <= ceiling * 1.05,
        "served_by": {name: after.get(name, 0) - before.get(name, 0) for name in after},
    }


# -- the run ----------------------------------------------------------------------------------------------------


def code_version() -> str:
    """The commit measured, and whether the service's code had changes not yet committed."""

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout.strip()

    changed = git("status", "--porcelain", "--", "precon")
    return git("rev-parse", "--short", "HEAD") + (" with uncommitted changes to precon/" if changed else "")


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    shutil.rmtree(WORK_DIR, ignore_errors=True)
    WORK_DIR.mkdir(parents=True)
    print(f"Precon cluster benchmark: {args.listings:,} listings; logs in {WORK_DIR}")
    load_at_start = round(os.getloadavg()[0], 1)
    notes: list[str] = []
    try:
        interval = args.switch_interval_ms
        tuned = {} if interval is None else {"PRECON_SERVICE_SWITCH_INTERVAL_MS": str(interval)}
        stack = Stack.start(args.listings, args.seed, tuned)
    except (StackError, RuntimeError, OSError) as error:
        print(f"FAILED to start: {error}", file=sys.stderr)
        return 2
    try:
        single_started = time.perf_counter()
        stack.single.start(wait=False)
        first = stack.replicas[0].start()
        stack.proxy.wait_status(first.name, "UP")
        print(
            f"{first.name} healthy after {first.started_s:.1f} s (its first start generates the catalogue; the single "
            "node generated its own at the same time)"
        )
        stack.single.wait_healthy()
        single_started_s = time.perf_counter() - single_started
        print(f"single node healthy after {single_started_s:.1f} s")
        rng = random.Random(args.seed)
        vocabulary = read_vocabulary(stack, rng)
        warmup = build_mix(60, vocabulary, rng)
        mix = build_mix(args.requests, vocabulary, rng)
        runs = []
        for count, replica in enumerate(stack.replicas, 1):
            if count > 1:
                replica.start()
                stack.proxy.wait_status(replica.name, "UP")
                print(f"{replica.name} healthy after {replica.started_s:.1f} s and in HAProxy's rotation")
            warmed = warm(replica, warmup)
            runs.append({**throughput(stack, count, mix, args.concurrency), "warm": warmed})
            print(
                f"throughput with {count} replica(s): {runs[-1]['requests_per_s']} req/s; PostgreSQL "
                f"{runs[-1]['postgres_cpu_ms_per_read']} CPU ms per read (warmed in {warmed['passes']} passes, "
                f"{warmed['seconds']} s)"
            )
            if count == 1:
                print(f"one replica against the single node, each on its own port, {args.rounds} rounds each:")
                single_warmed = warm(stack.single, warmup)
                compared = single_vs_replica(stack, replica, mix, args.concurrency, args.rounds)
                compared["single"].update(started_s=round(single_started_s, 1), warm=single_warmed)
                print(f"  replica/single: {compared['ratio_replica_over_single']} x")
                stack.single.stop()

        print(f"write-to-read lag: {LAG_AT_REST_S:g} s of writes into PostgreSQL with nothing else running")
        at_rest = write_lag(stack, mix, 0, LAG_AT_REST_S, args.seed + 1)
        print(
            f"  {at_rest['writes']} writes; lag p50 {at_rest['listing']['p50_ms']} ms, p99 "
            f"{at_rest['listing']['p99_ms']} ms, max {at_rest['listing']['max_ms']} ms"
        )
        print(f"write-to-read lag: {args.lag_seconds:g} s of writes into PostgreSQL under the mix through HAProxy")
        lagged = write_lag(stack, mix, args.concurrency, args.lag_seconds, args.seed)
        print(
            f"  {lagged['writes']} writes; lag p50 {lagged['listing']['p50_ms']} ms, p99 {lagged['listing']['p99_ms']}"
            f" ms, max {lagged['listing']['max_ms']} ms"
        )

        subscription = subscribe(stack)
        if not subscription["shared"]:
            notes.append(
                "webhook subscriptions are kept per replica (each replica's data directory): the subscription made "
                f"through HAProxy was made again on {', '.join(subscription['subscribed_again_on'])}; an event stays "
                "in the outbox of the replica that took its trigger, so events of a killed replica are lost and none "
                "can be sent twice by another"
            )
        rewarmed = rewarm(stack, warmup, REWARM_SLOWER * max(run["warm"]["last_pass_s"] for run in runs))
        print(f"replicas warmed again after the writes: {rewarmed}")
        print(f"failover: {args.seconds:g} s of the mix and webhook triggers through HAProxy")
        failed = failover(stack, mix, args.concurrency, args.seconds)

        print("rate limit: the replicas restarted with a limit")
        restart_with_rate_limit(stack)
        limited = rate_limit(stack, args.limit_seconds, args.concurrency)
    except (StackError, httpx.HTTPError) as error:
        print(f"FAILED: {error}", file=sys.stderr)
        return 2
    finally:
        stack.stop()
    if (os.cpu_count() or 1) <= REPLICAS:
        notes.append(
            f"{os.cpu_count()} CPUs for PostgreSQL, HAProxy, {REPLICAS} replicas and the clients together: throughput "
            "cannot grow with replicas past the machine's cores"
        )
    report = {
        "code": code_version(),
        "listings": args.listings,
        "seed": args.seed,
        "switch_interval_ms": args.switch_interval_ms,
        "cpus": os.cpu_count(),
        "load_average": {"start": load_at_start, "end": round(os.getloadavg()[0], 1)},
        "concurrency": args.concurrency,
        "replicas": REPLICAS,
        "mix_requests": args.requests,
        "throughput": runs,
        "single_vs_replica": compared,
        "write_lag": lagged,
        "write_lag_at_rest": at_rest,
        "warmed_after_writes": rewarmed,
        "subscriptions_shared": subscription["shared"],
        "failover": failed,
        "rate_limit": limited,
        "notes": notes,
    }
    report["targets"] = targets(report)
    print_report(report)
    out = OUT_DIR / "cluster.json"
    out.write_bytes(orjson.dumps(report, option=orjson.OPT_INDENT_2))
    print(f"figures written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
