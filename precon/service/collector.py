"""Python's collector of reference cycles paused while much is made at once that holds none (documents decoded from
JSON: dicts, lists and scalars). The collector runs every few hundred new objects and walks the young ones again and
again as they survive; a page of a thousand 24 KB listings is two million of them, and the walks were 40 % of the
page's time. A generated catalogue, a simulation and market columns are the same. Pauses from several threads
nest: the collector runs again when the last one ends (as it was before the first)."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_pauses = 0
_enabled_before = False


@contextmanager
def collector_paused() -> Iterator[None]:
    """The collector off inside (in every thread: it is the process's), as it was after the last pause ends."""
    global _pauses, _enabled_before
    with _lock:
        if _pauses == 0:
            _enabled_before = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _lock:
            _pauses -= 1
            if _pauses == 0 and _enabled_before:
                gc.enable()
