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
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import httpx
import orjson
import psycopg

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH_DIR))

import mix as query_mix  # noqa: E402
from cluster_report import print_report, targets  # noqa: E402
from lean_http import LeanClient  # noqa: E402
from load import Sample, by_category, percentiles, run_mix, send  # noqa: E402
from mix import BenchRequest, Vocabulary, build_mix  # noqa: E402
from serving import OUT_DIR, process_tree  # noqa: E402
from stack import HAProxy, Receiver, Redis, Replica, StackError, free_port  # noqa: E402

from precon.service.config import DEV_API_KEY, DEV_PRODUCT_ID  # noqa: E402
from precon.service.stores.postgres.store import PostgresCatalogueStore  # noqa: E402
from tests.pg_support import Cluster, find_bindir  # noqa: E402

query_mix.PRODUCT = DEV_PRODUCT_ID  # the mix names a product: the development key's, which every replica seeds
KEY = DEV_API_KEY
REPLICAS = 3
WORK_DIR = OUT_DIR / "cluster"
DATABASE = "precon"
REQUEST_TIMEOUT_S = 30.0
WEBHOOK_WAIT_S = 90.0
"""How long to wait for the deliveries of acknowledged events after the stream ends: longer than a claim's lease
(a delivery claimed by the killed replica is due again when its lease runs out)."""
TRIGGER_PAUSE_S = 0.05
"""Between two triggers of one webhook thread (two threads: about 40 events a second at most)."""
WEBHOOK_THREADS = 2
TRIGGER_RETRIES = 2
"""How many times a trigger whose connection failed is sent again, with the same Idempotency-Key."""
TRIGGER_BACKOFF_S = 0.2
"""The wait before the first resend of a trigger (doubled before the next)."""
PROFILES = 50
RECEIVER_DELAY_S = 0.2
"""The receiver answers each delivery this long after it arrived: deliveries are in flight when the replica is
killed, as they would be with a real receiver (one it had posted but not yet recorded is sent again)."""
RATE_LIMIT = 20.0
RATE_BURST = 40
LAG_INTERVAL_S = (0.5, 1.0)
"""The writer's pause between two writes, drawn uniformly from this range."""
LAG_POLL_S = 0.01
"""The pollers' pause between two looks at their replica."""
LAG_GIVE_UP_S = 15.0
"""How long after the last write the pollers go on waiting for writes not yet seen (counted unseen after)."""
LAG_LISTINGS = 200
"""The listings the writer takes in turn (more than it writes, so each is written once)."""
MAX_LAG_IDS = 50
"""At most this many written listings asked for in one poll (the latest not yet seen)."""
LAG_AT_REST_S = 8.0
"""The writes without the mix first, for how long (the lag with nothing else running)."""
WARM_MIN_S = 3.0
WARM_MAX_S = 60.0
WARM_STEADY = 0.15
REWARM_MIN_S = 15.0
REWARM_MAX_S = 120.0
REWARM_SLOWER = 5.0
"""After the writes, a replica is warm again when a pass takes at most this many times its last warm-up pass's
time before them (the slowest replica's)."""
POSTGRES_SETTINGS = ("max_connections=300", "fsync=on", "synchronous_commit=on", "full_page_writes=on")

JsonDict = dict[str, Any]


@dataclass(frozen=True)
class Endpoint:
    """What bench/load.py's ``run_mix`` needs of a service: where it answers."""

    base_url: str


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
    args = parser.parse_args(argv)
    args.listings = args.listings or (5_000 if args.quick else 20_000)
    args.requests = args.requests or (300 if args.quick else 800)
    args.seconds = args.seconds or (12.0 if args.quick else 30.0)
    args.limit_seconds = args.limit_seconds or (4.0 if args.quick else 8.0)
    args.lag_seconds = args.lag_seconds or (12.0 if args.quick else 30.0)
    return args


# -- the parts --------------------------------------------------------------------------------------------------


