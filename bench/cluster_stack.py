"""The cluster bench's parts (``bench/cluster.py``): PostgreSQL, Redis, a webhook receiver, HAProxy, the replicas
and the single node, started and stopped together; a client of them; a replica warmed up."""

from __future__ import annotations

import os
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
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
from load import run_mix  # noqa: E402
from mix import BenchRequest, Vocabulary  # noqa: E402
from serving import OUT_DIR, process_tree  # noqa: E402
from stack import HAProxy, Receiver, Redis, Replica, StackError, free_port  # noqa: E402

from precon.service.config import DEV_API_KEY, DEV_PRODUCT_ID  # noqa: E402
from tests.pg_support import Cluster, find_bindir  # noqa: E402

query_mix.PRODUCT = DEV_PRODUCT_ID  # the mix names a product: the development key's, which every replica seeds
KEY = DEV_API_KEY
REPLICAS = 3
WORK_DIR = OUT_DIR / "cluster"
DATABASE = "precon"
REQUEST_TIMEOUT_S = 30.0
RECEIVER_DELAY_S = 0.2
"""The receiver answers each delivery this long after it arrived: deliveries are in flight when the replica is
killed, as they would be with a real receiver (one it had posted but not yet recorded is sent again)."""
WARM_MIN_S = 3.0
WARM_MAX_S = 60.0
WARM_STEADY = 0.15
REWARM_MAX_S = 120.0
POSTGRES_SETTINGS = ("max_connections=300", "fsync=on", "synchronous_commit=on", "full_page_writes=on")

JsonDict = dict[str, Any]


@dataclass(frozen=True)
class Endpoint:
    """What bench/load.py's ``run_mix`` needs of a service: where it answers."""

    base_url: str


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
    def start(cls, listings: int, seed: int, replica_env: dict[str, str] | None = None) -> Stack:
        """The stack; ``replica_env``: settings given to the replicas alone (not the single node)."""
        bindir = find_bindir()
        if bindir is None:
            raise StackError("PostgreSQL is not installed (apt-get install -y postgresql)")
        postgres = Cluster(bindir)
        redis: Redis | None = None
        try:
            postgres.start(POSTGRES_SETTINGS)
            postgres.execute(f"CREATE DATABASE {DATABASE}")
            redis = Redis.start()
            return cls._start(postgres, redis, listings, seed, replica_env or {})
        except BaseException:
            if redis is not None:
                redis.stop()
            postgres.stop()
            raise

    @classmethod
    def _start(cls, postgres: Cluster, redis: Redis, listings: int, seed: int, replica_env: dict[str, str]) -> Stack:
        receiver = Receiver(delay_s=RECEIVER_DELAY_S).start()
        env = {
            "PRECON_SERVICE_DATABASE_URL": postgres.url(DATABASE),
            "PRECON_SERVICE_REDIS_URL": redis.url,
            "PRECON_SERVICE_DEFAULT_LISTINGS": str(listings),
            "PRECON_SERVICE_DEFAULT_SEED": str(seed),
            "PRECON_SERVICE_RATE_LIMIT": "0",
            "PRECON_SERVICE_WEBHOOK_FIRST_DELAY": "0",
            "PRECON_SERVICE_WEBHOOK_RETRY_SCHEDULE": "[1, 2, 5, 10]",
            **replica_env,
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


TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def cpu_s(pid: int) -> float:
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
        "replicas": sum(cpu_s(pid) for pid in replicas),
        "postgres": cpu_s(postmaster),
        "haproxy": cpu_s(stack.proxy.process.pid),
        "redis": cpu_s(stack.redis.process.pid),
        "clients": times.user + times.system,
    }
