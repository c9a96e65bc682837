"""How quickly the Search page answers a person, measured in a real browser (Playwright driving Debian's chromium).

    .venv/bin/python bench/dashboard.py [--runs 8] [--listings 2500]

Starts ``streamlit run app.py`` on a loopback port over a catalogue of its own (made before the dashboard starts;
``--data DIR`` uses the catalogue already in a data directory instead, such as bench/history.py's at 50,000
listings) and measures, ``--runs`` times each:

* **cold load**: a new browser session opens ``/search`` until the results are on the page (timed from outside);
* **enter**: words typed in the search box, Enter, until the results for them are on the page (new words each time);
* **facet pick**: a value ticked (or unticked) in a refinement list until the page has rerun with it;
* **slider step**: one arrow key on the price slider's lower handle until the page has rerun with it (the way a
  person moves it from the keyboard: each press is a step);
* **baseline rerun**: "Show more" on a refinement list, a rerun that asks the service nothing new: what any
  interaction costs in Streamlit and the browser on this machine, measured in the same run.

Beside Search's cold load, in the same run and the same way, the cold loads of other pages, each as a ratio to
Search's (target: within 1.5×, the Map within 2×): **Changes** (``/changes``, the last 30 days of the simulated
market history a new catalogue comes with), **Compare** (``/compare?ids=A,B,C``, when ``views/compare.py`` exists),
**Map** (``/map``, the default circle) and **Listing** (the listing with the number of units nearest 800); and the
**Market** page's (``/market``, two years by month) as a ratio to the **Facets** page's (target: within 2×).
Each of those pages is loaded once first, untimed in the ratios, to fill the
service's and the dashboard's caches as Search's warm-up does; that first load is printed as "(first)" (at 50,000
listings the Market page's waits for the market columns to be built). ``--pages market,facets`` measures only those.
``--json FILE`` writes every time measured.

The other four are timed inside the page, from the key or click event to the last change the rerun it caused
made to the page, so the driver's own overhead is not counted. It prints p50 and p95 per action and each p50 as a ratio
to the baseline's, since absolute times on a shared 2-core machine are noisy. Targets (issue 8): enter p50
≤ 300 ms, facet pick p50 ≤ 300 ms, cold load p50 ≤ 1.5 s; (issue 44) a slider step p50 ≤ 300 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from precon.service.config import ServiceSettings  # noqa: E402
from precon.service.runtime import DataDirectory  # noqa: E402

READY = '[data-testid="stApp"][data-test-script-state="notRunning"]'
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]  # fmt: skip
WORDS = ["park", "condo", "tower", "lofts", "garden", "river", "station", "terrace", "square", "village", "harbour",
         "west", "north", "east", "south", "king", "queen", "bay", "hill", "grove", "lake", "place"]  # fmt: skip
TARGETS_MS = {"enter": 300, "facet pick": 300, "slider step": 300, "cold load": 1500}
PAGE_RATIO_TARGET = 1.5
"""Another page's cold load against Search's, measured in the same run."""
PAGE_RATIO_TARGETS = {"map load": 2.0}
"""Pages allowed more than :data:`PAGE_RATIO_TARGET` against Search's cold load."""
PRICE_SLIDER = ".st-key-rf_range_price"
WARM_TIMEOUT_MS = 900_000
"""How long a page's first load may take: at 50,000 listings the Market page's builds the market columns first."""
PAIRED_TARGETS = {("market load", "facets load"): 2.0}
"""A page's cold load against another's (not Search's), measured in the same run."""
LISTING_UNITS = 800


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_dashboard(
    data_dir: Path, listings: int | None = None, timeout_s: float = 60
) -> tuple[subprocess.Popen[bytes], str]:
    """The dashboard on the embedded service over ``data_dir``: a catalogue of ``listings`` made there first
    (before any timing), or the one already in it when ``listings`` is None."""
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("PRECON_API")},
        "PRECON_SERVICE_DATA_DIR": str(data_dir),
        "PRECON_CACHE_URL": "memory:",
    }
    if listings is not None:
        settings = ServiceSettings(dev=True, data_dir=data_dir, default_listings=listings)
        DataDirectory.open(settings, serving=False).close()
        env["PRECON_SERVICE_DEFAULT_LISTINGS"] = str(listings)
    port = free_port()
    command = [
        sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.port", str(port),
        "--server.address", "127.0.0.1", "--server.headless", "true", "--browser.gatherUsageStats", "false",
    ]  # fmt: skip
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/_stcore/health", timeout=2).status_code == 200:
                return process, url
        except httpx.TransportError:
            time.sleep(0.2)
    process.kill()
    raise SystemExit("streamlit did not start")


