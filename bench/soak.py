"""Load and soak benchmark of the running listings service: bursts of traffic separated by idle pauses.

The service's worker threads (anyio's pool, uvicorn) retire after about 10 s idle, and every thread that
touches a SQLite file opens a connection of its own; bursts separated by pauses longer than that are what
show whether connections, and the memory behind them, are given back when threads go. This bench:

1. Starts ``precon serve --dev --rate-limit 0`` itself, on a free loopback port, over a fresh data directory
   (the default catalogue is generated on first use) or ``--data``; waits for ``/healthz``.
2. Picks real listing and profile ids, places and facet values from a first search.
3. Runs ``--minutes`` (default 10) of bursts at ``--concurrency`` (default 32, ``httpx.AsyncClient``), each
   followed by a pause of more than 10 s, over a realistic mix: ``search_listings`` with text, facets,
   ``filterQuery`` and ``nearby``; ``listing``; ``multiple_listings``; ``facet_counts``; ``search_profiles``;
   ``profile``; ``trending_listings``. Short runs get shorter bursts, never shorter pauses, and at least 3 bursts.
4. After each burst prints the throughput, errors by status (anything but 2xx and 304; transport errors by
   kind), p50 and p99 latency, the resident memory of the service's process tree (``VmRSS`` from
   ``/proc``) and its open SQLite connections per file of the data directory (its descriptors on each
   ``-wal``: every connection holds one, closed with it); the same again at the end of the pause.
5. Prints the targets and whether each is MET: no errors; memory after the last burst within 10% of after the
   first; open database connections not growing (last burst <= first).

The descriptors on the database files themselves are printed too, but they are not the connections: SQLite keeps
the descriptor of a closed connection open, for reuse by the next connection to the same file, while another
connection of the process holds a lock on it (every open connection does, in WAL); so they are bounded by the
most connections ever open at once, not by those open now.

All traffic stays on 127.0.0.1. The exit code is 0 whatever the figures (a bench reports, it does not fail);
only a service that does not start gives 1.

Run (from the project root)::

    .venv/bin/python bench/soak.py                 # 10 minutes
    .venv/bin/python bench/soak.py --minutes 2     # a quick run: 3 bursts of 25 s, 15 s pauses
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import random
import re
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from serving import Service, ServiceFailed, process_tree, tree_total_kb

DEV_KEY = "precon-dev-key"
BASE = "/v1/on"

DEFAULT_MINUTES = 10.0
DEFAULT_CONCURRENCY = 32
BURST_S = 40.0
PAUSE_S = 15.0
"""Longer than the 10 s after which an idle worker thread retires."""
MIN_BURSTS = 3
MIN_BURST_S = 10.0
REQUEST_TIMEOUT_S = 60.0
MEMORY_TOLERANCE = 0.10

COLLECTIONS = ("Architects", "Builders", "InteriorDesigners", "Marketers", "SalesCentres", "SalesCompanies", "Owners")
FACETS = ("type", "sellingStatus", "constructionStatus", "cityOrDistrict", "amenities", "builders")
WORD = re.compile(r"[A-Za-z]{4,}")


# -- the service -------------------------------------------------------------------------------------------


def development_key(service: Service) -> str:
    """The development key, as the command printed it."""
    found = re.search(r"Development key: (\S+)", service.log_path.read_text(errors="replace"))
    return found.group(1) if found else DEV_KEY


def rss_mb(service: Service) -> float:
    """``VmRSS`` of the service's process tree, in MB."""
    return tree_total_kb(service.process.pid, "status", "VmRSS")[0] / 1024


def database_fds(service: Service, data_dir: Path) -> dict[str, int]:
    """Descriptors the service's process tree holds on each SQLite file of ``data_dir`` and on its ``-wal``."""
    names = sorted(path.name for path in data_dir.iterdir() if path.suffix in (".sqlite3", ".db"))
    counts = dict.fromkeys([*names, *(name + "-wal" for name in names)], 0)
    for pid in process_tree(service.process.pid):
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                target = Path(os.readlink(f"/proc/{pid}/fd/{fd}"))
            except OSError:
                continue
            if target.name in counts and target.parent == data_dir.resolve():
                counts[target.name] += 1
    return counts


# -- the request mix ---------------------------------------------------------------------------------------


