"""A throw-away redis-server on a loopback port, for the tests of what is kept in Redis (the dashboard's HTTP cache,
the service's rate limits). Skipped where redis-server is not installed, unless CI requires these tests
(``PRECON_REQUIRE_SYSTEM_TESTS``)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from collections.abc import Iterator

import pytest
import redis

from tests.ports import free_port


def redis_binary() -> str:
    """redis-server's path; the test is skipped (failed under CI) without it."""
    binary = shutil.which("redis-server")
    if binary is None:
        message = "redis-server not installed: apt-get install -y redis-server"
        if os.environ.get("PRECON_REQUIRE_SYSTEM_TESTS"):
            pytest.fail(message + " (CI requires the Redis tests)")
        pytest.skip(message)
    return binary


@contextlib.contextmanager
def running_redis(port: int | None = None) -> Iterator[str]:
    """A redis-server on 127.0.0.1 (``port``, else a free one) that keeps nothing on disk, until the block ends:
    its URL."""
    binary = redis_binary()
    port = port or free_port()
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    client = redis.Redis.from_url(url)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                if client.ping():
                    break
            except redis.ConnectionError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("redis-server did not answer PING") from None
                time.sleep(0.05)
        yield url
    finally:
        client.close()
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """One redis-server for the whole session: its URL (database 0). Tests flush what they rely on."""
    with running_redis() as url:
        yield url
