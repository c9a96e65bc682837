"""Waiting in tests for what happens on another thread or process (a delivery, a page drawn, a replica caught up)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from typing import Any


def wait_until(check: Callable[[], Any], timeout: float = 15, every: float = 0.05) -> Any:
    """``check()`` called every ``every`` seconds until it answers something true, which is answered; an
    AssertionError once ``timeout`` seconds have passed without."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {getattr(check, '__name__', check)}")
        time.sleep(every)


START_TIMEOUT_S = 180
"""How long a server a test starts (``precon serve``, ``streamlit run``) may take to answer: seconds alone, but with
the suite in four processes on two cores, beside other work, a start that generates its catalogue has taken more
than a minute. Waits on it end as soon as the server answers."""


def stop_process(process: subprocess.Popen[Any], grace_s: float = 15) -> None:
    """A server the test started, asked to end (SIGTERM) and given ``grace_s`` to; killed if it does not."""
    process.terminate()
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
