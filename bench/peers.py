"""Peer baseline: the listings service against Datasette 0.65.5 on the same catalogue and the same query mix.

What it measures, in one run:

1. A catalogue of ``--listings`` listings (``precon catalogue generate``, kept in ``bench/out/data-<listings>-
   <seed>`` and reused when there, as ``bench/service.py --reuse`` does), read back from its ``listing_docs``.
2. The same listings as an SQLite database laid out for Datasette the way one would for these questions
   (``bench/out/peers-<listings>-<seed>.db``): a flat ``listings`` table of the attributes the mix filters,
   sorts and facets on (array attributes as JSON arrays) with an index on each; text values as integer ids
   into ``facet_values`` (the value folded as the service compares it, and a label), in ``*_id`` columns and
   in junction tables ``listing_type``, ``listing_amenities`` and ``listing_builders``, with
   ``listing_plan_prices`` (``floorPlans.startPrice``), each indexed both ways for filters and fair facet
   counts; ``lat``/``lng`` with an index for the bounding box; an FTS5 table over the
   service's searchable fields (``SEARCHABLE_LISTING_FIELDS``, the same text, tokenizer and prefix indexes);
   the listing documents in ``docs`` for the page.
3. ``precon serve --rate-limit 0`` (its default number of worker processes, or ``--workers N`` passed through
   when it offers that option) and ``datasette serve -i`` on that database (one process, its default three
   SQL threads, a page cache that holds the database), side by side, answering the mix
   that ``bench/mix.py`` builds (its ``build_mix``, same seed: text, facets, filters, geo). Each request
   is one HTTP call on each side: ours is ``search_listings``; Datasette's is one read-only SQL statement
   through its JSON API (``/peers.json?sql=…&_shape=array``, values as named parameters) that returns the
   total (``count(*)``), the page of 20 documents in the service's order (bm25 with the service's field
   weights for text, haversine distance for geo, featured/updatedAt/listingId otherwise) and, for the facets
   class, the top 100 values of each of the six facets (grouped over the matching ids, materialized once in a
   CTE). The count and the page are written as one would for SQLite alone (the page in the default order walks
   the order index and stops once the page is full). ``filterQuery`` is translated from the parsed expression
   (``precon.filters``) to SQL over the columns and junction tables; ``nearby``/``radius`` to a bounding box
   on the lat/lng index plus the haversine formula in SQL; ``search`` to the FTS5 expression the service
   itself builds (every word, the last as a prefix).
4. Interleaved, so machine noise hits both: per concurrency (1 and 16) and per class, six rounds a side in
   the order ours, Datasette's, Datasette's, ours, and so on. In a round, each of the ``concurrency`` clients
   sends the class's next request as soon as its last is answered, for a second; a side's throughput in a
   class is its answers over the sum of its rounds' wall times (each until its last answer came). The ratio
   (ours / Datasette) is the headline; absolute figures on a shared 2-core machine are noisy. The clients
   are :mod:`lean_http` connections, which cost a fraction of what ``httpx`` does per request: on two cores
   shared with the services, a heavier client would be what is measured.
5. Totals agreement, request by request: each side's ``total`` for the same request (text: the service also
   tolerates one typo, but only when nothing matches exactly, which a word taken from a listing never does).

Targets (printed, never failing the run): ours at least 5 times Datasette's throughput on text and geo, at
least 20 times on filters and facets. The process exits non-zero only when a side fails to start.

Datasette is a bench-only tool: it lives in its own virtual environment, ``bench/.peers-venv``, created with
uv on first use, so it never touches the project's pins.

Run (from the project root)::

    make bench-peers                                     # 50,000 listings
    make bench-peers LISTINGS=5000                       # a quick run
    .venv/bin/python bench/peers.py --listings 5000 --requests 200
    .venv/bin/python bench/peers.py --workers 1          # ours in one process, as Datasette is

Figures go to stdout and, as JSON, to ``bench/out/peers-<listings>.json``.
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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import orjson

from precon.service.config import ServiceSettings

sys.path.insert(0, str(Path(__file__).resolve().parent))

from lean_http import LeanClient
from load import percentiles
from mix import CATEGORIES, PER_PAGE, BenchRequest, JsonDict, Vocabulary, build_mix
from peers_sql import LAYOUT, build_peer_db, layout, to_sql
from serving import (
    OUT_DIR,
    Service,
    ServiceFailed,
    build_catalogue,
    create_key,
    free_port,
    process_tree,
    read_listings,
    serve_offers_workers,
)

BENCH_DIR = Path(__file__).resolve().parent
PEERS_VENV = BENCH_DIR / ".peers-venv"
DATASETTE_VERSION = "0.65.5"
DATASETTE = PEERS_VENV / "bin" / "datasette"

DEFAULT_LISTINGS = 50_000
DEFAULT_SEED = 1
DEFAULT_REQUESTS = 400
WARMUP_REQUESTS = 20
CONCURRENCY_LEVELS = (1, 16)
ROUNDS = 6
"""Interleaved rounds per side, class and concurrency."""
ROUND_S = 1.0
"""How long a side keeps sending in a round (its last answers may take longer to come): long enough for 16
clients to reach a steady state, for ours as for Datasette's."""
REQUEST_TIMEOUT_S = 120.0
START_TIMEOUT_S = 300.0
SQL_TIME_LIMIT_MS = 20_000
CACHE_SIZE_KB = 65_536
"""Datasette's SQLite page cache per connection: the whole database stays in memory, as our index does."""
SQL_THREADS = 3
"""Datasette's default ``num_sql_threads``."""