def wait_rerun(page: Any, url_fragment: str | None = None) -> None:
    """Until the page's script has rerun (and the address holds ``url_fragment``) and the results are shown."""
    if url_fragment is not None:
        page.wait_for_function("f => decodeURIComponent(location.search).includes(f)", arg=url_fragment)
    else:
        page.wait_for_timeout(30)
    page.wait_for_selector(READY)
    page.get_by_text("results in").first.wait_for()


MESSAGES = """() => {
    // Every message the page receives from the server is timed: a rerun that changes nothing on the page still
    // ends with one ("script finished").
    window.__lastMessage = null;
    const Native = window.WebSocket;
    window.WebSocket = function (...args) {
        const socket = new Native(...args);
        socket.addEventListener("message", () => { window.__lastMessage = performance.now(); });
        return socket;
    };
    window.WebSocket.prototype = Native.prototype;
    Object.assign(window.WebSocket, {CONNECTING: 0, OPEN: 1, CLOSING: 2, CLOSED: 3});
}"""
WATCH = """() => {
    // From the person's input (a key or a click, seen in the capture phase) to the last change the answer made:
    // the last message from the server or change to the page, once the script is not running and all has been
    // quiet for QUIET ms.
    const QUIET = 150;
    window.__answered = new Promise(resolve => {
        let started = null, changed = null;
        const mark = () => { if (started === null) started = performance.now(); };
        const keys = ["Enter", "ArrowLeft", "ArrowRight"];
        document.addEventListener("keydown", e => { if (keys.includes(e.key)) mark(); }, {capture: true, once: true});
        document.addEventListener("click", mark, {capture: true, once: true});
        const app = document.querySelector('[data-testid="stApp"]');
        const watch = new MutationObserver(() => { if (started !== null) changed = performance.now(); });
        watch.observe(app, {attributes: true, childList: true, subtree: true, characterData: true});
        const settled = () => {
            const fresh = window.__lastMessage !== null && window.__lastMessage > started;
            const message = fresh ? window.__lastMessage : null;
            const last = Math.max(changed || 0, message || 0);
            const idle = app.getAttribute("data-test-script-state") === "notRunning";
            if (started !== null && last > 0 && idle && performance.now() - last > QUIET) {
                watch.disconnect();
                resolve(last - started);
            } else {
                requestAnimationFrame(settled);
            }
        };
        requestAnimationFrame(settled);
    });
}"""


def _timing_contexts(new_context: Callable[..., Any]) -> Callable[..., Any]:
    def timed_context(**options: Any) -> Any:
        context = new_context(**options)
        context.add_init_script(f"({MESSAGES})()")
        return context

    return timed_context


def answered_in(page: Any, action: Callable[[], None]) -> float:
    """Milliseconds from the input ``action`` makes to the page painted with its answer, timed in the page."""
    page.evaluate(WATCH)
    action()
    elapsed = float(page.evaluate("() => window.__answered"))
    page.wait_for_selector(READY)
    return elapsed


def timed(action: Callable[[], None]) -> float:
    started = time.perf_counter()
    action()
    return (time.perf_counter() - started) * 1000


@dataclass(frozen=True)
class OtherPage:
    action: str
    path: str
    ready_text: str


