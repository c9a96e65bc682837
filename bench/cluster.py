"""The service past one machine, on loopback: PostgreSQL, Redis, HAProxy (deploy/haproxy.cfg) and 3 replicas.

What it does, in one run (``make bench-cluster``; ``--quick`` for a short one):

1. Starts a throw-away PostgreSQL cluster (tests/pg_support.py's, here with fsync and synchronous commits on, as a
   real server has them), a redis-server, a webhook receiver, HAProxy running deploy/haproxy.cfg with three
   replicas declared, and the first replica (``precon serve --workers 1 --dev``, its own data directory, sharing
   PostgreSQL and Redis through ``PRECON_SERVICE_DATABASE_URL`` and ``PRECON_SERVICE_REDIS_URL``), which
   generates the catalogue (``--listings``) into PostgreSQL on its first start.
2. Throughput: bench/service.py's query mix (text, facets, filters, distance) through HAProxy at concurrency
   ``--concurrency``, with 1 replica, then 2, then 3 (each new replica warmed on its own port first).
3. Failover: the mix through HAProxy and a stream of webhook events (``trigger_profile_webhook``, one
   ``profile.updated`` delivery each to the receiver) for ``--seconds``; halfway, one replica is killed with
   SIGKILL. Reported: requests that failed as clients saw them (GETs are retried on another replica by HAProxy,
   and so are the triggers, each sent with a fresh ``Idempotency-Key``, see deploy/haproxy.cfg; a trigger whose
   connection failed all the same is sent again by the client with the same key, twice at most, and counted
   failed only then), triggers sent again and answers replayed, events acknowledged but never
   delivered (lost), deliveries that came twice (the same ``webhook-id``), and how long HAProxy took to take the
   replica out. The killed replica is then started again and rejoins.
4. Rate limit: the replicas restarted with ``PRECON_SERVICE_RATE_LIMIT``/``RATE_BURST`` set, and one key hammers
   through HAProxy for ``--limit-seconds``: the requests let through against ``burst + rate x seconds``, what one
   limit across all replicas allows (a limiter per replica would let through up to 3 times that).

Figures go to stdout (a table at the end) and, as JSON, to ``bench/out/cluster.json``; logs of every part to
``bench/out/cluster/``. Exits non-zero when a part fails to start.

Run (from the project root)::

    .venv/bin/python bench/cluster.py            # 20,000 listings, 30 s of failover
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

import service  # noqa: E402
from lean_http import LeanClient  # noqa: E402
from service import (  # noqa: E402
    OUT_DIR,
    BenchRequest,
    Sample,
    Vocabulary,
    build_mix,
    by_category,
    process_tree,
    run_mix,
)
from stack import HAProxy, Receiver, Redis, Replica, StackError, free_port  # noqa: E402

from precon.service.config import DEV_API_KEY, DEV_PRODUCT_ID  # noqa: E402
from tests.pg_support import Cluster, find_bindir  # noqa: E402

service.PRODUCT = DEV_PRODUCT_ID  # the mix names a product: the development key's, which every replica seeds
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
POSTGRES_SETTINGS = ("max_connections=300", "fsync=on", "synchronous_commit=on", "full_page_writes=on")

JsonDict = dict[str, Any]


@dataclass(frozen=True)
class Endpoint:
    """What bench/service.py's ``run_mix`` needs of a service: where it answers."""

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
    args = parser.parse_args(argv)
    args.listings = args.listings or (5_000 if args.quick else 20_000)
    args.requests = args.requests or (300 if args.quick else 800)
    args.seconds = args.seconds or (12.0 if args.quick else 30.0)
    args.limit_seconds = args.limit_seconds or (4.0 if args.quick else 8.0)
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
        return cls(postgres, redis, receiver, replicas, proxy, env)

    def stop(self) -> None:
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
    """User and system CPU seconds of one process and its live descendants."""
    total = 0
    for member in process_tree(pid):
        try:
            stat = Path(f"/proc/{member}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        total += int(fields[11]) + int(fields[12])
    return total / TICKS_PER_S


def cpu_by_part(stack: Stack) -> dict[str, float]:
    """CPU seconds used so far by the replicas (together), PostgreSQL (every backend), HAProxy, Redis, and this
    process (the clients, the receiver)."""
    postmaster = int((stack.postgres.data / "postmaster.pid").read_text().split()[0])
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
        "cpus_busy": round(sum(cpu.values()) / wall, 2),
    }


def warm(replica: Replica, mix: Sequence[BenchRequest]) -> None:
    """The mix's first requests on the replica's own port, so that its first measured answers are not its first."""
    run_mix(cast(Any, Endpoint(replica.url)), KEY, mix, 4)


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
            sample, _ = service._send(client, mix[position % len(mix)])
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


