"""``make run``'s first start on a fresh machine, as a person meets it: the time to the URL, then to the first page.

    .venv/bin/python bench/first_start.py [--runs 3] [--listings 2500] [--days 730]

The project's modules are compiled first (``make run``'s first step). Each run starts from a new, empty data
directory and does what ``make run`` does then: ``precon catalogue prepare``
(the default catalogue generated, two years of market history simulated, loaded and indexed), then
``streamlit run app.py`` on the embedded service. It times:

* **to the URL**: from the command to the dashboard answering its health check (``make run`` prints the URL just
  before Streamlit starts; a person who opens it earlier gets no page);
* **first page**: from then to the Home page drawn in Debian's chromium (the script not running, its listings
  table on the page), the embedded service started and its indexes ready. The browser is started before the
  command (a person opening the URL has one running): its own start, about 0.8 s here, is not the dashboard's.

In the same run, over the same data directory, a **second start** (the data ready: prepare does nothing slow) is
timed the same way: the baseline of what Streamlit, the browser and the service's start cost on this machine.
Targets (issue 43): to the URL at most 15 s, the first page at most 5 s after it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from playwright.sync_api import Browser, sync_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from dashboard import CHROMIUM_ARGS, READY, start_dashboard  # noqa: E402

TARGETS_S = {"to the URL": 15.0, "first page": 5.0}
HOME_READY = "Count listings by any attribute"
"""The last thing the Home page draws."""


def start(data_dir: Path, listings: int, days: int, browser: Browser) -> dict[str, float]:
    """One start over ``data_dir`` (new or ready): seconds to the URL and to the first page, in ``browser``."""
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("PRECON_API", "PRECON_SERVICE"))},
        "PRECON_SERVICE_DATA_DIR": str(data_dir),
        "PRECON_SERVICE_DEFAULT_LISTINGS": str(listings),
        "PRECON_SERVICE_DEFAULT_HISTORY_DAYS": str(days),
    }
    started = time.perf_counter()
    subprocess.run([str(ROOT / ".venv/bin/precon"), "catalogue", "prepare", "--data", str(data_dir)], env=env,
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    prepared = time.perf_counter()
    process, url = start_dashboard(data_dir, timeout_s=120)
    try:
        answered = time.perf_counter()
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.goto(url + "/", timeout=120_000)
        page.get_by_text(HOME_READY).first.wait_for(timeout=120_000)
        page.wait_for_selector(READY, timeout=120_000)
        drawn = time.perf_counter()
        page.close()
    finally:
        process.terminate()
        process.wait(timeout=30)
    return {"prepare": prepared - started, "to the URL": answered - started, "first page": drawn - answered}


def compile_project() -> None:
    """The project's modules compiled to bytecode, as ``make run`` does before it starts anything (where
    ``PYTHONDONTWRITEBYTECODE`` is set, nothing else writes it)."""
    sources = ["app.py", "precon", "components", "views"]
    subprocess.run([sys.executable, "-m", "compileall", "-q", "-j", "0", *sources], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--listings", type=int, default=2500)
    parser.add_argument("--days", type=int, default=730)
    args = parser.parse_args()
    compile_project()
    first: list[dict[str, float]] = []
    second: list[dict[str, float]] = []
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=shutil.which("chromium"), args=CHROMIUM_ARGS)
        for run in range(args.runs):
            with tempfile.TemporaryDirectory(prefix="precon-first-start-") as tmp:
                data_dir = Path(tmp) / "data"
                first.append(start(data_dir, args.listings, args.days, browser))
                second.append(start(data_dir, args.listings, args.days, browser))
            print(f"run {run + 1}: first start " + _line(first[-1]) + "; second start " + _line(second[-1]),
                  flush=True)  # fmt: skip
        browser.close()
    print(f"\n{args.listings:,} listings, {args.days} days of history, {args.runs} runs (median):")
    for name in ("prepare", "to the URL", "first page"):
        new, ready = (statistics.median(r[name] for r in runs) for runs in (first, second))
        target = f" (target {TARGETS_S[name]:.0f} s: {'met' if new <= TARGETS_S[name] else 'missed'})" if (
            name in TARGETS_S) else ""  # fmt: skip
        print(f"  {name:<11} first start {new:6.2f} s, second start {ready:6.2f} s, ratio {new / ready:5.2f}{target}")


def _line(times: dict[str, float]) -> str:
    return ", ".join(f"{name} {value:.2f} s" for name, value in times.items())


if __name__ == "__main__":
    main()