TARGET_RATIOS = {"text": 5.0, "geo": 5.0, "filters": 20.0, "facets": 20.0}


# -- the two sides --------------------------------------------------------------------------------------------


def ensure_datasette() -> Path:
    """Datasette in ``bench/.peers-venv`` (made with uv on first use), never in the project's environment."""
    if DATASETTE.exists():
        return DATASETTE
    uv = shutil.which("uv")
    base = [uv] if uv else [sys.executable, "-m", "uv"]
    print(f"installing datasette {DATASETTE_VERSION} into {PEERS_VENV} (first use)")
    subprocess.run([*base, "venv", "--quiet", "--python", "3.11", str(PEERS_VENV)], check=True)
    subprocess.run(
        [*base, "pip", "install", "--quiet", "--python", str(PEERS_VENV), f"datasette=={DATASETTE_VERSION}"],
        check=True,
    )
    return DATASETTE


@dataclass
class Datasette:
    process: subprocess.Popen[bytes]
    base_url: str
    log_path: Path
    started_s: float

    @classmethod
    def start(cls, db_path: Path, log_path: Path) -> Datasette:
        port = free_port()
        settings = {
            "sql_time_limit_ms": SQL_TIME_LIMIT_MS,
            "max_returned_rows": 1000,
            "cache_size_kb": CACHE_SIZE_KB,
            "num_sql_threads": SQL_THREADS,
            "default_cache_ttl": 0,
            "suggest_facets": "off",
        }
        command = [str(DATASETTE), "serve", "-i", str(db_path), "--host", "127.0.0.1", "--port", str(port)]
        for name, value in settings.items():
            command += ["--setting", name, str(value)]
        started = time.perf_counter()
        with log_path.open("wb") as log:
            process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        peer = cls(process, f"http://127.0.0.1:{port}", log_path, 0.0)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise ServiceFailed(f"datasette exited with {process.returncode}; see {log_path}")
            try:
                if httpx.get(peer.base_url + "/-/versions.json", timeout=2.0).status_code == 200:
                    peer.started_s = time.perf_counter() - started
                    return peer
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        peer.stop()
        raise ServiceFailed(f"no answer from datasette within {START_TIMEOUT_S:.0f} s; see {log_path}")

    def version(self) -> str:
        body = httpx.get(self.base_url + "/-/versions.json", timeout=5.0).json()
        return str(body.get("datasette", {}).get("version"))

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@dataclass
class Answer:
    side: str
    category: str
    index: int
    latency_ms: float
    status: int
    total: int | None = None
    error: str | None = None