def print_report(report: JsonDict) -> None:
    runs, fail, limit = report["throughput"], report["failover"], report["rate_limit"]
    hooks = fail["webhooks"]
    print(
        f"\nPrecon cluster on loopback: {report['listings']:,} listings, {report['cpus']} CPUs, concurrency "
        f"{report['concurrency']}, PostgreSQL + Redis + HAProxy + {REPLICAS} replicas (precon serve --workers 1); "
        f"code {report['code']}; load average {report['load_average']['start']} at the start, "
        f"{report['load_average']['end']} at the end"
    )
    print(f"{'replicas':>8} {'requests':>9} {'req/s':>8} {'p50 ms':>8} {'p95 ms':>8} {'failed':>7}  served by")
    for run in runs:
        served = ", ".join(f"{name} {count}" for name, count in run["served_by"].items() if count)
        print(
            f"{run['replicas']:>8} {run['requests']:>9} {run['requests_per_s']:>8.1f} {run['p50_ms']:>8.1f} "
            f"{run['p95_ms']:>8.1f} {run['failures']:>7}  {served}"
        )
    for run in runs:
        categories = {k: v for k, v in run["latency_by_category_ms"].items() if k != "all"}
        print(
            f"  {run['replicas']} replica(s), p50/p95 ms by category: "
            + ", ".join(f"{name} {stats['p50']:.0f}/{stats['p95']:.0f}" for name, stats in categories.items())
        )
    print(f"\nCPU ms per request ({report['cpus']} CPUs on the machine):")
    parts = list(runs[0]["cpu_ms_per_request"])
    print(f"{'replicas':>8} " + " ".join(f"{part:>9}" for part in parts) + f" {'CPUs busy':>10}")
    for run in runs:
        shares = " ".join(f"{run['cpu_ms_per_request'][part]:>9.1f}" for part in parts)
        print(f"{run['replicas']:>8} {shares} {run['cpus_busy']:>10.2f}")
    rows = [
        ("failed requests seen by clients (target 0)", f"{fail['get_failures'] + fail['post_failures']}"),
        ("  queries (GET)", f"{fail['get_failures']} of {fail['get_requests']} {fail['get_failed_statuses'] or ''}"),
        (
            "  webhook triggers (POST)",
            f"{fail['post_failures']} of {fail['post_requests']} {fail['post_failed_statuses'] or ''}",
        ),
        (
            "  triggers resent by the client / replayed",
            f"{fail['post_retried_by_client']} ({fail['post_resends_by_client']} resends) / "
            f"{fail['post_answers_replayed']}",
        ),
        ("HAProxy retries / redispatches", f"{fail['haproxy_retries']} / {fail['haproxy_redispatches']}"),
        (
            f"{fail['killed']} killed at / marked DOWN after",
            f"{fail['killed_at_s']} s / {fail['marked_down_after_s']} s",
        ),
        ("webhook events acknowledged", f"{hooks['events_expected']}"),
        ("webhook events lost (target 0)", f"{hooks['lost']}"),
        ("webhook deliveries sent twice (same webhook-id)", f"{hooks['sent_twice']}"),
        ("deliveries of unacknowledged triggers", f"{hooks['unannounced']}"),
        ("deliveries failing their signature", f"{hooks['bad_signatures']}"),
        ("all acknowledged events delivered within", f"{fail['all_delivered_within_s']} s after the stream"),
        ("shared outbox empty (copies sent) within", f"{fail['outbox_drained_within_s']} s after the stream"),
        ("killed replica restarted, back in rotation after", f"{fail['rejoined_after_restart_s']} s"),
        (
            f"rate limit {limit['rate_per_s']:g}/s burst {limit['burst']} over {limit['seconds']} s",
            f"{limit['allowed']} let through of {limit['requests']} (ceiling {limit['ceiling']}; "
            f"{limit['allowed_over_ceiling']} x) {'held' if limit['held'] else 'NOT held'} across replicas",
        ),
    ]
    print(f"\nFailover ({fail['seconds']} s, mix + webhook stream through HAProxy, one replica killed with SIGKILL):")
    for label, value in rows:
        print(f"  {label:<50} {value}")
    if fail["post_failures"]:
        print(
            "  (a POST the killed replica held gets no answer: HAProxy closes the client's connection as the replica's"
            " closed, and does not send it again, since it may have been done; GETs are sent to another replica)"
        )
    for note in report["notes"]:
        print(f"note: {note}")


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
        first = stack.replicas[0].start()
        stack.proxy.wait_status(first.name, "UP")
        print(f"{first.name} healthy after {first.started_s:.1f} s (its first start generates the catalogue)")
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
            warm(replica, warmup)
            runs.append(throughput(stack, count, mix, args.concurrency))
            print(f"throughput with {count} replica(s): {runs[-1]['requests_per_s']} req/s")

        subscription = subscribe(stack)
        if not subscription["shared"]:
            notes.append(
                "webhook subscriptions are kept per replica (each replica's data directory): the subscription made "
                f"through HAProxy was made again on {', '.join(subscription['subscribed_again_on'])}; an event stays "
                "in the outbox of the replica that took its trigger, so events of a killed replica are lost and none "
                "can be sent twice by another"
            )
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
        "mix_requests": args.requests,
        "throughput": runs,
        "subscriptions_shared": subscription["shared"],
        "failover": failed,
        "rate_limit": limited,
        "notes": notes,
    }
    print_report(report)
    out = OUT_DIR / "cluster.json"
    out.write_bytes(orjson.dumps(report, option=orjson.OPT_INDENT_2))
    print(f"figures written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
