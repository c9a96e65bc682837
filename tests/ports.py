"""Loopback ports for the servers the tests start (uvicorn, streamlit, redis-server, receivers) or for a port where
nothing listens.

A port found by binding port 0 and closing the socket is free only until someone else takes it: the kernel hands
the same ephemeral range to every process's outgoing connections and port-0 binds, and with the suite in several
processes (pytest-xdist) another worker may be given the very port before our server binds it. So each worker takes
its ports from a block of its own below the ephemeral range (``ip_local_port_range``, 32768-60999 by default),
in turn, skipping any that will not bind: no other worker and no outgoing connection is handed them.
"""

from __future__ import annotations

import itertools
import os
import socket
import threading

FIRST_PORT = 20000
BLOCK = 600
"""Ports per worker: 20000-20599 for the first (or the only process), 20600-21199 for the second, and so on."""


def _worker_index() -> int:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")  # "gw3" under pytest-xdist
    digits = worker.removeprefix("gw")
    return int(digits) if digits.isdigit() else 0


_lock = threading.Lock()
_next = itertools.cycle(range(BLOCK))


def free_port() -> int:
    """A loopback port nothing listens on now, and that no other test process will be handed."""
    base = FIRST_PORT + BLOCK * (_worker_index() % 20)
    with _lock:
        for _ in range(BLOCK):
            port = base + next(_next)
            with socket.socket() as probe:
                try:
                    probe.bind(("127.0.0.1", port))
                except OSError:
                    continue
                return port
    raise RuntimeError(f"no free port in {base}-{base + BLOCK - 1}")
