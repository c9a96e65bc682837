"""What counting and logging a request costs: the CPU of ``api/observe.py``'s middleware per request, in the
multiprocess mode ``precon serve --workers N`` runs it in, around an app that answers at once.

    .venv/bin/python bench/observe_cost.py [--requests 20000] [--rounds 5]

Four sides, each run ``--rounds`` times in turn: no middleware, the middleware with metrics off (the JSON request
log only), metrics on with the log, metrics on without it. The log is written to /dev/null through the service's
own logging configuration. A search takes 1 to 2 ms of CPU (bench/service.py), so a few tens of microseconds is a
few percent at most; unlike bench/service.py's ``--metrics-pair``, this holds still on a busy machine.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import logging.config
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

Scope = dict[str, Any]
App = Callable[[Scope, Any, Any], Awaitable[None]]


class _Route:
    path = "/{version}/{province}/search_listings"


ROUTE = _Route()


async def answer_at_once(scope: Scope, receive: Any, send: Any) -> None:
    """What routing leaves in the scope, then a 5 kB answer."""
    scope["route"] = ROUTE
    scope["path_params"] = {"version": "v1", "province": "on"}
    scope.setdefault("state", {})["request_id"] = "f50343bb0362469a8cf5a66868c147ad"
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"x" * 5000})


async def _send(message: dict[str, Any]) -> None:
    return None


async def _receive() -> dict[str, Any]:
    return {"type": "http.request"}


async def per_request_us(app: App, count: int) -> float:
    started = time.perf_counter()
    for _ in range(count):
        scope = {"type": "http", "path": "/v1/on/search_listings", "method": "GET", "headers": []}
        await app(scope, _receive, _send)
    return (time.perf_counter() - started) / count * 1e6


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    directory = tempfile.mkdtemp(prefix="precon-observe-cost-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = directory  # before prometheus-client is imported
    from precon.service.api.observe import MetricsPolicy, ObservedRequests, StoreCollector
    from precon.service.logs import logging_config

    config = logging_config("json")
    config["handlers"]["default"]["stream"] = open(os.devnull, "w")  # noqa: SIM115 (for the whole run)
    logging.config.dictConfig(config)
    access = logging.getLogger("precon.access")
    stores = StoreCollector({}, None)
    sides: dict[str, tuple[App, int]] = {
        "no middleware": (answer_at_once, logging.NOTSET),
        "metrics off, log on": (ObservedRequests(answer_at_once, MetricsPolicy(False), stores), logging.NOTSET),
        "metrics on, log on": (ObservedRequests(answer_at_once, MetricsPolicy(True), stores), logging.NOTSET),
        "metrics on, log off": (ObservedRequests(answer_at_once, MetricsPolicy(True), stores), logging.WARNING),
    }

    async def run() -> dict[str, list[float]]:
        seen: dict[str, list[float]] = {side: [] for side in sides}
        for app, level in sides.values():  # warm-up
            access.setLevel(level)
            await per_request_us(app, 2000)
        for _ in range(args.rounds):
            for side, (app, level) in sides.items():
                access.setLevel(level)
                seen[side].append(await per_request_us(app, args.requests))
        return seen

    seen = asyncio.run(run())
    shutil.rmtree(directory, ignore_errors=True)
    print(f"{args.requests:,} requests a round, {args.rounds} rounds, multiprocess mode ({directory})")
    for side, figures in seen.items():
        print(f"{side:>22}: {statistics.median(figures):6.1f} us a request (median), {min(figures):6.1f} (least)")
    base = statistics.median(seen["no middleware"])
    for side in ("metrics off, log on", "metrics on, log on", "metrics on, log off"):
        print(f"{side:>22}: +{statistics.median(seen[side]) - base:.1f} us over no middleware")
    return 0


if __name__ == "__main__":
    sys.exit(main())
