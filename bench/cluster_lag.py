"""The cluster bench's write-to-read lag (``bench/cluster.py``, step 4): a writer upserting into PostgreSQL while
the mix runs, a poller per replica waiting for each write to show."""

from __future__ import annotations

import random
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import psycopg

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH_DIR))

from cluster_failover import Failover, query_loop  # noqa: E402
from cluster_stack import DATABASE, KEY, REQUEST_TIMEOUT_S, JsonDict, Stack, cpu_by_part, warm  # noqa: E402
from lean_http import LeanClient  # noqa: E402
from load import by_category, percentiles  # noqa: E402
from mix import BenchRequest  # noqa: E402
from stack import Replica  # noqa: E402

from precon.service.config import DEV_PRODUCT_ID  # noqa: E402
from precon.service.stores.postgres.store import PostgresCatalogueStore  # noqa: E402

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
REWARM_MIN_S = 15.0
REWARM_SLOWER = 5.0
"""After the writes, a replica is warm again when a pass takes at most this many times its last warm-up pass's
time before them (the slowest replica's)."""


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