def other_pages(data_dir: Path, listings: int, only: set[str] | None = None) -> tuple[list[OtherPage], list[str]]:
    """The pages measured beside Search, with ids from the catalogue; and notes on those left out. ``only``: the
    names of the pages to measure (``changes``, ``compare``, ``listing``, ``facets``, ``market``, ``map``), all by
    default."""
    from precon.service.embedded import EmbeddedService

    plain = [
        OtherPage("changes load", "/changes", "changes in"),
        OtherPage("facets load", "/facets", "Counts per facet"),
        OtherPage("market load", "/market", "Units whose status became Sold"),
        OtherPage("map load", "/map", "listings within"),
    ]
    pages = [page for page in plain if only is None or page.action.split()[0] in only]
    notes: list[str] = []
    if only is not None and not only & {"compare", "listing"}:
        return pages, notes
    with EmbeddedService(data_dir, listings=listings) as service:
        client = service.client
        ids = [x.id for x in client.search_listings(per_page=3, retrieve_attributes=["name"]).results if x.id]
        sizes = {
            x.id: sum(len(plan.units) for plan in x.floorPlans or [])
            for x in client.iter_listings(per_page=250, retrieve_attributes=["floorPlans"])
            if x.id
        }
    if (ROOT / "views" / "compare.py").exists():
        pages.append(OtherPage("compare load", f"/compare?ids={','.join(ids)}", "Compare listings"))
    else:
        notes.append("Compare page not measured: views/compare.py does not exist in this checkout.")
    if sizes:
        chosen = min(sizes, key=lambda listing_id: abs(sizes[listing_id] - LISTING_UNITS))
        pages.append(OtherPage("listing load", f"/listing?id={chosen}", "Floor plans"))
        notes.append(f"Listing page: {chosen}, {sizes[chosen]:,} units (the nearest to {LISTING_UNITS}).")
    return pages, notes


def cold_loads(browser: Any, url: str, runs: int, path: str, ready: Callable[[Any], None]) -> list[float]:
    """A new browser session opening ``path``, ``runs`` times, until ``ready`` says the page is there."""
    times = []
    for _ in range(runs):
        page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
        page.set_default_timeout(60_000)

        def load(page: Any = page) -> None:
            page.goto(f"{url}{path}")
            ready(page)

        times.append(timed(load))
        page.context.close()
    return times


def page_ready(text: str) -> Callable[[Any], None]:
    def ready(page: Any) -> None:
        page.wait_for_timeout(30)
        page.wait_for_selector(READY)
        page.get_by_text(text).first.wait_for()
        page.wait_for_selector(READY)

    return ready


def measure(url: str, runs: int, others: Sequence[OtherPage] = ()) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {
        "baseline rerun": [], "cold load": [], "enter": [], "facet pick": [], "slider step": [],
    }  # fmt: skip
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=shutil.which("chromium"), args=CHROMIUM_ARGS)
        browser.new_context = _timing_contexts(browser.new_context)  # type: ignore[method-assign]
        warm = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
        warm.goto(f"{url}/search")
        wait_rerun(warm)  # the first load builds the service's indexes: not what a person sees twice
        warm.context.close()
        for _ in range(runs):
            page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
            page.set_default_timeout(60_000)

            def load(page: Any = page) -> None:
                page.goto(f"{url}/search")
                wait_rerun(page)

            times["cold load"].append(timed(load))
            page.context.close()
        for other in others:
            warm = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
            warm.set_default_timeout(WARM_TIMEOUT_MS)

            def first(warm: Any = warm, other: OtherPage = other) -> None:
                warm.goto(f"{url}{other.path}")
                page_ready(other.ready_text)(warm)  # the page's first answers cached, as Search's warm-up does

            times[f"{other.action} (first)"] = [timed(first)]
            warm.context.close()
            times[other.action] = cold_loads(browser, url, runs, other.path, page_ready(other.ready_text))
        page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
        page.set_default_timeout(60_000)
        page.goto(f"{url}/search")
        wait_rerun(page)
        box = page.get_by_placeholder("Words in the name", exact=False)
        for index in range(runs):
            words = WORDS[index % len(WORDS)]

            box.fill(words)
            times["enter"].append(answered_in(page, lambda: box.press("Enter")))
            wait_rerun(page, f"q={words}")
        box.fill("")
        box.press("Enter")
        wait_rerun(page)
        details = page.locator(".st-key-search_filters details")  # the panel is closed at first: open it once
        if details.count() and details.first.get_attribute("open") is None:
            details.first.locator("summary").click()
            page.locator(".st-key-rf_list_type").first.wait_for(state="visible")
        for index in range(runs):
            checkbox = page.locator(".st-key-rf_list_type").locator('[data-testid="stCheckbox"]').nth(index % 2)

            times["facet pick"].append(answered_in(page, checkbox.locator("label").click))
            wait_rerun(page)
        times["slider step"] = slider_steps(page, runs)
        for index in range(runs):
            label = "Show more" if index % 2 == 0 else "Show fewer"
            button = page.get_by_role("button", name=label).first

            if button.count():
                times["baseline rerun"].append(answered_in(page, button.click))
                wait_rerun(page)
        browser.close()
    return times