class Sides:
    """Sends a request to either side; each worker thread keeps one keep-alive connection per side."""

    def __init__(self, ours_url: str, key: str, peer_url: str, db_name: str) -> None:
        self.urls = {"ours": ours_url, "datasette": peer_url}
        self.db_name = db_name
        self.key = key
        self.local = threading.local()

    def client(self, side: str) -> LeanClient:
        clients: dict[str, LeanClient] | None = getattr(self.local, "clients", None)
        if clients is None:
            clients = self.local.clients = {}
        if side not in clients:
            headers = {"x-api-key": self.key} if side == "ours" else {}
            clients[side] = LeanClient(self.urls[side], headers, timeout=REQUEST_TIMEOUT_S)
        return clients[side]

    def send(
        self, side: str, index: int, request: BenchRequest, translated: tuple[str, dict[str, str]]
    ) -> tuple[Answer, bytes]:
        """The answer, its total not read yet, and the body it is in (see :meth:`read_total`)."""
        client = self.client(side)
        if side == "ours":
            path, query = request.path, request.query()
        else:
            path, query = f"/{self.db_name}.json", {"sql": translated[0], "_shape": "array", **translated[1]}
        started = time.perf_counter()
        status, content = client.get(path, query)
        latency_ms = (time.perf_counter() - started) * 1000
        return Answer(side, request.category, index, latency_ms, status), content

    @staticmethod
    def read_total(answer: Answer, content: bytes) -> Answer:
        """The answer with the total its body states (or the error it is). Done after a round, not in it: decoding
        a page of 20 listings (about 150 KB) costs the client half a millisecond, a third of one of our requests."""
        if answer.status != 200:
            answer.error = content[:300].decode(errors="replace")
            return answer
        body = orjson.loads(content)
        if answer.side == "ours":
            answer.total = body["total"]
        else:
            answer.total = next((row["n"] for row in body if row["part"] == "total"), None)
        return answer

    def send_and_read(
        self, side: str, index: int, request: BenchRequest, translated: tuple[str, dict[str, str]]
    ) -> Answer:
        return self.read_total(*self.send(side, index, request, translated))


# -- the interleaved run --------------------------------------------------------------------------------------


@dataclass
class ClassRun:
    category: str
    concurrency: int
    wall_s: dict[str, float] = field(default_factory=lambda: {"ours": 0.0, "datasette": 0.0})
    answers: dict[str, list[Answer]] = field(default_factory=lambda: {"ours": [], "datasette": []})
    next_request: dict[str, int] = field(default_factory=lambda: {"ours": 0, "datasette": 0})
    """Where each side's next round starts in the class's requests: rounds go on through them, cyclically."""


