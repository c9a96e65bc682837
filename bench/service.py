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
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import orjson

from precon import filters
from precon.schema import SEARCHABLE_LISTING_FIELDS, SEARCHABLE_LISTING_WEIGHTS
from precon.service.config import ServiceSettings
from precon.service.search.text import MIN_PREFIX_LENGTH, WORD, searchable_text, words
from precon.service.stores.records import province_of

sys.path.insert(0, str(Path(__file__).resolve().parent))

from lean_http import LeanClient

BENCH_DIR = Path(__file__).resolve().parent
OUT_DIR = BENCH_DIR / "out"
PRECON = Path(sys.executable).with_name("precon")

DEFAULT_LISTINGS = 50_000
DEFAULT_SEED = 1
DEFAULT_REQUESTS = 600
DEFAULT_BASELINE_REQUESTS = 150
WARMUP_REQUESTS = 30
CONCURRENCY_LEVELS = (1, 16)

PRODUCT = "bench"
PER_PAGE = 20
CATEGORIES = ("text", "facets", "filters", "geo")
FACETS = "type,sellingStatus,constructionStatus,cityOrDistrict,amenities,builders"
FACET_NAMES = tuple(FACETS.split(","))
CONTRACT_CHAIN = 'startPrice >= 400000  AND startPrice <= 900000 AND type:"Condo" OR type:"Townhouse" AND minBeds >= 1'
SAMPLE_SIZE = 2000
"""Listings the query mix draws its words, values and places from."""

PAGED_SHARE = 0.05
MAX_PAGE = 5
PREFIX_SHARE = 0.4
MIN_PREFIX = 3
FACET_FILTER_SHARE = 0.5
FACET_PROVINCE_SHARE = 0.3
CONTRACT_CHAIN_SHARE = 0.15
GEO_FILTER_SHARE = 0.3
GEO_JITTER_DEG = 0.02
GEO_RADIUS_KM = (2, 30)
MAX_FILTER_CLAUSES = 3

EARTH_RADIUS_M = 6_371_000.0
MAX_FACET_VALUES = 100
REQUEST_TIMEOUT_S = 60.0
HEALTH_TIMEOUT_S = 900.0
STOP_TIMEOUT_S = 10.0
MEMORY_SAMPLE_S = 0.5
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

JsonDict = dict[str, Any]


# -- the query mix --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BenchRequest:
    category: str
    province: str
    """``all`` or a province code: the path segment."""
    params: dict[str, str]

    @property
    def path(self) -> str:
        return f"/v1/{self.province}/search_listings"

    def query(self) -> dict[str, str]:
        return {"product_id": PRODUCT, "perPage": str(PER_PAGE), **self.params}


@dataclass
class Vocabulary:
    """Real values of the catalogue, drawn from a sample of its listings."""

    sample: list[JsonDict]
    types: list[str]
    selling: list[str]
    construction: list[str]
    amenities: list[str]
    provinces: list[str]
    years: list[int]
    prices: list[float]
    """Sorted start prices: quantiles give realistic price bounds."""
    places: list[tuple[float, float]]
    """Listings' ``_geoloc`` as (lat, lng)."""

    @classmethod
    def of(cls, records: Sequence[JsonDict], rng: random.Random) -> Vocabulary:
        return cls.from_sample(rng.sample(list(records), min(SAMPLE_SIZE, len(records))))

    @classmethod
    def from_sample(cls, sample: list[JsonDict]) -> Vocabulary:
        """From listings already drawn (see :func:`sample_listings`)."""

        def distinct(name: str) -> list[str]:
            found: set[str] = set()
            for record in sample:
                value = record.get(name)
                found.update(v for v in (value if isinstance(value, list) else [value]) if isinstance(v, str) and v)
            return sorted(found)

        provinces = sorted({p for r in sample if (p := province_of(r.get("state"))) is not None})
        years = sorted({int(y) for r in sample if isinstance(y := r.get("completionYear"), int | float)})
        prices = sorted(float(p) for r in sample if isinstance(p := r.get("startPrice"), int | float) and p > 0)
        places = [(g["lat"], g["lng"]) for r in sample if isinstance(g := r.get("_geoloc"), dict)]
        return cls(
            sample=sample,
            types=distinct("type"),
            selling=distinct("sellingStatus"),
            construction=distinct("constructionStatus"),
            amenities=distinct("amenities"),
            provinces=provinces,
            years=years,
            prices=prices,
            places=places,
        )

    def price(self, rng: random.Random, low: float, high: float) -> int:
        """A start price between two quantiles, rounded to the nearest 10,000."""
        quantile = rng.uniform(low, high)
        value = self.prices[min(len(self.prices) - 1, int(quantile * len(self.prices)))]
        return int(round(value, -4))


