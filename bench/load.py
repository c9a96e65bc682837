"""A query mix run against a service by one or more clients, and the figures of its latencies."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

from lean_http import LeanClient
from mix import CATEGORIES, BenchRequest, JsonDict
from serving import Service

REQUEST_TIMEOUT_S = 60.0


@dataclass
class Sample:
    category: str
    latency_ms: float
    status: int
    total: int | None = None
    ids: tuple[str, ...] = ()


def send(client: LeanClient, request: BenchRequest) -> tuple[Sample, bytes]:
    started = time.perf_counter()
    status, content = client.get(request.path, request.query())
    latency_ms = (time.perf_counter() - started) * 1000
    return Sample(request.category, latency_ms, status), content


def _read_body(sample: Sample, content: bytes) -> Sample:
    """The sample with the total and ids of its answer, read after the run (decoding a page of 20 listings costs
    the client half a millisecond, which a run would count against the service)."""
    if sample.status == 200:
        body = orjson.loads(content)
        sample.total = body["total"]
        sample.ids = tuple(r.get("objectID") or r.get("listingId") for r in body["results"])
    return sample


def client_for(service: Service, key: str) -> LeanClient:
    return LeanClient(service.base_url, {"x-api-key": key}, timeout=REQUEST_TIMEOUT_S)


def run_mix(
    service: Service, key: str, mix: Sequence[BenchRequest], concurrency: int, keep_bodies: bool = False
) -> tuple[list[Sample], float]:
    """Every request once, ``concurrency`` clients taking the next one in turn; the samples and the wall time."""
    answers: list[tuple[Sample, bytes] | None] = [None] * len(mix)
    cursor = iter(range(len(mix)))
    lock = threading.Lock()

    def worker() -> None:
        with client_for(service, key) as client:
            while True:
                with lock:
                    index = next(cursor, None)
                if index is None:
                    return
                sample, content = send(client, mix[index])
                answers[index] = (sample, content if keep_bodies else b"")

    started = time.perf_counter()
    if concurrency == 1:
        worker()
    else:
        threads = [threading.Thread(target=worker) for _ in range(concurrency)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    wall = time.perf_counter() - started
    samples = [_read_body(*answer) if keep_bodies else answer[0] for answer in answers if answer is not None]
    return samples, wall


def percentiles(latencies: Sequence[float]) -> JsonDict:
    if not latencies:
        return {"n": 0, "p50": None, "p95": None, "p99": None}
    p50, p95, p99 = np.percentile(np.asarray(latencies), [50, 95, 99])
    return {"n": len(latencies), "p50": round(float(p50), 2), "p95": round(float(p95), 2), "p99": round(float(p99), 2)}


def by_category(samples: Sequence[Sample]) -> dict[str, JsonDict]:
    groups = {"all": [s.latency_ms for s in samples]}
    for category in CATEGORIES:
        groups[category] = [s.latency_ms for s in samples if s.category == category]
    return {name: percentiles(values) for name, values in groups.items()}
