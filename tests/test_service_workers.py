"""``precon serve --workers 2``: real worker processes on a loopback port over real SQLite files, sharing one copy of
the indexes (mapped from files), swapping to a new one after a catalogue change, holding one rate limit between
them, and sending each webhook delivery once."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from precon.service.config import DEV_API_KEY, DEV_PRODUCT_ID
from tests.cli_support import PRECON, clean_env
from tests.ports import free_port
from tests.webhook_support import Receiver

HEADERS = {"x-api-key": DEV_API_KEY}
LISTINGS = 150


@dataclass
class Served:
    process: subprocess.Popen[bytes]
    url: str
    data: Path
    log: Path

    def workers(self) -> list[int]:
        """The worker processes: children of the command whose command line is uvicorn's spawned server."""
        children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children").read_text().split()
        return [int(pid) for pid in children if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()]

    def index_directories(self) -> list[Path]:
        return sorted((self.data / "catalogue.sqlite3.index").glob("columns-*"))

    def mapped_by(self, pid: int, directory: Path) -> bool:
        """Whether the process maps files of ``directory`` (its index arrays)."""
        return str(directory) + "/" in Path(f"/proc/{pid}/maps").read_text()

    def search(self, http: httpx.Client, **params: Any) -> httpx.Response:
        return http.get(
            self.url + "/v1/all/search_listings",
            params={"product_id": DEV_PRODUCT_ID, **params},
            headers={**HEADERS, "connection": "close"},  # a new connection each: any worker may take it
        )


@contextlib.contextmanager
def serve(tmp_path: Path, *options: str, workers: int = 2, **env: str) -> Iterator[Served]:
    port = free_port()
    data = tmp_path / "data"
    log = tmp_path / "serve.log"
    command = [str(PRECON), "serve", "--dev", "--port", str(port), "--data", str(data), "--workers", str(workers)]
    with log.open("w") as output:
        process = subprocess.Popen(
            [*command, *options],
            stdout=output,
            stderr=subprocess.STDOUT,
            env=clean_env(PRECON_SERVICE_DEFAULT_LISTINGS=str(LISTINGS), **env),
        )
    served = Served(process, f"http://127.0.0.1:{port}", data, log)
    try:
        deadline = time.monotonic() + 90
        while True:
            assert process.poll() is None, log.read_text()
            try:
                healthy = httpx.get(served.url + "/healthz").status_code == 200
                if healthy and len(served.workers()) == (workers if workers > 1 else 0):
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the service did not start: " + log.read_text()
            time.sleep(0.2)
        yield served
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    with serve(tmp_path) as started:
        yield started