def _cut(word: str, rng: random.Random) -> str:
    """The word typed only partly, as a search-as-you-type prefix."""
    return word if len(word) <= MIN_PREFIX else word[: rng.randint(MIN_PREFIX, len(word) - 1)]


def text_request(rng: random.Random, vocabulary: Vocabulary) -> BenchRequest:
    """1-3 words from one listing's name, city, street and amenities (so something matches)."""
    record = rng.choice(vocabulary.sample)
    sources = [record.get("name"), record.get("cityOrDistrict"), record.get("streetName"), *record.get("amenities", [])]
    phrases = [WORD.findall(s) for s in sources if isinstance(s, str)]
    phrases = [p for p in phrases if p]
    chosen = rng.sample(phrases, min(len(phrases), rng.randint(1, 2)))
    query = [w for phrase in chosen for w in phrase][: rng.randint(1, 3)]
    if rng.random() < PREFIX_SHARE:
        query[-1] = _cut(query[-1], rng)
    return BenchRequest("text", "all", {"search": " ".join(query)})


def _clause_makers(vocabulary: Vocabulary) -> list[Callable[[random.Random], filters.Expr | None]]:
    v = vocabulary
    return [
        lambda rng: filters.between("startPrice", v.price(rng, 0.05, 0.4), v.price(rng, 0.5, 0.95)),
        lambda rng: filters.between("startPrice", high=v.price(rng, 0.2, 0.8)),
        lambda rng: filters.any_of("type", rng.sample(v.types, rng.randint(1, 2))),
        lambda rng: filters.compare("minBeds", ">=", rng.randint(1, 3)),
        lambda rng: filters.eq("sellingStatus", rng.choice(v.selling)),
        lambda rng: filters.eq("constructionStatus", rng.choice(v.construction)),
        lambda rng: filters.compare("completionYear", ">=", rng.choice(v.years)),
        lambda rng: filters.compare("floorPlans.startPrice", "<", v.price(rng, 0.1, 0.6)),
        lambda rng: filters.eq("amenities", rng.choice(v.amenities)),
    ]


def filter_query(rng: random.Random, vocabulary: Vocabulary) -> str:
    """1-3 clauses ANDed, built with the ``precon.filters`` builders."""
    makers = rng.sample(_clause_makers(vocabulary), rng.randint(1, MAX_FILTER_CLAUSES))
    return filters.to_query(filters.and_(*(make(rng) for make in makers)))


def facet_request(rng: random.Random, vocabulary: Vocabulary) -> BenchRequest:
    params = {"facets": FACETS}
    if rng.random() < FACET_FILTER_SHARE:
        params["filterQuery"] = filter_query(rng, vocabulary)
    province = rng.choice(vocabulary.provinces) if rng.random() < FACET_PROVINCE_SHARE else "all"
    return BenchRequest("facets", province, params)


def filters_request(rng: random.Random, vocabulary: Vocabulary) -> BenchRequest:
    chain = CONTRACT_CHAIN if rng.random() < CONTRACT_CHAIN_SHARE else filter_query(rng, vocabulary)
    return BenchRequest("filters", "all", {"filterQuery": chain})


def geo_request(rng: random.Random, vocabulary: Vocabulary) -> BenchRequest:
    """Around a real listing's ``_geoloc``, jittered; a radius of 2-30 km; sometimes filtered."""
    lat, lng = rng.choice(vocabulary.places)
    lat += rng.uniform(-GEO_JITTER_DEG, GEO_JITTER_DEG)
    lng += rng.uniform(-GEO_JITTER_DEG, GEO_JITTER_DEG)
    params = {"nearby": f"{lat:.6f},{lng:.6f}", "radius": str(rng.randint(*GEO_RADIUS_KM) * 1000)}
    if rng.random() < GEO_FILTER_SHARE:
        params["filterQuery"] = filter_query(rng, vocabulary)
    return BenchRequest("geo", "all", params)


MAKERS: dict[str, Callable[[random.Random, Vocabulary], BenchRequest]] = {
    "text": text_request,
    "facets": facet_request,
    "filters": filters_request,
    "geo": geo_request,
}