def slider_steps(page: Any, runs: int) -> list[float]:
    """The price slider's lower handle moved one step at a time from the keyboard, up then back down."""
    handle = page.locator(f'{PRICE_SLIDER} input[type="range"]').first  # each handle is a range input
    if not handle.count():
        return []
    handle.scroll_into_view_if_needed()
    steps = []
    for index in range(runs):
        key = "ArrowRight" if index < (runs + 1) // 2 else "ArrowLeft"
        before = handle.evaluate("input => input.value")
        handle.focus()

        steps.append(answered_in(page, lambda key=key: handle.press(key)))
        page.wait_for_function(
            "([selector, before]) => document.querySelector(selector).value !== before",
            arg=[f'{PRICE_SLIDER} input[type="range"]', before],
        )
        wait_rerun(page)
    return steps


def report(times: dict[str, list[float]]) -> str:
    baseline = statistics.median(times["baseline rerun"]) if times["baseline rerun"] else float("nan")
    lines = [f"{'action':<16}{'runs':>6}{'p50 ms':>10}{'p95 ms':>10}{'p50 / baseline':>17}{'target p50':>12}"]
    for action, values in times.items():
        if not values:
            continue
        ordered = sorted(values)
        p50 = statistics.median(ordered)
        p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
        target = TARGETS_MS.get(action)
        lines.append(
            f"{action:<16}{len(values):>6}{p50:>10.0f}{p95:>10.0f}{p50 / baseline:>16.1f}×"
            f"{(f'≤ {target}' if target else ''):>12}"
        )
    search = statistics.median(times["cold load"]) if times["cold load"] else float("nan")
    for action, values in times.items():
        paired = {a for pair in PAIRED_TARGETS for a in pair}
        if action.endswith(" load") and action != "cold load" and action not in paired and values:
            ratio = statistics.median(values) / search
            allowed = PAGE_RATIO_TARGETS.get(action, PAGE_RATIO_TARGET)
            verdict = "ok" if ratio <= allowed else "over"
            lines.append(f"{action} p50 / Search's cold load p50: {ratio:.2f}× (target ≤ {allowed}×, {verdict})")
    for (action, baseline_action), target in PAIRED_TARGETS.items():
        if times.get(action) and times.get(baseline_action):
            ratio = statistics.median(times[action]) / statistics.median(times[baseline_action])
            verdict = "ok" if ratio <= target else "over"
            lines.append(f"{action} p50 / {baseline_action} p50: {ratio:.2f}× (target ≤ {target}×, {verdict})")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--listings", type=int, default=2500)
    parser.add_argument("--json", type=Path, default=None, help="Also write every time measured to this file.")
    parser.add_argument("--data", type=Path, default=None, help="A data directory whose catalogue to use as it is.")
    parser.add_argument("--pages", default=None, help="Only these other pages, comma-separated (market,facets).")
    arguments = parser.parse_args()
    only = set(arguments.pages.split(",")) if arguments.pages else None
    with tempfile.TemporaryDirectory(prefix="precon-bench-dashboard-") as folder:
        data_dir = arguments.data or Path(folder)
        process, url = start_dashboard(data_dir, None if arguments.data else arguments.listings, timeout_s=300)
        try:
            others, notes = other_pages(data_dir, arguments.listings, only)
            times = measure(url, arguments.runs, others)
        finally:
            process.terminate()
            process.wait(timeout=15)
    print(f"Search page, {arguments.listings:,} listings, {arguments.runs} runs per action")
    for note in notes:
        print(note)
    print(report(times))
    if arguments.json is not None:
        arguments.json.write_text(json.dumps({"listings": arguments.listings, "runs": arguments.runs, "ms": times}))


if __name__ == "__main__":
    main()
