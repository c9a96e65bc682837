"""deploy/: the HAProxy configuration checks as HAProxy reads it, and replicas on PostgreSQL behind it lose no
client request when one of them is killed (bench/cluster.py measures the same at scale, with webhooks and the
rate limit).

Needs Debian's haproxy and PostgreSQL: skipped with a message without them, a failure under CI
(``PRECON_REQUIRE_SYSTEM_TESTS``), as tests/pg_support.py has it.
"""

from __future__ import annotations

import shutil
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bench.stack import HAProxy, Replica
from precon.service.config import DEV_API_KEY
from tests import pg_support
from tests.ports import free_port
from tests.waiting import wait_until

pg_cluster = pg_support.pg_cluster

LISTINGS = 300
LOOP_S = 5.0
KILL_AFTER_S = 1.5
RUN_MOST_S = 60.0
"""The longest the clients run on, before the kill and after, for each replica to have served (and enough requests
after the kill to tell)."""


@pytest.fixture
def haproxy() -> None:
    if shutil.which("haproxy") is None:
        pg_support.unavailable("haproxy is not installed (apt-get install -y haproxy): deployment tests skipped")


@pytest.mark.parametrize(
    "env",
    [
        {"PRECON_REPLICA_1": "127.0.0.1:8001", "PRECON_REPLICA_2": "127.0.0.1:8002"},
        {f"PRECON_REPLICA_{n}": f"10.0.0.{n}:8000" for n in range(1, 7)},
        {"PRECON_REPLICA_1": "127.0.0.1:8001", "PRECON_HAPROXY_USER": "haproxy", "PRECON_HAPROXY_LOG": "/dev/log"},
    ],
    ids=["two-replicas", "six-replicas", "as-a-service"],
)
def test_the_haproxy_config_checks_without_warnings(haproxy: None, tmp_path: Path, env: dict[str, str]) -> None:
    """``haproxy -c -dW`` (a warning fails too) on deploy/haproxy.cfg as the bench, the test and a service run it."""
    checked = HAProxy.check({**HAProxy.environment(free_port(), [], tmp_path / "admin.sock"), **env})
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "Configuration file is valid" in checked.stdout


def test_every_replica_declared_has_its_health_check() -> None:
    """A replica is declared for each PRECON_REPLICA_<n> set, and each is health-checked on /healthz."""
    text = (Path(__file__).resolve().parents[1] / "deploy" / "haproxy.cfg").read_text()
    assert "option httpchk GET /healthz" in text
    assert "default-server check" in text
    for number in range(1, 7):
        assert f'server replica{number} "${{PRECON_REPLICA_{number}}}"' in text


@pytest.fixture
def replicas(haproxy: None, pg_cluster: pg_support.Cluster, tmp_path: Path) -> Iterator[tuple[HAProxy, list[Replica]]]:
    """Two replicas on one fresh database (the first start of either fills it) behind HAProxy."""
    database = pg_cluster.database()
    env = {
        "PRECON_SERVICE_DATABASE_URL": pg_cluster.url(database),
        "PRECON_SERVICE_DEFAULT_LISTINGS": str(LISTINGS),
        "PRECON_SERVICE_RATE_LIMIT": "0",
    }
    started = [Replica(f"replica{n}", free_port(), tmp_path / f"replica{n}", dict(env)) for n in (1, 2)]
    proxy = HAProxy.start([r.address for r in started], tmp_path)
    try:
        for replica in started:
            replica.start(wait=False)
        for replica in started:
            replica.wait_healthy(timeout_s=120)
            proxy.wait_status(replica.name, "UP")
        yield proxy, started
    finally:
        for replica in started:
            replica.stop()
        proxy.stop()
        pg_cluster.drop(database)


def _any_profile(url: str) -> dict[str, str]:
    """A trigger body: the first profile of Builders."""
    found = httpx.get(
        url + "/v1/all/search_profiles",
        params={"collection": "Builders", "perPage": 1},
        headers={"x-api-key": DEV_API_KEY},
        timeout=30,
    )
    found.raise_for_status()
    first = found.json()["results"][0]
    return {"id": first.get("id") or first.get("objectID") or first["path"].split("/", 1)[1], "collection": "Builders"}


