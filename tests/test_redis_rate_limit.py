"""The rate limits in Redis (``PRECON_SERVICE_REDIS_URL``): the in-process limiter's arithmetic on Redis's clock,
one limit across limiters and across running services, and requests still answered when Redis is not."""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import redis

from precon.service.accounts.rate_limits import (
    REDIS_TIMEOUT_S,
    RateLimiter,
    RedisRateLimiter,
    SharedRateLimiter,
    redis_client,
)
from precon.service.api.calls import Service
from precon.service.config import DEV_API_KEY, DEV_PRODUCT_ID, ServiceSettings
from precon.service.runtime import DataDirectory
from precon.service.server import ServerThread
from tests import redis_support
from tests.ports import free_port
from tests.test_service_workers import serve

redis_url = redis_support.redis_url

SLACK_S = 0.3
"""What a test allows on top of the Redis client's timeout (a loaded machine)."""


@pytest.fixture
def server(redis_url: str) -> Iterator[redis.Redis]:
    """The session's Redis, emptied: a client of it."""
    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    yield client
    client.close()


@contextlib.contextmanager
def silent_server() -> Iterator[str]:
    """A loopback port that takes connections and never answers (a Redis that hangs): a ``redis://`` URL to it."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        yield f"redis://127.0.0.1:{listener.getsockname()[1]}/0"


def limiter(url: str, rate: float, burst: int, name: str = "test") -> RedisRateLimiter:
    return RedisRateLimiter(rate, burst, redis_client(url), name, RateLimiter(rate, burst))


# -- the arithmetic ------------------------------------------------------------------------------------------------


def redis_now(client: redis.Redis) -> float:
    seconds, micros = client.time()
    return seconds + micros / 1e6


@pytest.mark.parametrize(
    ("rate", "burst", "tokens", "age"),
    [
        (1.0, 5, 0.25, 0.5),  # refills to 0.75: waits 0.25
        (2.0, 5, 0.0, 0.1),  # refills to 0.2: waits 0.4
        (1.0, 5, 3.0, 0.0),  # tokens left: goes ahead
        (4.0, 3, 0.0, 60.0),  # refilled long ago: capped at the burst, goes ahead
    ],
)
def test_the_bucket_arithmetic_is_the_in_process_limiters(
    server: redis.Redis, redis_url: str, rate: float, burst: int, tokens: float, age: float
) -> None:
    remote = limiter(redis_url, rate, burst)
    started = time.monotonic()
    server.hset(remote.key("caller"), mapping={"tokens": repr(tokens), "stamp": repr(redis_now(server) - age)})
    from_redis = remote.retry_after("caller")
    spent = time.monotonic() - started  # the bucket refilled meanwhile: the results may differ by that much
    local = RateLimiter(rate, burst)
    local._buckets["caller"] = (tokens, time.monotonic() - age)
    assert from_redis == pytest.approx(local.retry_after("caller"), abs=spent + 0.002)
    left = float(server.hget(remote.key("caller"), "tokens") or -1)
    assert left == pytest.approx(local._buckets["caller"][0], abs=rate * (spent + 0.002))


def test_a_bucket_counted_ahead_of_redis_clock_is_counted_as_now(server: redis.Redis, redis_url: str) -> None:
    """Redis's clock stepped back (a failover to another machine): the bucket neither refills nor waits longer
    than it had to, as in :class:`SharedRateLimiter`."""
    remote = limiter(redis_url, 0.5, 2)
    server.hset(remote.key("caller"), mapping={"tokens": "0.5", "stamp": repr(redis_now(server) + 30)})
    assert remote.retry_after("caller") == pytest.approx(1.0, abs=0.01)


def test_a_burst_then_the_rate_as_in_process(server: redis.Redis, redis_url: str) -> None:
    remote, local = limiter(redis_url, 1.0, 4), RateLimiter(1.0, 4)
    waits = [(remote.retry_after(7), local.retry_after(7)) for _ in range(6)]
    assert [r for r, _ in waits[:4]] == [0.0] * 4
    for from_redis, in_process in waits[4:]:
        assert from_redis == pytest.approx(in_process, abs=0.1) and from_redis > 0.5


def test_a_bucket_is_named_by_limiter_and_caller_and_expires_once_refilled(server: redis.Redis, redis_url: str) -> None:
    keys, addresses = limiter(redis_url, 2.0, 10, "keys"), limiter(redis_url, 2.0, 10, "addresses")
    keys.retry_after("10.0.0.1")
    addresses.retry_after("10.0.0.1")
    names = sorted(name.decode() for name in server.keys("*"))
    assert [name.rsplit(":", 1)[0] for name in names] == ["precon:rate:addresses", "precon:rate:keys"]
    assert all(len(name.rsplit(":", 1)[1]) == 16 and "10.0.0.1" not in name for name in names)
    ttl_ms = server.pttl(keys.key("10.0.0.1"))
    assert 5000 < ttl_ms <= 6000  # burst / rate = 5 s, and a second


def test_no_limit_asks_nothing_of_redis() -> None:
    off = limiter("redis://127.0.0.1:1/0", 0.0, 10)
    assert [off.retry_after("anyone") for _ in range(50)] == [0.0] * 50
    assert off._down_until < 0  # never tried


# -- shared --------------------------------------------------------------------------------------------------------


def test_two_limiters_on_one_redis_share_a_limit(server: redis.Redis, redis_url: str) -> None:
    """Two replicas' limiters, each its own client: of a burst of requests across both, exactly ``burst`` pass."""
    replicas = [limiter(redis_url, 0.01, 7, "keys") for _ in range(2)]
    waits: list[float] = []
    lock = threading.Lock()

    def client(replica: RedisRateLimiter) -> None:
        for _ in range(10):
            wait = replica.retry_after("the key")
            with lock:
                waits.append(wait)

    threads = [threading.Thread(target=client, args=(replicas[i % 2],)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(waits) == 40 and waits.count(0.0) == 7
    assert replicas[0].retry_after("another key") == 0.0


def test_the_service_limits_in_redis_when_its_url_is_set(
    tmp_path: Path, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PRECON_SERVICE_REDIS_URL", redis_url)
    settings = ServiceSettings(data_dir=tmp_path)
    assert settings.redis_url == redis_url
    service = Service(settings, None, None, None)  # type: ignore[arg-type]
    assert isinstance(service.limiter, RedisRateLimiter) and isinstance(service.guessing, RedisRateLimiter)
    assert (service.limiter.name, service.guessing.name) == ("keys", "addresses")
    assert (service.limiter.rate, service.limiter.burst) == (settings.rate_limit, settings.rate_burst)
    assert (service.guessing.rate, service.guessing.burst) == (settings.failed_auth_rate, settings.failed_auth_burst)
    assert isinstance(service.limiter.fallback, RateLimiter)

    workers = Service(ServiceSettings(data_dir=tmp_path, workers=2), None, None, None)  # type: ignore[arg-type]
    assert isinstance(workers.limiter, RedisRateLimiter) and isinstance(workers.limiter.fallback, SharedRateLimiter)

    monkeypatch.delenv("PRECON_SERVICE_REDIS_URL")
    alone = Service(ServiceSettings(data_dir=tmp_path), None, None, None)  # type: ignore[arg-type]
    assert type(alone.limiter) is RateLimiter and type(alone.guessing) is RateLimiter


def test_a_redis_url_of_another_scheme_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="redis://"):
        ServiceSettings(data_dir=tmp_path, redis_url="http://127.0.0.1:6379")
    assert ServiceSettings(data_dir=tmp_path, redis_url="").redis_url is None


def test_two_running_services_share_the_limit_of_a_key(tmp_path: Path, server: redis.Redis, redis_url: str) -> None:
    """Two replicas (``precon serve``, each its own data directory) on one Redis: asked in turn, they let the burst
    through between them, then both answer 429."""
    env = {"PRECON_SERVICE_REDIS_URL": redis_url, "PRECON_SERVICE_RATE_BURST": "6"}
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with (
        serve(tmp_path / "a", "--rate-limit", "0.01", workers=1, **env) as first,
        serve(tmp_path / "b", "--rate-limit", "0.01", workers=1, **env) as second,
        httpx.Client(timeout=30) as http,
    ):
        statuses = [
            http.get(
                replica.url + "/v1/all/search_listings",
                params={"product_id": DEV_PRODUCT_ID, "perPage": 0},
                headers={"x-api-key": DEV_API_KEY},
            ).status_code
            for replica in (first, second) * 6
        ]
    assert statuses == [200] * 6 + [429] * 6, statuses
    assert [name.decode().rsplit(":", 1)[0] for name in server.keys("*")] == ["precon:rate:keys"]


# -- Redis away ----------------------------------------------------------------------------------------------------


def test_redis_refusing_leaves_the_decision_to_the_local_limiter(caplog: pytest.LogCaptureFixture) -> None:
    away = limiter(f"redis://127.0.0.1:{free_port()}/0", 1.0, 3, "keys")
    with caplog.at_level(logging.WARNING, logger="precon.service"):
        waits = [away.retry_after("k") for _ in range(5)]
    assert waits[:3] == [0.0] * 3 and all(wait > 0.9 for wait in waits[3:])
    warnings = [record for record in caplog.records if record.levelno == logging.WARNING]
    assert len(warnings) == 1 and "Redis did not answer" in warnings[0].getMessage()


def test_a_hanging_redis_costs_one_timeout_then_is_left_alone_for_a_while() -> None:
    with silent_server() as url:
        hanging = limiter(url, 1.0, 3)
        started = time.monotonic()
        assert hanging.retry_after("k") == 0.0
        first_s = time.monotonic() - started
        assert first_s < REDIS_TIMEOUT_S + SLACK_S
        started = time.monotonic()
        waits = [hanging.retry_after("k") for _ in range(20)]
        assert time.monotonic() - started < REDIS_TIMEOUT_S  # not asked again during RETRY_S: not one timeout
        assert waits[:2] == [0.0] * 2 and all(wait > 0 for wait in waits[2:])


def test_redis_is_asked_again_once_it_is_back(server: redis.Redis) -> None:
    port = free_port()
    back = limiter(f"redis://127.0.0.1:{port}/0", 1.0, 3)
    back.RETRY_S = 0.2
    assert back.retry_after("k") == 0.0  # locally: nothing listens there yet
    with redis_support.running_redis(port) as url:
        time.sleep(0.3)
        assert back.retry_after("k") == 0.0
        assert redis.Redis.from_url(url).exists(back.key("k")) == 1
        assert back._down_until < time.monotonic()


def test_a_service_whose_redis_hangs_answers_and_limits_locally(tmp_path: Path) -> None:
    with silent_server() as url:
        settings = ServiceSettings(
            data_dir=tmp_path, default_listings=30, dev=True, rate_limit=0.01, rate_burst=4, redis_url=url
        )
        directory = DataDirectory.open(settings)
        try:
            app = directory.app()
            keys_limiter = app.state.service.limiter
            asked: list[str] = []
            take = keys_limiter._take

            def counted(**arguments: list[object]) -> object:
                asked.append(str(arguments["keys"]))
                return take(**arguments)

            keys_limiter._take = counted
            directory.sandbox.warm(now=True)  # the first search's index is built here, not inside the timings
            with ServerThread(app) as running, httpx.Client(timeout=30) as http:
                timings: list[tuple[int, float]] = []
                for _ in range(6):
                    started = time.monotonic()
                    status = http.get(
                        running.url + "/v1-sandbox/all/search_listings",
                        params={"perPage": 0},
                        headers={"x-api-key": DEV_API_KEY},
                    ).status_code
                    timings.append((status, time.monotonic() - started))
                unknown = http.get(running.url + "/v1/all/search_listings", headers={"x-api-key": "nobody"})
        finally:
            directory.close()
    assert [status for status, _ in timings] == [200] * 4 + [429] * 2
    assert len(asked) == 1  # the first request waited out the timeout; the others were not kept waiting
    assert timings[0][1] < REDIS_TIMEOUT_S + 1.0 and all(spent < 1.0 for _, spent in timings[1:]), timings
    assert unknown.status_code == 403  # the addresses' limiter falls back too (its own first timeout included)
