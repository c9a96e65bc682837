"""How quickly the Map page answers a person, measured in a real browser (Playwright driving Debian's chromium),
the way ``bench/dashboard.py`` measures the Search page (and with its timing code).

    .venv/bin/python bench/map.py [--runs 10] [--loads 5] [--listings 50000] [--data DIR]

Makes a catalogue of ``--listings`` listings with ``precon catalogue generate`` in a data directory of its own (or
uses ``--data``, already generated), starts ``streamlit run app.py`` on it on a loopback port, and measures:

* **radius change**: the radius slider moved one step (keyboard), until the table for the new radius is on the page
  (``--runs`` times, between 10 and 25 km), timed inside the page from the key to the last change the rerun made;
* **baseline rerun**: the same centre typed again in another form (``43.65 -79.38`` where the box shows
  ``43.65, -79.38``) and Enter: a rerun of the same fragment that draws the same map and table, timed the same way;
* **map first load**: a new browser session opens ``/map`` (the biggest city's, all listings) until the map's
  canvas and the table are on the page (``--loads`` times, timed from outside);
* **search first load**: the same for ``/search``, the baseline for the map's first load.

Prints p50 and p95 per action and each p50 as a ratio to its baseline. Targets: radius change p50 ≤ 500 ms, map
first load p50 ≤ 3 s (with 50,000 listings).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from dashboard import CHROMIUM_ARGS, READY, WATCH, _timing_contexts, start_dashboard, timed  # noqa: E402

ANY_KEY = 'if (e.key === "Enter") mark();'
assert ANY_KEY in WATCH
WATCH_KEYS = WATCH.replace(ANY_KEY, "mark();")
"""dashboard.py's timing, started by any key (the slider moves on an arrow key), not only Enter."""

TARGETS_MS = {"radius change": 500, "map first load": 3000}
BASELINES = {"radius change": "baseline rerun", "map first load": "search first load"}
SAME_CENTRE = "43.65 -79.38"
"""The centre the page shows as ``43.65, -79.38``, typed in another form: the box changes, the centre does not."""
VIEWPORT = {"width": 1400, "height": 1000}


def generate(data_dir: Path, listings: int) -> float:
    started = time.perf_counter()
    command = [str(ROOT / ".venv" / "bin" / "precon"), "catalogue", "generate", "--listings", str(listings)]
    subprocess.run([*command, "--data", str(data_dir)], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def map_shown(page: Any, radius_km: int | None = None) -> None:
    """Until the script is idle, the map's canvas is there and the table's heading names ``radius_km``."""
    page.wait_for_selector(READY)
    heading = f"within {radius_km} km of" if radius_km is not None else "km of"
    page.get_by_text(heading).first.wait_for()
    page.locator("canvas").first.wait_for(state="attached")
    page.wait_for_selector(READY)


ANSWERED = """() => Promise.race([
    window.__answered,
    new Promise((_, fail) => setTimeout(() => fail(new Error("no answer in 60 s")), 60000)),
])"""


def answered_in(page: Any, action: Any) -> float:
    """Milliseconds from the key or click ``action`` makes to the page painted with its answer, timed in the page."""
    page.evaluate(WATCH_KEYS)
    action()
    elapsed = float(page.evaluate(ANSWERED))
    page.wait_for_selector(READY)
    return elapsed


def cold_loads(browser: Any, url: str, path: str, loads: int, shown: Any) -> list[float]:
    times = []
    for _ in range(loads):
        page = browser.new_context(viewport=VIEWPORT).new_page()
        page.set_default_timeout(120_000)

        def load(page: Any = page) -> None:
            page.goto(url + path)
            shown(page)

        times.append(timed(load))
        page.context.close()
    return times


def progress(what: str) -> None:
    print(f"  … {what}", file=sys.stderr, flush=True)


def measure(url: str, runs: int, loads: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=shutil.which("chromium"), args=CHROMIUM_ARGS)
        browser.new_context = _timing_contexts(browser.new_context)  # type: ignore[method-assign]
        warm = browser.new_context(viewport=VIEWPORT).new_page()
        warm.set_default_timeout(300_000)
        progress("first load (the service builds its indexes)")
        warm.goto(f"{url}/map")  # the first load builds the service's indexes: not what a person sees twice
        map_shown(warm)
        warm.goto(f"{url}/search")
        warm.get_by_text("results in").first.wait_for()
        warm.context.close()

        progress("first loads")
        times["map first load"] = cold_loads(browser, url, "/map", loads, map_shown)

        def search_shown(page: Any) -> None:
            page.wait_for_selector(READY)
            page.get_by_text("results in").first.wait_for()

        times["search first load"] = cold_loads(browser, url, "/search", loads, search_shown)

        page = browser.new_context(viewport=VIEWPORT).new_page()
        page.set_default_timeout(120_000)
        page.goto(f"{url}/map?center=43.65,-79.38&radius=10")
        map_shown(page, 10)
        progress("radius changes and baseline reruns")
        slider = page.locator(".st-key-map_radius_km").get_by_role("slider")
        times["radius change"] = []
        for index in range(runs):
            key, radius = ("ArrowRight", 25) if index % 2 == 0 else ("ArrowLeft", 10)
            slider.focus()
            times["radius change"].append(answered_in(page, lambda key=key: slider.press(key)))
            map_shown(page, radius)
        box = page.locator(".st-key-map_centre_text").locator("input")
        times["baseline rerun"] = []
        for _ in range(runs):
            box.fill(SAME_CENTRE)
            times["baseline rerun"].append(answered_in(page, lambda: box.press("Enter")))
            map_shown(page, 10)
        browser.close()
    return times


def report(times: dict[str, list[float]]) -> str:
    lines = [f"{'action':<19}{'runs':>6}{'p50 ms':>10}{'p95 ms':>10}{'p50 / baseline':>17}{'target p50':>12}"]
    for action, values in times.items():
        ordered = sorted(values)
        p50 = statistics.median(ordered)
        p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
        baseline = BASELINES.get(action)
        ratio = f"{p50 / statistics.median(times[baseline]):>16.1f}×" if baseline in times else f"{'(baseline)':>17}"
        target = TARGETS_MS.get(action)
        lines.append(
            f"{action:<19}{len(values):>6}{p50:>10.0f}{p95:>10.0f}{ratio}{(f'≤ {target}' if target else ''):>12}"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10, help="radius changes and baseline reruns")
    parser.add_argument("--loads", type=int, default=5, help="first loads of each page")
    parser.add_argument("--listings", type=int, default=50_000)
    parser.add_argument("--data", type=Path, help="a data directory already generated (else one is made)")
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="precon-bench-map-") as folder:
        data_dir = arguments.data or Path(folder)
        if arguments.data is None:
            seconds = generate(data_dir, arguments.listings)
            print(f"catalogue of {arguments.listings:,} listings generated in {seconds:.0f} s")
        process, url = start_dashboard(data_dir, timeout_s=120)  # 50,000 listings take a while to open
        try:
            times = measure(url, arguments.runs, arguments.loads)
        finally:
            process.terminate()
            process.wait(timeout=15)
    catalogue = f"the catalogue in {arguments.data}" if arguments.data else f"{arguments.listings:,} listings"
    print(f"Map page, {catalogue}, {arguments.runs} radius changes, {arguments.loads} loads of each page")
    print(report(times))


if __name__ == "__main__":
    main()
