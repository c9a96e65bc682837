"""The cluster bench's failover (``bench/cluster.py``, step 5): the mix and a stream of webhook triggers through
HAProxy while one replica is killed, and what the clients and the receiver saw."""

from __future__ import annotations

import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psycopg

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH_DIR))

from cluster_stack import DATABASE, KEY, REQUEST_TIMEOUT_S, JsonDict, Stack, http  # noqa: E402
from lean_http import LeanClient  # noqa: E402
from load import Sample, send  # noqa: E402
from mix import BenchRequest  # noqa: E402

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