def build_mix(count: int, vocabulary: Vocabulary, rng: random.Random) -> list[BenchRequest]:
    """``count`` requests, a quarter of each category in a shuffled order, a few past page 0."""
    categories = [CATEGORIES[i % len(CATEGORIES)] for i in range(count)]
    rng.shuffle(categories)
    mix = []
    for category in categories:
        request = MAKERS[category](rng, vocabulary)
        if rng.random() < PAGED_SHARE:
            request = replace(request, params={**request.params, "page": str(rng.randint(1, MAX_PAGE))})
        mix.append(request)
    return mix


# -- the catalogue and the service ----------------------------------------------------------------------------


def build_catalogue(listings: int, seed: int, data_dir: Path, reuse: bool) -> float | None:
    """Seconds to build the catalogue, or None when ``reuse`` kept an existing one."""
    if reuse and ServiceSettings(data_dir=data_dir).catalogue_path.exists():
        return None
    started = time.perf_counter()
    command = [str(PRECON), "catalogue", "generate", "--listings", str(listings), "--seed", str(seed)]
    subprocess.run([*command, "--data", str(data_dir)], check=True)
    return time.perf_counter() - started


def read_listings(data_dir: Path) -> list[JsonDict]:
    """Every listing document as the store holds it (the ``listing_docs`` table)."""
    db = sqlite3.connect(ServiceSettings(data_dir=data_dir).catalogue_path)
    try:
        return [orjson.loads(doc) for (doc,) in db.execute("SELECT doc FROM listing_docs ORDER BY id")]
    finally:
        db.close()


def sample_listings(data_dir: Path, rng: random.Random) -> list[JsonDict]:
    """The listings :meth:`Vocabulary.of` would draw from :func:`read_listings`'s list with the same ``rng`` (the
    same positions in id order), reading only those documents: at 500,000 listings the whole list is gigabytes."""
    db = sqlite3.connect(ServiceSettings(data_dir=data_dir).catalogue_path)
    try:
        ids = [row[0] for row in db.execute("SELECT id FROM listing_docs ORDER BY id")]
        chosen = [ids[position] for position in rng.sample(range(len(ids)), min(SAMPLE_SIZE, len(ids)))]
        docs: dict[int, JsonDict] = {}
        for start in range(0, len(chosen), 500):
            batch = chosen[start : start + 500]
            marks = ", ".join("?" * len(batch))
            for rowid, doc in db.execute(f"SELECT id, doc FROM listing_docs WHERE id IN ({marks})", batch):
                docs[rowid] = orjson.loads(doc)
        return [docs[rowid] for rowid in chosen]
    finally:
        db.close()


def create_key(data_dir: Path) -> str:
    command = [str(PRECON), "keys", "create", "--product", PRODUCT, "--data", str(data_dir)]
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout.strip()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def serve_offers_workers() -> bool:
    """Whether the installed ``precon serve`` takes ``--workers N``."""
    help_text = subprocess.run([str(PRECON), "serve", "--help"], capture_output=True, text=True).stdout
    return "--workers" in help_text


def process_tree(root: int) -> list[int]:
    """``root`` and every live descendant, from each process's parent in ``/proc/<pid>/stat``."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parent = int(stat[stat.rindex(")") + 2 :].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    found, pending = [], [root]
    while pending:
        pid = pending.pop()
        found.append(pid)
        pending += children.get(pid, [])
    return found


def tree_pss_mb(root: int) -> tuple[float, int]:
    """The summed ``Pss`` of a process and its descendants in MB, and how many processes were counted."""
    total_kb = counted = 0
    for pid in process_tree(root):
        try:
            text = Path(f"/proc/{pid}/smaps_rollup").read_text()
        except OSError:
            continue
        for line in text.splitlines():
            if line.startswith("Pss:"):
                total_kb += int(line.split()[1])
                counted += 1
                break
    return total_kb / 1024, counted


class MemorySampler:
    """The service tree's PSS every ``MEMORY_SAMPLE_S`` in a thread, keeping the peak."""

    def __init__(self, root: int) -> None:
        self.root = root
        self.peak_mb = 0.0
        self.processes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def sample(self) -> float:
        pss, processes = tree_pss_mb(self.root)
        self.peak_mb = max(self.peak_mb, pss)
        self.processes = max(self.processes, processes)
        return pss

    def _run(self) -> None:
        while not self._stop.wait(MEMORY_SAMPLE_S):
            self.sample()

    def __enter__(self) -> MemorySampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