@dataclass
class Material:
    """Real values from the catalogue that the requests are built from."""

    listing_ids: list[str]
    profile_ids: list[tuple[str, str]]
    """(collection, id)."""
    places: list[tuple[float, float]]
    words: list[str]
    profile_words: list[str]
    facet_values: dict[str, list[str]]


def gather(client: httpx.Client) -> Material:
    listings = client.get(f"{BASE}/search_listings", params={"perPage": 200, "facets": ",".join(FACETS)})
    listings.raise_for_status()
    body = listings.json()
    hits = body["results"]
    profiles = client.get(f"{BASE}/search_profiles", params={"perPage": 200}).json()["results"]
    places = [(hit["_geoloc"]["lat"], hit["_geoloc"]["lng"]) for hit in hits if hit.get("_geoloc")]
    words = sorted({word.lower() for hit in hits for word in WORD.findall(hit.get("name") or "")})
    profile_words = sorted({word.lower() for p in profiles for word in WORD.findall(p.get("name") or "")})
    facet_values = {
        name: [value for value in values if '"' not in value]
        for name, values in (body.get("facets") or {}).items()
        if name in ("type", "cityOrDistrict", "sellingStatus")
    }
    if not hits or not profiles:
        raise ServiceFailed("the catalogue has no listings or no profiles to ask for")
    return Material(
        listing_ids=[hit["objectID"] for hit in hits],
        profile_ids=[(p["path"].split("/", 1)[0], p["objectID"]) for p in profiles],
        places=places or [(43.65, -79.38)],
        words=words or ["condo"],
        profile_words=profile_words or ["inc"],
        facet_values={name: values for name, values in facet_values.items() if values} or {"type": ["Condo"]},
    )


Request = tuple[str, str, dict[str, str | int]]
"""(kind, path, params)."""


def mix(material: Material) -> list[tuple[float, Callable[[random.Random], Request]]]:
    m = material

    def a_filter(rng: random.Random) -> str:
        name = rng.choice(sorted(m.facet_values))
        clause = f'{name}:"{rng.choice(m.facet_values[name])}"'
        return clause if rng.random() < 0.5 else f"{clause} AND startPrice >= {rng.choice((300, 500, 700))}000"

    def text(rng: random.Random) -> Request:
        search = " ".join(rng.sample(m.words, k=min(len(m.words), rng.choice((1, 2)))))
        return "search_text", "search_listings", {"search": search, "perPage": 20, "page": rng.choice((0, 0, 0, 1))}

    def faceted(rng: random.Random) -> Request:
        facets = ",".join(rng.sample(FACETS, k=3))
        return "search_filter", "search_listings", {"facets": facets, "filterQuery": a_filter(rng), "perPage": 20}

    def nearby(rng: random.Random) -> Request:
        lat, lng = rng.choice(m.places)
        params: dict[str, str | int] = {"nearby": f"{lat},{lng}", "radius": rng.choice((2000, 5000, 20000))}
        return "search_nearby", "search_listings", params | {"perPage": 20}

    def listing(rng: random.Random) -> Request:
        return "listing", "listing", {"id": rng.choice(m.listing_ids)}

    def multiple(rng: random.Random) -> Request:
        ids = rng.sample(m.listing_ids, k=min(len(m.listing_ids), rng.randint(2, 20)))
        return "multiple_listings", "multiple_listings", {"ids": ",".join(ids)}

    def facet_counts(rng: random.Random) -> Request:
        params: dict[str, str | int] = {"facets": ",".join(rng.sample(FACETS, k=2))}
        if rng.random() < 0.5:
            params["filterQuery"] = a_filter(rng)
        return "facet_counts", "facet_counts", params

    def profiles(rng: random.Random) -> Request:
        params: dict[str, str | int] = {"perPage": 20, "collection": rng.choice(COLLECTIONS)}
        if rng.random() < 0.6:
            params["search"] = rng.choice(m.profile_words)
        return "search_profiles", "search_profiles", params

    def profile(rng: random.Random) -> Request:
        collection, profile_id = rng.choice(m.profile_ids)
        return "profile", "profile", {"id": profile_id, "collection": collection}

    def trending(rng: random.Random) -> Request:
        return "trending_listings", "trending_listings", {"perPage": rng.choice((10, 20))}

    return [
        (0.18, text),
        (0.12, faceted),
        (0.10, nearby),
        (0.15, listing),
        (0.10, multiple),
        (0.10, facet_counts),
        (0.10, profiles),
        (0.08, profile),
        (0.07, trending),
    ]