def test_two_workers_map_one_index_and_answer_every_request(served: Served) -> None:
    workers = served.workers()
    assert len(workers) == 2 and served.process.pid not in workers
    [index] = served.index_directories()
    # A worker maps the index as it starts; the first to start may answer the health check before the other has.
    deadline = time.monotonic() + 60
    while not all(served.mapped_by(pid, index) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert all(served.mapped_by(pid, index) for pid in workers)

    answers: list[int] = []

    def client() -> None:
        with httpx.Client(timeout=30) as http:
            for page in range(15):
                answers.append(served.search(http, page=page % 5, perPage=5, facets="type").status_code)

    threads = [threading.Thread(target=client) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answers == [200] * 90
    assert served.index_directories() == [index]
    # The workers speak the service's HTTP protocol: a request that cannot be read gets the JSON 400.
    port = int(served.url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        raw.sendall(b"GET /v1/all/search_listings HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n")
        head, _, body = raw.recv(4096).partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400") and orjson.loads(body)["message"].startswith("the request could not")


def test_a_catalogue_change_is_seen_by_every_worker_which_swap_to_the_new_index(served: Served, tmp_path: Path) -> None:
    with httpx.Client(timeout=30) as http:
        listing = served.search(http, perPage=1, retrieveAttributes="*").json()["results"][0]
        assert served.search(http, filterQuery="listingId:NEWONE").json()["total"] == 0
        [before] = served.index_directories()
        record = {**listing, "listingId": "NEWONE", "path": "Listings/NEWONE", "name": "Brand New Tower"}
        record.pop("objectID")
        record["floorPlans"] = None  # plan ids are unique across listings
        record = {key: value for key, value in record.items() if not key.startswith("_")}
        (tmp_path / "new.json").write_bytes(orjson.dumps([record]))
        imported = subprocess.run(
            [str(PRECON), "catalogue", "import", str(tmp_path / "new.json"), "--data", str(served.data)],
            capture_output=True,
            text=True,
            env=clean_env(),
            timeout=60,
        )
        assert imported.returncode == 0, imported.stderr
        # The very next search of each worker sees it: each notices the change, and one builds what both map.
        totals = [served.search(http, filterQuery="listingId:NEWONE").json()["total"] for _ in range(30)]
        assert totals == [1] * 30
        found = served.search(http, search="brand new tower").json()["results"]
        assert found[0]["listingId"] == "NEWONE"
    [after] = served.index_directories()
    assert after != before
    assert all(served.mapped_by(pid, after) for pid in served.workers()), "a worker did not answer after the change"


def test_the_rate_limit_holds_across_the_workers(tmp_path: Path) -> None:
    with serve(tmp_path, "--rate-limit", "2", PRECON_SERVICE_RATE_BURST="10") as served:
        statuses: list[int] = []
        started = time.monotonic()

        def client() -> None:
            with httpx.Client(timeout=30) as http:
                for _ in range(10):
                    statuses.append(served.search(http, perPage=0).status_code)

        threads = [threading.Thread(target=client) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.monotonic() - started
        assert set(statuses) <= {200, 429}
        # One bucket for the key, whichever worker answers: the burst and what refilled while the requests ran,
        # not twice that.
        assert 10 <= statuses.count(200) <= 10 + 2 * elapsed + 1, (statuses.count(200), elapsed)


def test_one_delivery_per_event_with_two_workers(served: Served) -> None:
    receiver = Receiver().start()
    try:
        with httpx.Client(timeout=30) as http:
            created = http.post(
                served.url + "/v1/all/webhooks",
                json={"env": "live", "targetUrl": receiver.url, "event": "profile.updated"},
                headers=HEADERS,
            )
            assert created.is_success, created.text
            profile = http.get(served.url + "/v1/all/search_profiles", params={"perPage": 1}, headers=HEADERS).json()[
                "results"
            ][0]
            for _ in range(6):
                fired = http.post(
                    served.url + "/v1/all/trigger_profile_webhook",
                    json={"id": profile["objectID"], "collection": profile["path"].split("/")[0]},
                    headers={**HEADERS, "connection": "close"},
                )
                assert fired.is_success, fired.text
        receiver.wait_for(6)
        time.sleep(2)  # long enough for a second sender to post any of them again
        ids = [headers["webhook-id"] for headers, _ in receiver.received]
        assert len(ids) == 6 and len(set(ids)) == 6
    finally:
        receiver.stop()


def test_workers_end_with_the_command_even_when_it_is_killed(served: Served) -> None:
    workers = served.workers()
    served.process.send_signal(signal.SIGKILL)
    served.process.wait()
    deadline = time.monotonic() + 30
    while any(Path(f"/proc/{pid}").exists() and b"spawn_main" in _cmdline(pid) for pid in workers):
        assert time.monotonic() < deadline, "a worker outlived the command"
        time.sleep(0.1)


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def test_one_worker_serves_in_process(tmp_path: Path) -> None:
    """``--workers 1`` is the single process as before: no index files, no worker children."""
    with serve(tmp_path, workers=1) as served:
        assert served.workers() == []
        assert not (served.data / "catalogue.sqlite3.index").exists()
        with httpx.Client(timeout=30) as http:
            assert served.search(http, perPage=1).status_code == 200
        assert os.path.exists(served.data / "catalogue.sqlite3")