class ServiceFailed(RuntimeError):
    """The service did not start or did not answer its health check."""


@dataclass
class Service:
    process: subprocess.Popen[bytes]
    base_url: str
    log_path: Path
    started_s: float
    healthy_at: float = 0.0
    """``time.perf_counter()`` when ``/healthz`` first answered."""

    @classmethod
    def start(
        cls, data_dir: Path, log_path: Path, workers: int | None = None, env: dict[str, str] | None = None
    ) -> Service:
        port = free_port()
        command = [str(PRECON), "serve", "--data", str(data_dir), "--port", str(port), "--host", "127.0.0.1"]
        if workers is not None:
            command += ["--workers", str(workers)]
        started = time.perf_counter()
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                [*command, "--rate-limit", "0"], stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})}
            )
        service = cls(process, f"http://127.0.0.1:{port}", log_path, 0.0)
        service.wait_healthy()
        service.healthy_at = time.perf_counter()
        service.started_s = service.healthy_at - started
        return service

    def wait_healthy(self) -> None:
        deadline = time.monotonic() + HEALTH_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ServiceFailed(f"the service exited with {self.process.returncode}; see {self.log_path}")
            try:
                if httpx.get(self.base_url + "/healthz", timeout=2.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.stop()
        raise ServiceFailed(f"no answer from /healthz within {HEALTH_TIMEOUT_S:.0f} s; see {self.log_path}")

    def memory_mb(self) -> dict[str, float]:
        """The PSS of the service's process tree, and ``VmHWM`` (peak resident) and ``VmRSS`` of its main process,
        in MB."""
        pss, processes = tree_pss_mb(self.process.pid)
        found: dict[str, float] = {"PSS": pss, "processes": processes}
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            name, _, value = line.partition(":")
            if name in ("VmHWM", "VmRSS"):
                found[name] = int(value.split()[0]) / 1024
        return found

    def stop(self) -> None:
        if self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


# -- running the mix against the service ----------------------------------------------------------------------


@dataclass
class Sample:
    category: str
    latency_ms: float
    status: int
    total: int | None = None
    ids: tuple[str, ...] = ()


def _send(client: LeanClient, request: BenchRequest) -> tuple[Sample, bytes]:
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


def _client(service: Service, key: str) -> LeanClient:
    return LeanClient(service.base_url, {"x-api-key": key}, timeout=REQUEST_TIMEOUT_S)


def run_mix(
    service: Service, key: str, mix: Sequence[BenchRequest], concurrency: int, keep_bodies: bool = False
) -> tuple[list[Sample], float]:
    """Every request once, ``concurrency`` clients taking the next one in turn; the samples and the wall time."""
    answers: list[tuple[Sample, bytes] | None] = [None] * len(mix)
    cursor = iter(range(len(mix)))
    lock = threading.Lock()

    def worker() -> None:
        with _client(service, key) as client:
            while True:
                with lock:
                    index = next(cursor, None)
                if index is None:
                    return
                sample, content = _send(client, mix[index])
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


# -- the naive baseline ---------------------------------------------------------------------------------------


@dataclass
class NaiveRecord:
    doc: JsonDict
    province: str | None
    rank: int
    """Position in the default order: featured first, then newest ``updatedAt``, then ``listingId``."""
    lat: float | None
    lng: float | None
    field_words: tuple[frozenset[str], ...]
    all_words: frozenset[str]


def _naive_record(doc: JsonDict, rank: int) -> NaiveRecord:
    geoloc = doc.get("_geoloc") if isinstance(doc.get("_geoloc"), dict) else {}
    field_words = tuple(frozenset(words(column)) for column in searchable_text(doc, SEARCHABLE_LISTING_FIELDS))
    return NaiveRecord(
        doc=doc,
        province=province_of(doc.get("state")),
        rank=rank,
        lat=geoloc.get("lat"),
        lng=geoloc.get("lng"),
        field_words=field_words,
        all_words=frozenset().union(*field_words),
    )


def haversine_m(lat1: float, lng1: float, lat2: float, lng2: float) -> float:
    phi1, phi2 = math.radians(lat1), math.radians(lat2)
    h = (
        math.sin((phi2 - phi1) / 2) ** 2
        + math.cos(phi1) * math.cos(phi2) * math.sin(math.radians(lng2 - lng1) / 2) ** 2
    )
    return 2 * EARTH_RADIUS_M * math.asin(min(1.0, math.sqrt(h)))


def _word_matches(query_word: str, found: frozenset[str], prefix: bool) -> bool:
    return query_word in found or (prefix and any(w.startswith(query_word) for w in found))


class NaiveCatalogue:
    """Every listing in a Python list; each request a full scan. Per-record word sets and the default order are
    prepared once at load (as a naive server would), so the baseline is, if anything, on the fast side."""

    def __init__(self, docs: Sequence[JsonDict]) -> None:
        order = sorted(range(len(docs)), key=lambda i: str(docs[i].get("listingId")))
        order.sort(key=lambda i: str(docs[i].get("updatedAt") or ""), reverse=True)
        order.sort(key=lambda i: docs[i].get("isFeatured") is True, reverse=True)
        rank = {index: position for position, index in enumerate(order)}
        self.records = [_naive_record(doc, rank[i]) for i, doc in enumerate(docs)]

    def text_score(self, record: NaiveRecord, query: list[str]) -> float | None:
        """None unless every word matches (the last also as a prefix); else a field-weighted match count."""
        last = len(query) - 1 if len(query[-1]) >= MIN_PREFIX_LENGTH else -1
        if not all(_word_matches(w, record.all_words, i == last) for i, w in enumerate(query)):
            return None
        return sum(
            weight
            for weight, found in zip(SEARCHABLE_LISTING_WEIGHTS, record.field_words, strict=True)
            for i, w in enumerate(query)
            if _word_matches(w, found, i == last)
        )

    def answer(self, request: BenchRequest) -> tuple[bytes, int, tuple[str, ...]]:
        """The response body, the total and the page's ids."""
        params = request.params
        predicate = filters.compile_predicate(filters.parse(params.get("filterQuery")))
        query = words(params.get("search", ""))
        circle = None
        if "nearby" in params:
            lat, lng = (float(part) for part in params["nearby"].split(","))
            circle = (lat, lng, float(params.get("radius", "10000")))
        province = None if request.province == "all" else request.province
        keyed: list[tuple[float, int, NaiveRecord]] = []
        for record in self.records:
            if province is not None and record.province != province:
                continue
            if not predicate(record.doc):
                continue
            key = 0.0
            if query:
                score = self.text_score(record, query)
                if score is None:
                    continue
                key = -score
            elif circle is not None:
                if record.lat is None or record.lng is None:
                    continue
                key = haversine_m(circle[0], circle[1], record.lat, record.lng)
                if key > circle[2]:
                    continue
            keyed.append((key, record.rank, record))
        keyed.sort(key=lambda item: (item[0], item[1]))
        page = int(params.get("page", "0"))
        results = [item[2].doc for item in keyed[page * PER_PAGE : (page + 1) * PER_PAGE]]
        body: JsonDict = {
            "results": results,
            "total": len(keyed),
            "page": page,
            "pages": math.ceil(len(keyed) / PER_PAGE),
            "perPage": PER_PAGE,
        }
        if "facets" in params:
            body["facets"] = count_facets([item[2].doc for item in keyed], params["facets"].split(","))
        ids = tuple(str(doc.get("listingId")) for doc in results)
        return orjson.dumps(body), len(keyed), ids


def count_facets(docs: Sequence[JsonDict], names: Sequence[str]) -> dict[str, dict[str, int]]:
    """Per facet, value counts over every matching record, highest first, ties by value, at most 100."""
    out: dict[str, dict[str, int]] = {}
    for name in names:
        counts: Counter[str] = Counter()
        for doc in docs:
            value = doc.get(name)
            for item in value if isinstance(value, list) else [value]:
                if item is not None:
                    counts[str(item)] += 1
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_FACET_VALUES]
        out[name] = dict(ranked)
    return out


def run_baseline(naive: NaiveCatalogue, mix: Sequence[BenchRequest]) -> list[tuple[Sample, tuple[str, ...]]]:
    measured = []
    for request in mix:
        started = time.perf_counter()
        _, total, ids = naive.answer(request)
        latency_ms = (time.perf_counter() - started) * 1000
        measured.append((Sample(request.category, latency_ms, 200, total), ids))
    return measured


# -- figures --------------------------------------------------------------------------------------------------


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
            with _client(service, key) as client:
                first, _ = _send(client, warmup[0])
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
