"""How quickly the service answers a page of 1,000 listings, the page the dashboard's charts fetch every listing in
view with (``components.charts.listing_values``: Home's start prices, Market and Facets' price charts).

    .venv/bin/python bench/big_pages.py [--listings 10000] [--rounds 5] [--data DIR]

Makes a catalogue of ``--listings`` listings with ``precon catalogue generate`` in a data directory of its own (or
uses ``--data``, already made), starts the service inside this process on a loopback port, and asks for every
listing, 1,000 a page, with ``retrieveAttributes`` of the price charts (``startPrice``, ``cityOrDistrict``,
``averagePricePerSqFeet``), ``--rounds`` times. Each round asks twice, in turn: as the service answers, and with
the pause of the collector of reference cycles taken out (a page decoded as it was before
:func:`precon.service.stores.records.decode_documents`), the baseline. Prints each one's median time per page and
their ratio. No target: the ratio is what the pause is worth on this machine.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from map import generate  # noqa: E402

from precon.client import Client  # noqa: E402
from precon.service import embedded  # noqa: E402
from precon.service.stores import records  # noqa: E402

ATTRIBUTES = ["startPrice", "cityOrDistrict", "averagePricePerSqFeet"]
PAGE = 1000


@contextlib.contextmanager
def collector_running() -> Iterator[None]:
    """The baseline: a page decoded with the collector running, as before the pause."""
    paused = records.collector_paused
    records.collector_paused = contextlib.nullcontext  # type: ignore[assignment]
    try:
        yield
    finally:
        records.collector_paused = paused


def every_page(client: Client) -> float:
    """Seconds per page, asking for every listing 1,000 at a time (none from the client's cache)."""
    if client.cache is not None:
        client.cache.clear()
    started, page, pages = time.perf_counter(), 0, 1
    while page < pages:
        pages = client.search_listings(retrieve_attributes=ATTRIBUTES, per_page=PAGE, page=page).pages
        page += 1
    return (time.perf_counter() - started) / pages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--listings", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--data", type=Path, help="a data directory already made (default: a new one)")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="precon-big-pages-") as scratch:
        data = options.data or Path(scratch)
        if options.data is None:
            seconds = generate(data, options.listings)
            print(f"catalogue of {options.listings:,} listings generated in {seconds:.0f} s", flush=True)
        with embedded.start(data) as service:
            client = service.client
            every_page(client)  # warm: the column index built, the pages read once
            paused, running = [], []
            for _ in range(options.rounds):
                paused.append(every_page(client))
                with collector_running():
                    running.append(every_page(client))
    paused_s, running_s = statistics.median(paused), statistics.median(running)
    print(f"a page of {PAGE:,} listings with retrieveAttributes, median of {options.rounds} rounds:")
    print(f"  collector paused while decoding:  {paused_s * 1000:7.1f} ms")
    print(f"  collector running (the baseline): {running_s * 1000:7.1f} ms")
    print(f"  ratio paused / baseline: {paused_s / running_s:.2f}")


if __name__ == "__main__":
    main()