# -- bursts ------------------------------------------------------------------------------------------------


@dataclass
class BurstResult:
    seconds: float
    latencies_ms: list[float] = field(default_factory=list)
    statuses: Counter[int] = field(default_factory=Counter)
    transport_errors: Counter[str] = field(default_factory=Counter)
    kinds: Counter[str] = field(default_factory=Counter)

    @property
    def requests(self) -> int:
        return sum(self.statuses.values()) + sum(self.transport_errors.values())

    def errors(self) -> dict[str, int]:
        found = {str(status): n for status, n in sorted(self.statuses.items()) if not _ok(status)}
        found.update(self.transport_errors)
        return found


def _ok(status: int) -> bool:
    return 200 <= status < 300 or status == 304


def percentile(values: list[float], share: float) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(share * len(ordered)) - 1))]


async def burst(
    base_url: str, key: str, material: Material, seconds: float, concurrency: int, seed: int
) -> BurstResult:
    choices = mix(material)
    weights = [weight for weight, _ in choices]
    makers = [maker for _, maker in choices]
    result = BurstResult(seconds=seconds)
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(
        base_url=base_url, headers={"x-api-key": key}, timeout=REQUEST_TIMEOUT_S, limits=limits
    ) as client:
        started = time.perf_counter()
        end = started + seconds

        async def worker(number: int) -> None:
            rng = random.Random(seed * 1000 + number)
            while time.perf_counter() < end:
                kind, path, params = rng.choices(makers, weights)[0](rng)
                began = time.perf_counter()
                try:
                    response = await client.get(f"{BASE}/{path}", params=params)
                    await response.aread()
                except httpx.HTTPError as error:
                    result.transport_errors[type(error).__name__] += 1
                    continue
                result.latencies_ms.append((time.perf_counter() - began) * 1000)
                result.statuses[response.status_code] += 1
                result.kinds[kind] += 1

        await asyncio.gather(*(worker(n) for n in range(concurrency)))
        result.seconds = time.perf_counter() - started
    return result


def plan(minutes: float) -> tuple[int, float, float]:
    """(bursts, burst seconds, pause seconds): each burst followed by its pause, filling ``minutes``."""
    total = minutes * 60
    bursts = max(MIN_BURSTS, round(total / (BURST_S + PAUSE_S)))
    return bursts, max(MIN_BURST_S, total / bursts - PAUSE_S), PAUSE_S


