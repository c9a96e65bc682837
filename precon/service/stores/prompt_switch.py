"""A stretch of work that waits on the interpreter's lock at each step run with a short switch interval.

A replica's follower applies each write to its copy in a thread of the serving process. Each SQLite statement and
PostgreSQL round trip hands the interpreter's lock to the event loop, and taking it back waits for the loop to
give it up: up to the switch interval (Python's 5 ms) every time while the loop answers searches. A followed write
runs a few dozen such steps, so under load it waited most of a quarter second to land. While such work runs, the
interval is shortened (:data:`PROMPT_SWITCH_S`), and set back when the last of them ends: the loop gives way sooner
for those milliseconds only, not for every request (as ``PRECON_SERVICE_SWITCH_INTERVAL_MS`` would, at a fifth of
the throughput while writes come).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

PROMPT_SWITCH_S = 0.0005
"""The switch interval while a follower applies a write (a twentieth of Python's default)."""

_lock = threading.Lock()
_running = 0
_restore = 0.0


@contextmanager
def prompt_switching() -> Iterator[None]:
    """The block run with the switch interval at most :data:`PROMPT_SWITCH_S` (blocks in several threads at once
    share it; the interval set before the first is restored after the last)."""
    global _running, _restore
    with _lock:
        if _running == 0:
            _restore = sys.getswitchinterval()
            sys.setswitchinterval(min(_restore, PROMPT_SWITCH_S))
        _running += 1
    try:
        yield
    finally:
        with _lock:
            _running -= 1
            if _running == 0:
                sys.setswitchinterval(_restore)