CUT_ANSWER = "peer closed connection without sending complete message body"
"""httpx's words for an answer whose headers came and whose body did not: one the replica had begun to send when it
was killed, which no proxy can finish (HAProxy has passed the headers on)."""


def test_a_replica_killed_mid_run_fails_no_client_request(replicas: tuple[HAProxy, list[Replica]]) -> None:
    """Clients loop over searches, and webhook triggers each with a fresh ``Idempotency-Key``, through HAProxy
    while one replica is killed with SIGKILL: every request is answered 200 (HAProxy sends the ones the dead replica
    held, or would have been given, to the other one: a GET, and a POST with an Idempotency-Key, which the service
    does at most once), the dead replica leaves the rotation, and both served requests before the kill.

    The one thing HAProxy cannot hide is an answer the replica had begun to send (its headers out, its body not):
    the client sends that request again, as docs/deploy.md says (the same ``Idempotency-Key``: the trigger is done
    once), and is answered. At most one such answer per client, at the kill; any other failure fails the test."""
    proxy, (survivor, victim) = replicas
    profile = _any_profile(proxy.url)
    triggers: Counter[int] = Counter()
    statuses: Counter[int] = Counter()
    after_kill: Counter[int] = Counter()
    cut: list[str] = []
    failures: list[str] = []
    killed = threading.Event()
    stop = threading.Event()
    lock = threading.Lock()
    queries = [{"search": "condo"}, {"facets": "type,cityOrDistrict"}, {"filterQuery": "minBeds >= 2"}, {}]

    def client(offset: int) -> None:
        with httpx.Client(base_url=proxy.url, headers={"x-api-key": DEV_API_KEY}, timeout=30) as http:
            position = offset
            while not stop.is_set():
                post = position % 3 == 2
                if post:
                    key = {"Idempotency-Key": str(uuid.uuid4())}
                    request = http.build_request("POST", "/v1/all/trigger_profile_webhook", json=profile, headers=key)
                else:
                    request = http.build_request("GET", "/v1/all/search_listings", params=queries[position % 4])
                status = 0
                for attempt in range(2):
                    try:
                        status = http.send(request).status_code
                        break
                    except httpx.HTTPError as error:
                        send_again = attempt == 0 and CUT_ANSWER in str(error)
                        with lock:
                            (cut if send_again else failures).append(
                                f"{request.method} {request.url.path} (attempt {attempt + 1}): {error!r}"
                            )
                        if not send_again:
                            break
                position += 1
                with lock:
                    statuses[status] += 1
                    if post:
                        triggers[status] += 1
                    if killed.is_set():
                        after_kill[status] += 1

    def enough_after_the_kill() -> bool:
        with lock:
            return after_kill.total() > 10 and triggers.total() > 5

    threads = [threading.Thread(target=client, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    try:
        time.sleep(KILL_AFTER_S)
        wait_until(lambda: all(int(row["stot"]) > 0 for row in proxy.servers().values()), RUN_MOST_S)
        served_before = {name: int(row["stot"]) for name, row in proxy.servers().items()}
        victim.kill()
        killed.set()
        proxy.wait_status(victim.name, "DOWN", timeout_s=10)
        time.sleep(max(0.0, LOOP_S - KILL_AFTER_S - 1))
        # a loaded machine answers fewer requests in that time: the clients go on until there are enough to tell
        wait_until(enough_after_the_kill, RUN_MOST_S)
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert not failures, f"clients saw {dict(statuses)}: {failures}"
    assert set(statuses) == {200}, f"clients saw {dict(statuses)}"
    assert len(cut) <= len(threads), f"more answers cut than requests in flight at the kill: {cut}"
    assert after_kill[200] > 10, f"too few requests after the kill to tell: {dict(after_kill)}"
    assert triggers[200] > 5, f"too few triggers to tell: {dict(triggers)}"
    assert served_before[victim.name] > 0 and served_before[survivor.name] > 0
    assert proxy.servers()[survivor.name]["status"].startswith("UP")