@dataclass
class Stack:
    postgres: Cluster
    redis: Redis
    receiver: Receiver
    replicas: list[Replica]
    proxy: HAProxy
    env: dict[str, str]
    single: Replica
    """The single node measured against one replica: SQLite in its own data directory, no PostgreSQL, no Redis."""

    @classmethod
    def start(cls, listings: int, seed: int) -> Stack:
        bindir = find_bindir()
        if bindir is None:
            raise StackError("PostgreSQL is not installed (apt-get install -y postgresql)")
        postgres = Cluster(bindir)
        redis: Redis | None = None
        try:
            postgres.start(POSTGRES_SETTINGS)
            postgres.execute(f"CREATE DATABASE {DATABASE}")
            redis = Redis.start()
            return cls._start(postgres, redis, listings, seed)
        except BaseException:
            if redis is not None:
                redis.stop()
            postgres.stop()
            raise

    @classmethod
    def _start(cls, postgres: Cluster, redis: Redis, listings: int, seed: int) -> Stack:
        receiver = Receiver(delay_s=RECEIVER_DELAY_S).start()
        env = {
            "PRECON_SERVICE_DATABASE_URL": postgres.url(DATABASE),
            "PRECON_SERVICE_REDIS_URL": redis.url,
            "PRECON_SERVICE_DEFAULT_LISTINGS": str(listings),
            "PRECON_SERVICE_DEFAULT_SEED": str(seed),
            "PRECON_SERVICE_RATE_LIMIT": "0",
            "PRECON_SERVICE_WEBHOOK_FIRST_DELAY": "0",
            "PRECON_SERVICE_WEBHOOK_RETRY_SCHEDULE": "[1, 2, 5, 10]",
        }
        replicas = [
            Replica(f"replica{number}", free_port(), WORK_DIR / f"replica{number}", dict(env))
            for number in range(1, REPLICAS + 1)
        ]
        proxy = HAProxy.start([r.address for r in replicas], WORK_DIR)
        single_env = {
            "PRECON_SERVICE_DEFAULT_LISTINGS": str(listings),
            "PRECON_SERVICE_DEFAULT_SEED": str(seed),
            "PRECON_SERVICE_RATE_LIMIT": "0",
        }
        single = Replica("single", free_port(), WORK_DIR / "single", single_env)
        return cls(postgres, redis, receiver, replicas, proxy, env, single)

    def stop(self) -> None:
        self.single.stop()
        for replica in self.replicas:
            replica.stop()
        self.proxy.stop()
        self.receiver.stop()
        self.redis.stop()
        self.postgres.stop()

    def served_by(self) -> dict[str, int]:
        """Requests each replica has been sent by HAProxy so far (``stot``)."""
        return {name: int(row["stot"] or 0) for name, row in self.proxy.servers().items()}


def http(base_url: str) -> httpx.Client:
    return httpx.Client(base_url=base_url, headers={"x-api-key": KEY}, timeout=REQUEST_TIMEOUT_S)


def read_vocabulary(stack: Stack, rng: random.Random) -> Vocabulary:
    """The mix's words, values and places, from the listings as PostgreSQL holds them."""
    with psycopg.connect(stack.postgres.conninfo(DATABASE)) as db:
        docs = [orjson.loads(text) for (text,) in db.execute("SELECT doc::text FROM listings ORDER BY listing_id")]
    return Vocabulary.of(docs, rng)


# -- throughput -------------------------------------------------------------------------------------------------


TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def _cpu_s(pid: int) -> float:
    """User and system CPU seconds of one process and its live descendants, and of the descendants they reaped
    (``cutime``, ``cstime``): a PostgreSQL backend that ended between two looks still counts, in the postmaster's."""
    total = 0
    for member in process_tree(pid):
        try:
            stat = Path(f"/proc/{member}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        total += int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])
    return total / TICKS_PER_S


def postmaster_pid(stack: Stack) -> int:
    return int((stack.postgres.data / "postmaster.pid").read_text().split()[0])


def cpu_by_part(stack: Stack) -> dict[str, float]:
    """CPU seconds used so far by the replicas (together), PostgreSQL (every backend), HAProxy, Redis, and this
    process (the clients, the receiver)."""
    postmaster = postmaster_pid(stack)
    replicas = [r.process.pid for r in stack.replicas if r.process is not None and r.process.poll() is None]
    times = os.times()
    return {
        "replicas": sum(_cpu_s(pid) for pid in replicas),
        "postgres": _cpu_s(postmaster),
        "haproxy": _cpu_s(stack.proxy.process.pid),
        "redis": _cpu_s(stack.redis.process.pid),
        "clients": times.user + times.system,
    }


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


def warm(
    replica: Replica, mix: Sequence[BenchRequest], min_s: float = 0.0, pass_within_s: float | None = None
) -> JsonDict:
    """The mix's first requests on the replica's own port, again and again until two passes in a row take about
    as long (and for :data:`WARM_MIN_S` or ``min_s`` at least, and until a pass takes ``pass_within_s`` at most
    where given), so that its first measured answers are not its first: a
    replica builds its in-memory indexes on a thread after its first searches, answering by SQL meanwhile."""
    started = time.monotonic()
    walls: list[float] = []
    while time.monotonic() - started < (WARM_MAX_S if pass_within_s is None else REWARM_MAX_S):
        walls.append(run_mix(cast(Any, Endpoint(replica.url)), KEY, mix, 4)[1])
        steady = len(walls) >= 3 and abs(walls[-1] - walls[-2]) <= WARM_STEADY * walls[-2]
        fast = pass_within_s is None or walls[-1] <= pass_within_s
        if steady and fast and time.monotonic() - started >= max(WARM_MIN_S, min_s):
            break
    return {
        "passes": len(walls),
        "seconds": round(time.monotonic() - started, 1),
        "last_pass_s": round(walls[-1], 3),
        "first_pass_s": round(walls[0], 3),
    }


# -- one replica against one single node ------------------------------------------------------------------------


def direct_cpu(stack: Stack, target: Replica) -> dict[str, float]:
    """CPU seconds used so far by ``target``'s process tree, by PostgreSQL and by this process (the clients)."""
    assert target.process is not None
    times = os.times()
    return {
        "service": _cpu_s(target.process.pid),
        "postgres": _cpu_s(postmaster_pid(stack)),
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


# -- write-to-read lag ------------------------------------------------------------------------------------------


@dataclass
class Write:
    number: int
    listing_id: str
    token: str
    started_at: float
    committed_at: float
    """When ``upsert_listings`` returned (after the commit)."""
    generation: int
    """The catalogue's generation read right after the commit (the writer is the only one writing)."""
    seen: dict[str, float] = field(default_factory=dict)
    """Per replica, when the first answer showing the token arrived."""
    generation_seen: dict[str, float] = field(default_factory=dict)
    """Per replica, when the first ``/healthz`` holding the write's generation arrived."""


@dataclass
class LagState:
    writes: list[Write] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    writing_done: threading.Event = field(default_factory=threading.Event)
    give_up_at: float = float("inf")
    poll_ms: list[float] = field(default_factory=list)
    poll_failures: Counter[str] = field(default_factory=Counter)


def writer_loop(store: PostgresCatalogueStore, originals: JsonDict, seconds: float, seed: int, lag: LagState) -> None:
    rng = random.Random(seed)
    ids = list(originals)
    deadline = time.monotonic() + seconds
    number = 0
    try:
        while time.monotonic() < deadline:
            listing_id = ids[number % len(ids)]
            token = f"lagtoken{number}x{uuid.uuid4().hex[:8]}"
            record = {**originals[listing_id], "name": f"{originals[listing_id].get('name') or 'Listing'} {token}"}
            started = time.monotonic()
            store.upsert_listings([record])
            committed = time.monotonic()
            generation = store.generation()
            with lag.lock:
                lag.writes.append(Write(number, listing_id, token, started, committed, generation))
            number += 1
            time.sleep(rng.uniform(*LAG_INTERVAL_S))
    finally:
        lag.give_up_at = time.monotonic() + LAG_GIVE_UP_S
        lag.writing_done.set()


def poller_loop(replica: Replica, lag: LagState) -> None:
    """Asks ``replica``'s own port for the writes it has not shown yet, every :data:`LAG_POLL_S`."""
    name = replica.name
    with LeanClient(replica.url, {"x-api-key": KEY}, timeout=REQUEST_TIMEOUT_S) as client:
        while True:
            with lag.lock:
                unseen = [w for w in lag.writes if name not in w.seen][-MAX_LAG_IDS:]
                behind = [w for w in lag.writes if name not in w.generation_seen]
            if lag.writing_done.is_set() and (not (unseen or behind) or time.monotonic() > lag.give_up_at):
                return
            if unseen:
                params = {"ids": ",".join(w.listing_id for w in unseen), "product_id": DEV_PRODUCT_ID}
                sent = time.monotonic()
                status, body = client.get("/v1/all/multiple_listings", {**params, "retrieveAttributes": "name"})
                arrived = time.monotonic()
                if status == 200:
                    names = {
                        r.get("listingId") or r.get("objectID"): r.get("name") or ""
                        for r in orjson.loads(body)["results"]
                    }
                    with lag.lock:
                        lag.poll_ms.append((arrived - sent) * 1000)
                        for write in unseen:
                            if write.token in names.get(write.listing_id, ""):
                                write.seen[name] = arrived
                else:
                    with lag.lock:
                        lag.poll_failures[f"{name} listings {status}"] += 1
            if behind:
                status, body = client.get("/healthz")
                arrived = time.monotonic()
                if status == 200:
                    generation = int(orjson.loads(body).get("generation") or 0)
                    with lag.lock:
                        for write in behind:
                            if generation >= write.generation:
                                write.generation_seen[name] = arrived
                else:
                    with lag.lock:
                        lag.poll_failures[f"{name} healthz {status}"] += 1
            time.sleep(LAG_POLL_S)


def lag_figures(lags_s: Sequence[float], unseen: int) -> JsonDict:
    found = percentiles([lag * 1000 for lag in lags_s])
    return {
        "seen": len(lags_s),
        "unseen": unseen,
        "p50_ms": found["p50"],
        "p99_ms": found["p99"],
        "max_ms": round(max(lags_s) * 1000, 1) if lags_s else None,
    }


def write_lag(stack: Stack, mix: Sequence[BenchRequest], concurrency: int, seconds: float, seed: int) -> JsonDict:
    """Writes into PostgreSQL while the mix runs through HAProxy; how long each took to show on each replica."""
    conninfo = stack.postgres.conninfo(DATABASE)
    with psycopg.connect(conninfo) as db:
        query = "SELECT listing_id FROM listings ORDER BY md5(listing_id) LIMIT %s"
        ids = [row[0] for row in db.execute(query, (LAG_LISTINGS,))]
    store = PostgresCatalogueStore(conninfo, migrate=False, max_size=2)
    try:
        originals = store.get_listings(ids, None)
        load, lag = Failover(), LagState()
        replicas = [r for r in stack.replicas if r.process is not None and r.process.poll() is None]
        queries = [
            threading.Thread(target=query_loop, args=(stack.proxy.url, mix, n * 97, load)) for n in range(concurrency)
        ]
        pollers = [threading.Thread(target=poller_loop, args=(replica, lag)) for replica in replicas]
        writer = threading.Thread(target=writer_loop, args=(store, originals, seconds, seed, lag))
        cpu_before = cpu_by_part(stack)
        started = time.monotonic()
        for thread in [*queries, *pollers]:
            thread.start()
        time.sleep(1.0)  # the mix under way before the first write
        writer.start()
        writer.join()
        for thread in pollers:
            thread.join()
        load.stop.set()
        for thread in queries:
            thread.join()
        wall = time.monotonic() - started
        cpu_after = cpu_by_part(stack)
    finally:
        store.close()
    gets = [sample for _, sample in load.get_samples]
    writes = lag.writes
    per_replica: JsonDict = {}
    all_lags: list[float] = []
    all_generation_lags: list[float] = []
    unseen = unreached = 0
    for replica in replicas:
        lags = [w.seen[replica.name] - w.committed_at for w in writes if replica.name in w.seen]
        generation_lags = [
            w.generation_seen[replica.name] - w.committed_at for w in writes if replica.name in w.generation_seen
        ]
        per_replica[replica.name] = {
            "listing": lag_figures(lags, len(writes) - len(lags)),
            "generation": lag_figures(generation_lags, len(writes) - len(generation_lags)),
        }
        all_lags += lags
        all_generation_lags += generation_lags
        unseen += len(writes) - len(lags)
        unreached += len(writes) - len(generation_lags)
    write_ms = [(w.committed_at - w.started_at) * 1000 for w in writes]
    cpu = {part: cpu_after[part] - cpu_before[part] for part in cpu_after}
    return {
        "writes": len(writes),
        "write_seconds": round(writes[-1].committed_at - writes[0].started_at, 1) if writes else 0.0,
        "write_commit_ms": percentiles(write_ms),
        "replicas": len(replicas),
        "listing": lag_figures(all_lags, unseen),
        "generation": lag_figures(all_generation_lags, unreached),
        "per_replica": per_replica,
        "poll_request_ms": percentiles(lag.poll_ms),
        "poll_failures": dict(lag.poll_failures),
        "load_requests": len(gets),
        "load_requests_per_s": round(len(gets) / wall, 1),
        "load_failures": sum(s.status != 200 for s in gets),
        "load_p50_ms": by_category(gets)["all"]["p50"] if gets else None,
        "load_p95_ms": by_category(gets)["all"]["p95"] if gets else None,
        "replicas_cpu_ms_per_request": round(cpu["replicas"] * 1000 / len(gets), 2) if gets else None,
        "cpu_s": {part: round(seconds, 2) for part, seconds in cpu.items()},
    }


def rewarm(stack: Stack, mix: Sequence[BenchRequest], pass_within_s: float) -> dict[str, JsonDict]:
    """Every replica warmed at once, for :data:`REWARM_MIN_S` at least and until a pass of the warm-up takes
    ``pass_within_s`` at most: after a stream of writes each is still rebuilding its in-memory indexes (answering by
    SQL meanwhile, for tens of seconds at 20,000 listings), which the failover phase is not about."""
    found: dict[str, JsonDict] = {}

    def one(replica: Replica) -> None:
        found[replica.name] = warm(replica, mix, REWARM_MIN_S, pass_within_s)

    threads = [threading.Thread(target=one, args=(replica,)) for replica in stack.replicas]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return found


# -- webhooks and failover --------------------------------------------------------------------------------------


def subscribe(stack: Stack) -> JsonDict:
    """A ``profile.updated`` subscription of the receiver, made through HAProxy; each replica is then asked for it
    on its own port. Where a replica does not see it (subscriptions kept per replica), it is made there too."""
    body = {"env": "live", "targetUrl": stack.receiver.url, "event": "profile.updated"}
    with http(stack.proxy.url) as client:
        made = client.post("/v1/all/webhooks", json=body)
        made.raise_for_status()
    subscription = made.json()
    stack.receiver.secrets.append(subscription["secret"])
    per_replica = []
    for replica in stack.replicas:
        with http(replica.url) as client:
            listed = client.get("/v1/all/webhooks").json()["results"]
            if any(s["id"] == subscription["id"] for s in listed):
                continue
            again = client.post("/v1/all/webhooks", json=body)
            again.raise_for_status()
            stack.receiver.secrets.append(again.json()["secret"])
            per_replica.append(replica.name)
    return {"shared": not per_replica, "subscribed_again_on": per_replica}


def profiles(stack: Stack) -> list[tuple[str, str]]:
    with http(stack.proxy.url) as client:
        found = client.get("/v1/all/search_profiles", params={"collection": "Builders", "perPage": PROFILES})
        found.raise_for_status()
    return [(r.get("objectID") or r["id"], "Builders") for r in found.json()["results"]]


@dataclass
class Failover:
    get_samples: list[tuple[float, Sample]] = field(default_factory=list)
    posts: list[tuple[float, int | str]] = field(default_factory=list)
    """(time, status) of every trigger (the exception's name where no answer came)."""
    events: set[str] = field(default_factory=set)
    """Ids of the events the service acknowledged (a 200 to the trigger)."""
    deliveries_promised: int = 0
    retried_triggers: int = 0
    """Triggers answered after their connection failed and they were sent again with the same key."""
    retried_attempts: int = 0
    """Copies of triggers sent again after a failed connection."""
    replayed: int = 0
    """Answers marked ``Idempotent-Replayed: true``: a copy of a trigger some replica had already done."""
    lock: threading.Lock = field(default_factory=threading.Lock)
    stop: threading.Event = field(default_factory=threading.Event)


def query_loop(base_url: str, mix: Sequence[BenchRequest], offset: int, state: Failover) -> None:
    position = offset
    with LeanClient(base_url, {"x-api-key": KEY}, timeout=REQUEST_TIMEOUT_S) as client:
        while not state.stop.is_set():
            sample, _ = send(client, mix[position % len(mix)])
            with state.lock:
                state.get_samples.append((time.monotonic(), sample))
            position += 1


def trigger(client: httpx.Client, body: JsonDict, state: Failover) -> tuple[int | str, httpx.Response | None]:
    """One trigger with a fresh ``Idempotency-Key``, sent again with the same key (as a client library does, e.g.
    stripe-python) when its connection failed, up to :data:`TRIGGER_RETRIES` times after a short backoff: the
    service does it at most once whichever replica each copy reached. Its status (the exception's name where no
    copy got an answer) and the answer."""
    headers = {"Idempotency-Key": str(uuid.uuid4())}
    for attempt in range(TRIGGER_RETRIES + 1):
        try:
            answer = client.post("/v1/all/trigger_profile_webhook", json=body, headers=headers)
        except httpx.TransportError as error:  # no answer at all: the request may or may not have been done
            if attempt == TRIGGER_RETRIES:
                return type(error).__name__, None
            with state.lock:
                state.retried_attempts += 1
            time.sleep(TRIGGER_BACKOFF_S * 2**attempt)
            continue
        with state.lock:
            state.retried_triggers += int(attempt > 0)
            state.replayed += int(answer.headers.get("idempotent-replayed") == "true")
        return answer.status_code, answer
    raise AssertionError("unreachable")


def trigger_loop(base_url: str, chosen: Sequence[tuple[str, str]], offset: int, state: Failover) -> None:
    position = offset
    with http(base_url) as client:
        while not state.stop.is_set():
            profile_id, collection = chosen[position % len(chosen)]
            position += 1
            try:
                status, answer = trigger(client, {"id": profile_id, "collection": collection}, state)
            except httpx.HTTPError as error:
                status, answer = type(error).__name__, None
            with state.lock:
                state.posts.append((time.monotonic(), status))
                if status == 200 and answer is not None:
                    fired = answer.json()
                    state.events.add(fired["eventId"])
                    state.deliveries_promised += int(fired["deliveries"])
            state.stop.wait(TRIGGER_PAUSE_S)


def outbox_pending(stack: Stack) -> int | None:
    """Deliveries not yet done (due, or claimed and in flight) in the shared outbox; None where the outbox is not
    in PostgreSQL (each replica's own SQLite file)."""
    try:
        with psycopg.connect(stack.postgres.conninfo(DATABASE)) as db:
            row = db.execute("SELECT count(*) FROM webhook_deliveries WHERE status = 'pending'").fetchone()
    except psycopg.Error:
        return None
    return int(row[0]) if row else 0


def failover(stack: Stack, mix: Sequence[BenchRequest], concurrency: int, seconds: float) -> JsonDict:
    chosen = profiles(stack)
    state = Failover()
    threads = [
        threading.Thread(target=query_loop, args=(stack.proxy.url, mix, n * 97, state)) for n in range(concurrency)
    ]
    threads += [
        threading.Thread(target=trigger_loop, args=(stack.proxy.url, chosen, n * 7, state))
        for n in range(WEBHOOK_THREADS)
    ]
    victim = stack.replicas[1]
    retries_before = stack.proxy.retries()
    started = time.monotonic()
    for thread in threads:
        thread.start()
    time.sleep(seconds / 2)
    killed_at = time.monotonic()
    victim.kill()
    print(f"  {killed_at - started:.1f} s: kill -9 {victim.name} (pid {victim.process.pid if victim.process else '?'})")
    out_after_s = stack.proxy.wait_status(victim.name, "DOWN", timeout_s=seconds)
    print(f"  HAProxy marked {victim.name} DOWN {out_after_s:.1f} s after the kill")
    time.sleep(max(0.0, started + seconds - time.monotonic()))
    state.stop.set()
    for thread in threads:
        thread.join()
    ended = time.monotonic()
    retries, redispatches = (a - b for a, b in zip(stack.proxy.retries(), retries_before, strict=True))

    # Until every acknowledged event has arrived and the shared outbox holds nothing pending: a delivery the killed
    # replica had claimed is sent again by another once its lease runs out, and a second copy is counted too.
    waited_from = time.monotonic()
    shared_outbox = outbox_pending(stack) is not None
    delivered_within_s = drained_within_s = None
    while time.monotonic() - waited_from < WEBHOOK_WAIT_S:
        if delivered_within_s is None and not stack.receiver.tally(state.events)["lost"]:
            delivered_within_s = time.monotonic() - waited_from
        if shared_outbox and drained_within_s is None and outbox_pending(stack) == 0:
            drained_within_s = time.monotonic() - waited_from
        if delivered_within_s is not None and (drained_within_s is not None or not shared_outbox):
            break
        time.sleep(0.5)
    time.sleep(1.0)  # the answer to the last delivery recorded, its copy (if any) arrived
    tally = stack.receiver.tally(state.events)

    gets = [sample for _, sample in state.get_samples]
    after_kill = [sample for at, sample in state.get_samples if at >= killed_at]
    rejoin_started = time.perf_counter()
    victim.start()
    stack.proxy.wait_status(victim.name, "UP")
    rejoined_s = time.perf_counter() - rejoin_started
    print(f"  {victim.name} started again and back in HAProxy's rotation in {rejoined_s:.1f} s")
    return {
        "seconds": round(ended - started, 1),
        "killed": victim.name,
        "killed_at_s": round(killed_at - started, 1),
        "marked_down_after_s": round(out_after_s, 1),
        "get_requests": len(gets),
        "get_requests_after_kill": len(after_kill),
        "get_failures": sum(s.status != 200 for s in gets),
        "get_failed_statuses": dict(Counter(str(s.status) for s in gets if s.status != 200)),
        "get_requests_per_s": round(len(gets) / (ended - started), 1),
        "post_requests": len(state.posts),
        "post_failures": sum(status != 200 for _, status in state.posts),
        "post_failed_statuses": dict(Counter(str(status) for _, status in state.posts if status != 200)),
        "post_retried_by_client": state.retried_triggers,
        "post_resends_by_client": state.retried_attempts,
        "post_answers_replayed": state.replayed,
        "haproxy_retries": retries,
        "haproxy_redispatches": redispatches,
        "deliveries_promised": state.deliveries_promised,
        "webhooks": tally,
        "all_delivered_within_s": None if delivered_within_s is None else round(delivered_within_s, 1),
        "outbox_drained_within_s": None if drained_within_s is None else round(drained_within_s, 1),
        "rejoined_after_restart_s": round(rejoined_s, 1),
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
        stack = Stack.start(args.listings, args.seed)
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