def run_round(
    sides: Sides,
    side: str,
    run: ClassRun,
    indexes: Sequence[int],
    mix: Sequence[BenchRequest],
    translated: Sequence[tuple[str, dict[str, str]]],
) -> None:
    """One side's round: ``run.concurrency`` threads each send the class's next request as soon as their last is
    answered, until :data:`ROUND_S` has passed; the round's wall time runs until the last answer is in."""
    lock = threading.Lock()
    answers: list[tuple[Answer, bytes]] = []
    deadline = time.perf_counter() + ROUND_S

    def worker() -> None:
        while time.perf_counter() < deadline:
            with lock:
                index = indexes[run.next_request[side] % len(indexes)]
                run.next_request[side] += 1
            answer = sides.send(side, index, mix[index], translated[index])
            with lock:
                answers.append(answer)

    started = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(run.concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    run.wall_s[side] += time.perf_counter() - started
    run.answers[side] += [sides.read_total(answer, content) for answer, content in answers]


def run_interleaved(
    sides: Sides,
    mix: Sequence[BenchRequest],
    translated: Sequence[tuple[str, dict[str, str]]],
    concurrency: int,
    progress: Callable[[str], None],
) -> dict[str, ClassRun]:
    """Per class, :data:`ROUNDS` rounds a side, in the order ours, theirs, theirs, ours, ...: machine noise hits
    both alike."""
    runs: dict[str, ClassRun] = {}
    for category in CATEGORIES:
        run = runs[category] = ClassRun(category, concurrency)
        indexes = [i for i, r in enumerate(mix) if r.category == category]
        for number in range(ROUNDS):
            for side in ("ours", "datasette") if number % 2 == 0 else ("datasette", "ours"):
                run_round(sides, side, run, indexes, mix, translated)
        progress(
            f"  c{concurrency} {category}: ours {len(run.answers['ours'])} requests in {run.wall_s['ours']:.1f} s, "
            f"datasette {len(run.answers['datasette'])} in {run.wall_s['datasette']:.1f} s"
        )
    return runs


def class_figures(run: ClassRun) -> JsonDict:
    figures: JsonDict = {}
    for side in ("ours", "datasette"):
        answers = run.answers[side]
        wall = run.wall_s[side]
        figures[side] = {
            "requests": len(answers),
            "wall_s": round(wall, 2),
            "requests_per_s": round(len(answers) / wall, 1) if wall else None,
            "failures": sum(a.status != 200 for a in answers),
            "latency": percentiles([a.latency_ms for a in answers]),
        }
    ours, peer = figures["ours"]["requests_per_s"], figures["datasette"]["requests_per_s"]
    figures["ratio"] = round(ours / peer, 1) if ours and peer else None
    # Each request both sides answered, once (a side may have answered it in several rounds).
    theirs = {a.index: a.total for a in run.answers["datasette"] if a.total is not None}
    ours_totals = {a.index: a.total for a in run.answers["ours"] if a.total is not None}
    agreed = checked = 0
    disagreements = []
    for index in sorted(ours_totals.keys() & theirs.keys()):
        checked += 1
        if ours_totals[index] == theirs[index]:
            agreed += 1
        else:
            disagreements.append({"request": index, "ours": ours_totals[index], "datasette": theirs[index]})
    errors = [a.error for side in ("ours", "datasette") for a in run.answers[side] if a.error]
    figures["totals"] = {"checked": checked, "agreed": agreed, "disagreements": disagreements[:20]}
    figures["errors"] = errors[:5]
    return figures


# -- the run --------------------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--listings", type=int, default=DEFAULT_LISTINGS)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--requests", type=int, default=DEFAULT_REQUESTS, help="Requests in the mix (each side)")
    parser.add_argument("--data", type=Path, default=None, help="Default: bench/out/data-<listings>-<seed>")
    parser.add_argument("--fresh", action="store_true", help="Generate the catalogue even when one is there")
    parser.add_argument(
        "--workers", type=int, default=None, help="Passed to precon serve when it offers --workers; else ignored"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    data_dir: Path = args.data or OUT_DIR / f"data-{args.listings}-{args.seed}"
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    print(f"Peer baseline: ours against Datasette {DATASETTE_VERSION}, {args.listings:,} listings, seed {args.seed}")
    ensure_datasette()
    workers = None
    if args.workers is not None:
        if serve_offers_workers():
            workers = args.workers
        else:
            print(f"note: the installed precon serve has no --workers; --workers {args.workers} is left out")

    reuse = not args.fresh and ServiceSettings(data_dir=data_dir).catalogue_path.exists()
    build_s = build_catalogue(args.listings, args.seed, data_dir, reuse)
    print(f"catalogue: {data_dir} " + ("(reused)" if build_s is None else f"built in {build_s:.1f} s"))

    started = time.perf_counter()
    docs = read_listings(data_dir)
    if len(docs) != args.listings:
        print(f"note: the catalogue holds {len(docs):,} listings, not {args.listings:,}")
    rng = random.Random(args.seed)
    vocabulary = Vocabulary.of(docs, rng)
    requests = build_mix(WARMUP_REQUESTS + args.requests, vocabulary, rng)
    warmup, mix = requests[:WARMUP_REQUESTS], requests[WARMUP_REQUESTS:]
    translated = [to_sql(r) for r in requests]
    db_path = OUT_DIR / f"peers-{args.listings}-{args.seed}.db"
    catalogue_path = ServiceSettings(data_dir=data_dir).catalogue_path
    if not db_path.exists() or db_path.stat().st_mtime < catalogue_path.stat().st_mtime or layout(db_path) != LAYOUT:
        db_started = time.perf_counter()
        build_peer_db(docs, db_path)
        print(f"peer database {db_path} built in {time.perf_counter() - db_started:.1f} s")
    else:
        print(f"peer database {db_path} (reused)")
    del docs
    print(f"read and prepared in {time.perf_counter() - started:.1f} s")
    shares = Counter(r.category for r in mix)
    print("mix: " + ", ".join(f"{c} {shares[c]}" for c in CATEGORIES) + f"; {WARMUP_REQUESTS} warm-up requests")

    key = create_key(data_dir)
    try:
        ours = Service.start(data_dir, OUT_DIR / f"peers-service-{args.listings}.log", workers)
    except ServiceFailed as error:
        print(f"FAILED: {error}", file=sys.stderr)
        return 2
    try:
        peer = Datasette.start(db_path, OUT_DIR / f"peers-datasette-{args.listings}.log")
    except ServiceFailed as error:
        ours.stop()
        print(f"FAILED: {error}", file=sys.stderr)
        return 2
    results: dict[str, dict[str, JsonDict]] = {}
    try:
        version = peer.version()
        processes = len(process_tree(ours.process.pid))
        print(
            f"ours at {ours.base_url} ({processes} processes, healthy after {ours.started_s:.1f} s); "
            f"datasette {version} at {peer.base_url}"
        )
        sides = Sides(ours.base_url, key, peer.base_url, db_path.stem)
        failed = [
            answer
            for i, request in enumerate(warmup)
            for side in ("ours", "datasette")
            if (answer := sides.send_and_read(side, i, request, translated[i])).status != 200
        ]
        for answer in failed[:5]:
            print(f"warm-up: {answer.side} answered {answer.status}: {answer.error}", file=sys.stderr)
        if failed:
            print(f"FAILED: {len(failed)} warm-up requests were not answered", file=sys.stderr)
            return 2
        measured = translated[WARMUP_REQUESTS:]
        for concurrency in CONCURRENCY_LEVELS:
            runs = run_interleaved(sides, mix, measured, concurrency, print)
            results[f"c{concurrency}"] = {category: class_figures(run) for category, run in runs.items()}
    finally:
        ours.stop()
        peer.stop()

    print_table(results)
    checked = check_targets(results)
    for target in checked:
        print(f"{'PASS' if target['pass'] else 'MISS'}  {target['target']}: {target['value']}")

    report = {
        "listings": args.listings,
        "seed": args.seed,
        "requests": args.requests,
        "warmup_requests": WARMUP_REQUESTS,
        "per_page": PER_PAGE,
        "cpus": os.cpu_count(),
        "workers": workers,
        "datasette": {
            "version": version,
            "num_sql_threads": SQL_THREADS,
            "cache_size_kb": CACHE_SIZE_KB,
            "sql_time_limit_ms": SQL_TIME_LIMIT_MS,
        },
        "rounds": ROUNDS,
        "round_s": ROUND_S,
        "build_s": None if build_s is None else round(build_s, 1),
        "results": results,
        "targets": checked,
    }
    out = OUT_DIR / f"peers-{args.listings}{'' if workers is None else f'-w{workers}'}.json"
    out.write_bytes(orjson.dumps(report, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS))
    print(f"figures written to {out}")
    return 0


def print_table(results: dict[str, dict[str, JsonDict]]) -> None:
    header = (
        f"\n{'conc':>4}  {'class':<8} {'ours req/s':>10} {'datasette req/s':>15} {'ratio':>7} "
        f"{'ours p50/p95 ms':>16} {'datasette p50/p95 ms':>21}  totals agree"
    )
    print(header)
    for level, classes in results.items():
        for category, row in classes.items():
            ours, peer, totals = row["ours"], row["datasette"], row["totals"]
            ratio = "-" if row["ratio"] is None else f"{row['ratio']:.1f}x"
            failures = ours["failures"] + peer["failures"]
            print(
                f"{level[1:]:>4}  {category:<8} {_rps(ours):>10} {_rps(peer):>15} {ratio:>7} "
                f"{_p(ours):>16} {_p(peer):>21}  {totals['agreed']}/{totals['checked']}"
                + (f" ({failures} failed)" if failures else "")
            )
    for level, classes in results.items():
        for category, row in classes.items():
            for miss in row["totals"]["disagreements"][:3]:
                print(
                    f"  {level} {category}: request {miss['request']}: ours {miss['ours']}, "
                    f"datasette {miss['datasette']}"
                )
            for error in row["errors"][:2]:
                print(f"  {level} {category}: error: {error}")


def _rps(side: JsonDict) -> str:
    return "-" if side["requests_per_s"] is None else f"{side['requests_per_s']:.1f}"


def _p(side: JsonDict) -> str:
    latency = side["latency"]
    return "-" if latency["p50"] is None else f"{latency['p50']:.1f}/{latency['p95']:.1f}"


def check_targets(results: dict[str, dict[str, JsonDict]]) -> list[JsonDict]:
    checked = []
    for level, classes in results.items():
        for category, least in TARGET_RATIOS.items():
            value = classes[category]["ratio"]
            checked.append(
                {
                    "target": f"{level} {category}: ours >= {least:g} x datasette's throughput",
                    "value": value,
                    "pass": value is not None and value >= least,
                }
            )
    return checked


if __name__ == "__main__":
    sys.exit(main())
