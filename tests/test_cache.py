"""The client's HTTP cache against a real loopback server: freshness, revalidation, keys, bounds, backends."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
import redis
from fastapi import FastAPI, Request, Response

from precon.client.cache import DEFAULT_FILE_NAME, REDIS_PREFIX, ResponseCache
from precon.service.server import ServerThread
from tests import redis_support
from tests.ports import free_port

KEY_A = "raw-secret-key-AAAA-1234567890"
KEY_B = "raw-secret-key-BBBB-0987654321"
EXPIRY_SLEEP_S = 1.1
"""Just over a second: hishel's ages are whole seconds from the ``Date`` header, so max-age=1 is stale by then."""


# -- the server ----------------------------------------------------------------------------------------------------


class Origin:
    """A tiny origin server that counts what reaches it."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.if_none_match: list[str | None] = []
        self.lock = threading.Lock()
        self.app = self._build()

    def _seen(self, request: Request) -> int:
        with self.lock:
            self.counts[request.url.path] += 1
            return self.counts[request.url.path]

    def reset(self) -> None:
        with self.lock:
            self.counts.clear()
            self.if_none_match.clear()

    def _build(self) -> FastAPI:
        app = FastAPI()

        @app.get("/fresh")
        def fresh(request: Request, i: int = 0) -> Response:
            serial = self._seen(request)
            body = json.dumps({"path": "fresh", "i": i, "serial": serial})
            return Response(body, media_type="application/json", headers=_cached(f'"fresh-{i}"', 60))

        @app.post("/fresh")
        def fresh_post(request: Request) -> Response:
            serial = self._seen(request)
            return Response(json.dumps({"serial": serial}), headers=_cached('"post"', 60))

        @app.get("/short")
        def short(request: Request) -> Response:
            self._seen(request)
            etag = '"short-v1"'
            self.if_none_match.append(request.headers.get("if-none-match"))
            if request.headers.get("if-none-match") == etag:
                return Response(status_code=304, headers=_cached(etag, 1))
            return Response(json.dumps({"value": "short"}), media_type="application/json", headers=_cached(etag, 1))

        @app.get("/plain")
        def plain(request: Request) -> dict[str, int]:
            return {"serial": self._seen(request)}

        @app.get("/nostore")
        def nostore(request: Request) -> Response:
            serial = self._seen(request)
            return Response(json.dumps({"serial": serial}), headers={"Cache-Control": "no-store", "ETag": '"ns"'})

        @app.get("/badcc")
        def badcc(request: Request) -> Response:
            serial = self._seen(request)
            return Response(json.dumps({"serial": serial}), headers={"Cache-Control": "max-age=soon"})

        @app.get("/whoami")
        def whoami(request: Request) -> Response:
            self._seen(request)
            key = request.headers.get("x-api-key")
            return Response(json.dumps({"key": key}), media_type="application/json", headers=_cached('"who"', 60))

        @app.get("/vary")
        def vary(request: Request) -> Response:
            serial = self._seen(request)
            headers = {**_cached('"vary"', 60), "Vary": "x-api-key"}
            return Response(json.dumps({"serial": serial}), media_type="application/json", headers=headers)

        return app


def _cached(etag: str, max_age: int) -> dict[str, str]:
    return {"ETag": etag, "Cache-Control": f"private, max-age={max_age}"}


@pytest.fixture(scope="module")
def origin_server() -> Iterator[tuple[Origin, str]]:
    origin = Origin()
    with ServerThread(origin.app) as server:
        yield origin, server.url


@pytest.fixture
def origin(origin_server: tuple[Origin, str]) -> Origin:
    origin_server[0].reset()
    return origin_server[0]


@pytest.fixture
def base_url(origin_server: tuple[Origin, str]) -> str:
    return origin_server[1]


# -- redis ---------------------------------------------------------------------------------------------------------


redis_url = redis_support.redis_url


# -- caches --------------------------------------------------------------------------------------------------------

CacheFactory = Callable[..., ResponseCache]


@pytest.fixture(params=["sqlite", "memory", "redis"])
def make_cache(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[CacheFactory]:
    """Build caches on one backend (closed at the end of the test)."""
    made: list[ResponseCache] = []
    if request.param == "sqlite":
        url = f"sqlite://{tmp_path / 'cache.sqlite3'}"
    elif request.param == "memory":
        url = "memory:"
    else:
        url = request.getfixturevalue("redis_url")
        redis.Redis.from_url(url).flushdb()

    def factory(**options: float) -> ResponseCache:
        cache = ResponseCache(url, **options)  # type: ignore[arg-type]
        made.append(cache)
        return cache

    yield factory
    for cache in made:
        cache.close()


@pytest.fixture
def cache(make_cache: CacheFactory) -> ResponseCache:
    return make_cache()


def client(cache: ResponseCache, base_url: str, key: str | None = KEY_A) -> httpx.Client:
    headers = {"x-api-key": key} if key else {}
    return httpx.Client(
        base_url=base_url, transport=cache.transport(httpx.HTTPTransport(), credential=key), headers=headers
    )


def stored_bytes(cache: ResponseCache) -> bytes:
    """Everything a cache has written, as bytes: the SQLite file(s), or every Redis value and key."""
    if cache.path is not None:
        return b"".join(p.read_bytes() for p in cache.path.parent.glob(cache.path.name + "*"))
    assert cache.url is not None and cache.url.startswith("redis://")
    server = redis.Redis.from_url(cache.url)
    try:
        keys = list(server.scan_iter(match="*"))
        values = [server.dump(k) or b"" for k in keys]
        return b"".join(keys + values)
    finally:
        server.close()


# -- freshness and revalidation ------------------------------------------------------------------------------------


def test_second_get_within_max_age_makes_no_request(cache: ResponseCache, origin: Origin, base_url: str) -> None:
    with client(cache, base_url) as http:
        first = http.get("/fresh")
        second = http.get("/fresh")
    assert first.status_code == second.status_code == 200
    assert second.json() == first.json() == {"path": "fresh", "i": 0, "serial": 1}
    assert origin.counts["/fresh"] == 1
    assert first.extensions["from_cache"] is False
    assert second.extensions["from_cache"] is True
    assert cache.stats.as_dict() == {"hits": 1, "misses": 1, "revalidations": 0}


def test_stale_answer_is_revalidated_with_etag(cache: ResponseCache, origin: Origin, base_url: str) -> None:
    with client(cache, base_url) as http:
        first = http.get("/short")
        time.sleep(EXPIRY_SLEEP_S)
        second = http.get("/short")
    assert origin.counts["/short"] == 2
    assert origin.if_none_match == [None, '"short-v1"']
    assert second.status_code == 200
    assert second.content == first.content == b'{"value": "short"}'
    assert second.extensions["revalidated"] is True
    assert cache.stats.as_dict() == {"hits": 0, "misses": 1, "revalidations": 1}


def test_answer_without_caching_headers_is_fresh_for_default_ttl(
    make_cache: CacheFactory, origin: Origin, base_url: str
) -> None:
    cache = make_cache()  # default_ttl 60 s
    with client(cache, base_url) as http:
        first = http.get("/plain")
        second = http.get("/plain")
    assert first.json() == second.json() == {"serial": 1}
    assert first.headers["cache-control"] == "max-age=60"
    assert origin.counts["/plain"] == 1
    assert cache.stats.hits == 1


def test_answer_without_caching_headers_expires_after_default_ttl(
    make_cache: CacheFactory, origin: Origin, base_url: str
) -> None:
    cache = make_cache(default_ttl=1.0)
    with client(cache, base_url) as http:
        first = http.get("/plain")
        assert first.headers["cache-control"] == "max-age=1"
        time.sleep(EXPIRY_SLEEP_S)
        second = http.get("/plain")
    assert origin.counts["/plain"] == 2
    assert (first.json(), second.json()) == ({"serial": 1}, {"serial": 2})
    assert cache.stats.hits == 0


def test_no_store_always_reaches_the_server(cache: ResponseCache, origin: Origin, base_url: str) -> None:
    with client(cache, base_url) as http:
        answers = [http.get("/nostore").json() for _ in range(3)]
    assert answers == [{"serial": 1}, {"serial": 2}, {"serial": 3}]
    assert origin.counts["/nostore"] == 3
    assert len(cache) == 0
    assert cache.stats.as_dict() == {"hits": 0, "misses": 3, "revalidations": 0}


def test_malformed_cache_control_is_not_cached_and_does_not_raise(
    cache: ResponseCache, origin: Origin, base_url: str
) -> None:
    with client(cache, base_url) as http:
        assert [http.get("/badcc").json() for _ in range(2)] == [{"serial": 1}, {"serial": 2}]
    assert origin.counts["/badcc"] == 2


def test_post_is_never_cached(cache: ResponseCache, origin: Origin, base_url: str) -> None:
    with client(cache, base_url) as http:
        answers = [http.post("/fresh", json={"q": 1}).json() for _ in range(2)]
        get = http.get("/fresh")  # the GET of the same URL is not answered by a stored POST
        assert (get.json()["serial"], get.extensions["from_cache"]) == (3, False)
    assert answers == [{"serial": 1}, {"serial": 2}]
    assert origin.counts["/fresh"] == 3
    assert cache.stats.hits == 0


# -- keys ----------------------------------------------------------------------------------------------------------


def test_two_keys_never_share_an_answer(cache: ResponseCache, origin: Origin, base_url: str) -> None:
    with client(cache, base_url, KEY_A) as as_a, client(cache, base_url, KEY_B) as as_b:
        assert as_a.get("/whoami").json() == {"key": KEY_A}
        assert as_b.get("/whoami").json() == {"key": KEY_B}
        assert origin.counts["/whoami"] == 2
        # each key's own answer is still served from the cache
        assert as_a.get("/whoami").json() == {"key": KEY_A}
        assert as_b.get("/whoami").json() == {"key": KEY_B}
    assert origin.counts["/whoami"] == 2
    assert cache.stats.as_dict() == {"hits": 2, "misses": 2, "revalidations": 0}
    if cache.path is not None or (cache.url or "").startswith("redis://"):
        written = stored_bytes(cache)
        assert written, "nothing was stored"
        assert KEY_A.encode() not in written
        assert KEY_B.encode() not in written


def test_raw_keys_appear_nowhere_in_the_sqlite_file(tmp_path: Path, origin: Origin, base_url: str) -> None:
    path = tmp_path / "keys.sqlite3"
    cache = ResponseCache(str(path))
    for key in (KEY_A, KEY_B):
        with client(cache, base_url, key) as http:
            http.get("/whoami")
            http.get("/fresh")
    cache.close()
    written = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert len(written) > 0
    assert KEY_A.encode() not in written and KEY_B.encode() not in written
    with sqlite3.connect(path) as db:
        rows = [json.loads(data) for (data,) in db.execute("SELECT data FROM cache")]
    assert len(rows) == 4
    for row in rows:
        headers = dict((name.lower(), value) for name, value in row["request"]["headers"])
        assert headers["x-api-key"].startswith("sha256:")


def test_vary_on_the_key_header_still_hits(cache: ResponseCache, origin: Origin, base_url: str) -> None:
    """Stored requests hold only a hash of the key header; ``Vary: x-api-key`` is compared in that form."""
    with client(cache, base_url) as http:
        http.get("/vary")
        assert http.get("/vary").extensions["from_cache"] is True
    assert origin.counts["/vary"] == 1


def test_one_transport_never_shares_between_header_keys(cache: ResponseCache, origin: Origin, base_url: str) -> None:
    """Even when the credential argument is not given, the key header itself separates answers."""
    with httpx.Client(base_url=base_url, transport=cache.transport(httpx.HTTPTransport(), credential=None)) as http:
        assert http.get("/whoami", headers={"x-api-key": KEY_A}).json() == {"key": KEY_A}
        assert http.get("/whoami", headers={"x-api-key": KEY_B}).json() == {"key": KEY_B}
        assert http.get("/whoami").json() == {"key": None}
    assert origin.counts["/whoami"] == 3


# -- bounds, persistence, sharing ----------------------------------------------------------------------------------


def test_storage_is_bounded_to_max_entries(make_cache: CacheFactory, origin: Origin, base_url: str) -> None:
    cache = make_cache(max_entries=5)
    with client(cache, base_url) as http:
        for i in range(12):
            http.get("/fresh", params={"i": i})
        assert len(cache) == 5
        assert http.get("/fresh", params={"i": 11}).extensions["from_cache"] is True  # newest kept
        assert http.get("/fresh", params={"i": 0}).extensions["from_cache"] is False  # oldest evicted
    assert origin.counts["/fresh"] == 13
    assert len(cache) == 5


def test_second_cache_on_the_same_sqlite_file_serves_a_hit(tmp_path: Path, origin: Origin, base_url: str) -> None:
    path = tmp_path / "persist.sqlite3"
    with ResponseCache(f"sqlite://{path}") as first, client(first, base_url) as http:
        http.get("/fresh")
    with ResponseCache(f"sqlite://{path}") as second, client(second, base_url) as http:
        again = http.get("/fresh")
        assert again.extensions["from_cache"] is True
        assert again.json()["serial"] == 1
        assert second.stats.hits == 1
    assert origin.counts["/fresh"] == 1


def test_clear_forgets_everything(cache: ResponseCache, origin: Origin, base_url: str) -> None:
    with client(cache, base_url) as http:
        http.get("/fresh")
        assert len(cache) == 1
        cache.clear()
        assert len(cache) == 0
        assert http.get("/fresh").extensions["from_cache"] is False
    assert origin.counts["/fresh"] == 2


def test_closing_a_client_leaves_the_shared_cache_open(cache: ResponseCache, origin: Origin, base_url: str) -> None:
    with client(cache, base_url) as http:
        http.get("/fresh")
    with client(cache, base_url) as http:
        assert http.get("/fresh").extensions["from_cache"] is True
    assert origin.counts["/fresh"] == 1


def test_threads_share_one_cache(cache: ResponseCache, origin: Origin, base_url: str) -> None:
    errors: list[BaseException] = []

    def work(key: str) -> None:
        try:
            with client(cache, base_url, key) as http:
                for n in range(15):
                    assert http.get("/fresh", params={"i": n % 3}).status_code == 200
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=work, args=(key,)) for key in (KEY_A, KEY_A, KEY_B, KEY_B)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not errors
    stats = cache.stats.as_dict()
    assert stats["hits"] + stats["misses"] == 60
    assert stats["misses"] == origin.counts["/fresh"]
    assert 6 <= origin.counts["/fresh"] <= 12  # 3 URLs x 2 keys, plus at most one race per thread and URL


# -- configuration -------------------------------------------------------------------------------------------------


def test_from_env_defaults_to_sqlite_in_the_cache_dir(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, origin: Origin, base_url: str
) -> None:
    monkeypatch.delenv("PRECON_CACHE_URL", raising=False)
    monkeypatch.setenv("PRECON_CACHE_DIR", str(tmp_path / "dir"))
    with ResponseCache.from_env() as cache:
        assert cache.backend == "sqlite"
        assert cache.path == tmp_path / "dir" / DEFAULT_FILE_NAME
        with client(cache, base_url) as http:
            http.get("/fresh")
            assert http.get("/fresh").extensions["from_cache"] is True
    assert (tmp_path / "dir" / DEFAULT_FILE_NAME).stat().st_mode & 0o077 == 0  # private to this user


def test_from_env_memory(monkeypatch: pytest.MonkeyPatch, origin: Origin, base_url: str) -> None:
    monkeypatch.setenv("PRECON_CACHE_URL", "memory:")
    with ResponseCache.from_env() as cache, client(cache, base_url) as http:
        assert (cache.backend, cache.path) == ("memory", None)
        http.get("/fresh")
        assert http.get("/fresh").extensions["from_cache"] is True


def test_from_env_redis_url_connects_lazily(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRECON_CACHE_URL", f"redis://127.0.0.1:{free_port()}/3")
    cache = ResponseCache.from_env()  # nothing listens there: building the cache must not connect
    assert (cache.backend, cache.path) == ("redis", None)
    cache.close()


def test_from_env_redis_serves_hits(
    monkeypatch: pytest.MonkeyPatch, redis_url: str, origin: Origin, base_url: str
) -> None:
    redis.Redis.from_url(redis_url).flushdb()
    monkeypatch.setenv("PRECON_CACHE_URL", redis_url)
    with ResponseCache.from_env() as cache, client(cache, base_url) as http:
        http.get("/fresh")
        assert http.get("/fresh").extensions["from_cache"] is True
        server = redis.Redis.from_url(redis_url)
        keys = list(server.scan_iter(match="*"))
        server.close()
    assert keys and all(k.decode().startswith("precon:http") for k in keys)
    assert any(k.decode().startswith(REDIS_PREFIX) for k in keys)


def test_sqlite_urls_and_paths(tmp_path: Path) -> None:
    for url, path in [
        (f"sqlite://{tmp_path}/a.sqlite3", tmp_path / "a.sqlite3"),
        (str(tmp_path / "b.sqlite3"), tmp_path / "b.sqlite3"),
        (str(tmp_path / "nested" / "c.db"), tmp_path / "nested" / "c.db"),
    ]:
        with ResponseCache(url) as cache:
            assert (cache.backend, cache.path) == ("sqlite", path)
            assert path.exists()


@pytest.mark.parametrize("url", ["nonsense", "ftp://example.org/cache", "memcached://127.0.0.1:11211", "mem:"])
def test_unsupported_urls_are_refused(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match=r"sqlite:///.*redis://.*memory:"):
        ResponseCache(url)
    monkeypatch.setenv("PRECON_CACHE_URL", url)
    with pytest.raises(ValueError, match="unsupported cache URL"):
        ResponseCache.from_env()