@dataclass
class Reading:
    rss_mb: float
    fds: dict[str, int]

    def connections(self) -> int:
        """Open connections: each holds its own descriptor on the ``-wal``, closed with it (no lock keeps it)."""
        return sum(n for name, n in self.fds.items() if name.endswith("-wal"))

    def descriptors(self) -> int:
        return sum(n for name, n in self.fds.items() if not name.endswith("-wal"))

    def fds_text(self) -> str:
        names = [name for name in self.fds if not name.endswith("-wal")]
        return (
            f"connections {self.connections()} ("
            + ", ".join(f"{name} {self.fds[name + '-wal']}" for name in names)
            + f"), database-file descriptors {self.descriptors()}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=DEFAULT_MINUTES, help="Length of the run (default 10).")
    parser.add_argument("--concurrency", type=int, default=DEFAULT_CONCURRENCY, help="Requests in flight.")
    parser.add_argument("--data", type=Path, help="A data directory to serve (default: a fresh temporary one).")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]  # progress shows when piped too

    bursts, burst_s, pause_s = plan(args.minutes)
    temporary = args.data is None
    data_dir = Path(tempfile.mkdtemp(prefix="precon-soak-")) if temporary else args.data.resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    log_path = data_dir.parent / f"{data_dir.name}-service.log" if temporary else data_dir / "soak-service.log"
    print(f"soak: {bursts} bursts of {burst_s:.0f} s at concurrency {args.concurrency}, each then {pause_s:.0f} s idle")
    print(f"data: {data_dir}  service log: {log_path}")
    try:
        service = Service.start(data_dir, log_path, dev=True)
    except ServiceFailed as error:
        print(f"FAILED: {error}")
        return 1
    readings_after: list[Reading] = []
    readings_idle: list[Reading] = []
    results: list[BurstResult] = []
    try:
        key = development_key(service)
        with httpx.Client(base_url=service.base_url, headers={"x-api-key": key}, timeout=REQUEST_TIMEOUT_S) as client:
            material = gather(client)
        start = Reading(rss_mb(service), database_fds(service, data_dir))
        print(f"started: pid {service.process.pid}, {service.base_url}, rss {start.rss_mb:.0f} MB")
        print(f"  database: {start.fds_text()}")
        print(f"  {len(material.listing_ids)} listing ids, {len(material.profile_ids)} profile ids from a first search")
        for number in range(1, bursts + 1):
            result = asyncio.run(
                burst(service.base_url, key, material, burst_s, args.concurrency, args.seed * 100 + number)
            )
            after = Reading(rss_mb(service), database_fds(service, data_dir))
            results.append(result)
            readings_after.append(after)
            errors = result.errors()
            print(
                f"burst {number}/{bursts}: {result.requests} requests in {result.seconds:.1f} s, "
                f"{result.requests / result.seconds:.1f} req/s, "
                f"p50 {percentile(result.latencies_ms, 0.5):.1f} ms, "
                f"p99 {percentile(result.latencies_ms, 0.99):.1f} ms, "
                f"errors {sum(errors.values())} {errors or ''}".rstrip()
            )
            print(f"  after the burst: rss {after.rss_mb:.0f} MB; database: {after.fds_text()}")
            time.sleep(pause_s)
            idle = Reading(rss_mb(service), database_fds(service, data_dir))
            readings_idle.append(idle)
            print(f"  after {pause_s:.0f} s idle: rss {idle.rss_mb:.0f} MB; database: {idle.fds_text()}")
    finally:
        service.stop()
        if temporary:
            shutil.rmtree(data_dir, ignore_errors=True)

    if not results:
        return 0
    total_errors: Counter[str] = Counter()
    for result in results:
        total_errors.update(result.errors())
    all_latencies = [ms for result in results for ms in result.latencies_ms]
    requests = sum(result.requests for result in results)
    seconds = sum(result.seconds for result in results)
    kinds: Counter[str] = Counter()
    for result in results:
        kinds.update(result.kinds)
    first, last = readings_after[0], readings_after[-1]
    first_connections, last_connections = first.connections(), last.connections()
    grown = (last.rss_mb - first.rss_mb) / first.rss_mb
    print()
    print(
        f"overall: {requests} requests, {requests / seconds:.1f} req/s while loaded, "
        f"p50 {percentile(all_latencies, 0.5):.1f} ms, p99 {percentile(all_latencies, 0.99):.1f} ms"
    )
    print("  mix: " + ", ".join(f"{kind} {n}" for kind, n in kinds.most_common()))
    print("  rss after each burst (MB): " + " ".join(f"{r.rss_mb:.0f}" for r in readings_after))
    print("  rss after each pause (MB): " + " ".join(f"{r.rss_mb:.0f}" for r in readings_idle))
    print("  open connections after each burst: " + " ".join(str(r.connections()) for r in readings_after))
    print("  open connections after each pause: " + " ".join(str(r.connections()) for r in readings_idle))
    print("  database-file descriptors after each burst: " + " ".join(str(r.descriptors()) for r in readings_after))
    print("  database-file descriptors after each pause: " + " ".join(str(r.descriptors()) for r in readings_idle))
    print()
    print("targets:")
    targets = [
        ("0 errors", not total_errors, f"{sum(total_errors.values())} {dict(total_errors) or ''}".rstrip()),
        (
            f"memory after the last burst within {MEMORY_TOLERANCE:.0%} of after the first",
            abs(grown) <= MEMORY_TOLERANCE,
            f"{first.rss_mb:.0f} MB -> {last.rss_mb:.0f} MB ({grown:+.1%})",
        ),
        (
            "open database connections not growing (last burst <= first)",
            last_connections <= first_connections,
            f"{first_connections} -> {last_connections}",
        ),
    ]
    for name, met, figures in targets:
        print(f"  {'MET' if met else 'NOT MET':8} {name}: {figures}")
    print(f"soak: {'all targets MET' if all(met for _, met, _ in targets) else 'some targets NOT MET'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
