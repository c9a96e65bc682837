"""A daily mirror run against the one it replaced: a source of N listings (50,000 by default) served by ``precon
serve``, 1 % of its listings changed before each round (one unit of each sold), then in the same round the mirror
as it was before it kept history (every page fetched into a new file that replaces the catalogue: the baseline,
run from git at BASELINE_COMMIT) and the mirror as it is (the pages fetched, compared with the catalogue, the
differences written in one transaction). Prints each run's seconds and, for the mirror as it is, where its time
went: fetching (requests, decoding, the work file), comparing, writing; the comparison and the write together must
be at most a fifth of the run.

    .venv/bin/python bench/mirror.py [--listings 50000] [--rounds 2] [--changed 0.01]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import mix
import serving

from precon.client import Client
from precon.service.config import ServiceSettings
from precon.service.stores.mirror import mirror
from precon.service.stores.sqlite.store import SQLiteStore

BASELINE_COMMIT = "89ce7fa"
"""The last commit whose mirror replaced the catalogue whole, recording no history."""
ROOT = Path(__file__).resolve().parent.parent


def baseline_mirror() -> Any:
    """The mirror module as it was at :data:`BASELINE_COMMIT`, loaded from git beside today's."""
    source = subprocess.run(
        ["git", "show", f"{BASELINE_COMMIT}:precon/service/stores/mirror.py"],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    module = types.ModuleType("baseline_mirror")
    module.__file__ = f"<{BASELINE_COMMIT}:mirror.py>"
    sys.modules[module.__name__] = module  # dataclasses look their module up
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    return module


def change_some(catalogue: Path, share: float, rng: random.Random) -> int:
    """Sells one available unit in ``share`` of the source's listings (a day of the market); answers how many."""
    store = SQLiteStore(catalogue)
    try:
        ids = [row[0] for row in store._db().execute("SELECT listing_id FROM listings ORDER BY listing_id")]
        chosen = rng.sample(ids, max(1, int(len(ids) * share)))

        def sell_one(listing_id: str, document: dict[str, Any]) -> dict[str, Any] | None:
            for plan in document.get("floorPlans") or []:
                for unit in plan.get("units") or []:
                    if unit.get("status") == "Available":
                        plans = [dict(p) for p in document["floorPlans"]]
                        changed = plans[document["floorPlans"].index(plan)]
                        changed["units"] = [
                            {**u, "status": "Sold"} if u is unit else u for u in plan["units"]
                        ]  # fmt: skip
                        return {**document, "floorPlans": plans}
            return None

        return len(store.update_listings(chosen, sell_one))
    finally:
        store.close()


def timed(run: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    result = run()
    return time.perf_counter() - started, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--listings", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--changed", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--page-size", type=int, default=500, help="Both mirrors' (1,000 of 50,000 listings pass the answer limit)"
    )
    args = parser.parse_args()
    out = serving.OUT_DIR / f"mirror-{args.listings}"
    source_dir, work = out / "source", out / "runs"
    built = serving.build_catalogue(args.listings, args.seed, source_dir, reuse=True)
    print(f"source: {args.listings} listings ({f'built in {built:.0f} s' if built else 'reused'})", flush=True)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    key = serving.create_key(source_dir)
    service = serving.Service.start(source_dir, out / "source.log")
    old = baseline_mirror()
    rng = random.Random(args.seed)
    rounds: list[dict[str, Any]] = []
    try:
        with Client(service.base_url, key, mix.PRODUCT, cache=False, timeout=600) as client:
            today = work / "today" / "catalogue.sqlite3"
            today.parent.mkdir()
            first, report = timed(lambda: mirror(client, today, page_size=args.page_size))
            print(f"first run of the mirror as it is (every listing created): {first:.1f} s", flush=True)
            for number in range(1, args.rounds + 1):
                changed = change_some(ServiceSettings(data_dir=source_dir).catalogue_path, args.changed, rng)
                before = work / f"before-{number}" / "catalogue.sqlite3"
                before.parent.mkdir()
                baseline_s, _ = timed(lambda before=before: old.mirror(client, before, page_size=args.page_size))
                now_s, report = timed(lambda: mirror(client, today, page_size=args.page_size))
                shutil.rmtree(before.parent)
                spent = report.timings
                row = {
                    "round": number, "listings changed": changed, "before s": round(baseline_s, 1),
                    "after s": round(now_s, 1), "fetch s": round(spent.fetch, 1), "compare s": round(spent.compare, 1),
                    "write s": round(spent.write, 1),
                    "compare+write share": round((spent.compare + spent.write) / now_s, 3),
                    "entries": report.differences.entries, "updated": report.differences.updated["listings"],
                }  # fmt: skip
                rounds.append(row)
                print(json.dumps(row), flush=True)
    finally:
        service.stop()
    (out / "mirror.json").write_text(json.dumps({"listings": args.listings, "rounds": rounds}, indent=2))
    worst = max(row["compare+write share"] for row in rounds)
    print(f"compare+write at most {worst:.1%} of a run (target: at most 20 %)")


if __name__ == "__main__":
    main()
