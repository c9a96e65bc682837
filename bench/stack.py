"""The parts of a deployment on loopback, for bench/cluster.py and tests/test_deploy.py: Redis, HAProxy running
deploy/haproxy.cfg, replicas of ``precon serve`` and a webhook receiver (PostgreSQL is tests/pg_support.py's
throw-away cluster).

Each part is a process of its own (the receiver a thread) started on free loopback ports and stopped by its
``stop()``; a replica can also be killed with SIGKILL, as a crash would.
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import orjson

ROOT = Path(__file__).resolve().parents[1]
HAPROXY_CFG = ROOT / "deploy" / "haproxy.cfg"
PRECON = Path(sys.executable).with_name("precon")
START_TIMEOUT_S = 600.0
"""The first replica on an empty database generates and loads the catalogue before /healthz answers."""
STOP_TIMEOUT_S = 10.0


class StackError(RuntimeError):
    """A part did not start or answer."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def missing_programs() -> list[str]:
    """The Debian packages this stack needs that are not installed (PostgreSQL is checked by tests/pg_support.py)."""
    needed = {"haproxy": "haproxy", "redis-server": "redis-server"}
    return [package for program, package in needed.items() if shutil.which(program) is None]


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


# -- Redis ------------------------------------------------------------------------------------------------------


@dataclass
class Redis:
    process: subprocess.Popen[bytes]
    url: str

    @classmethod
    def start(cls) -> Redis:
        binary = shutil.which("redis-server")
        if binary is None:
            raise StackError("redis-server is not installed (apt-get install -y redis-server)")
        port = free_port()
        command = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        redis = cls(process, f"redis://127.0.0.1:{port}/0")
        deadline = time.monotonic() + 10
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1) as probe:
                probe.sendall(b"PING\r\n")
                if probe.recv(16).startswith(b"+PONG"):
                    return redis
            if process.poll() is not None or time.monotonic() > deadline:
                redis.stop()
                raise StackError("redis-server did not answer PING")
            time.sleep(0.05)

    def stop(self) -> None:
        _stop(self.process)


# -- HAProxy ----------------------------------------------------------------------------------------------------


@dataclass
class HAProxy:
    """``haproxy -db -f deploy/haproxy.cfg`` (in the foreground), its addresses given in the environment."""

    process: subprocess.Popen[bytes]
    port: int
    socket_path: Path
    log_path: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @staticmethod
    def environment(port: int, replicas: list[str], socket_path: Path) -> dict[str, str]:
        """The variables deploy/haproxy.cfg reads: where to listen, the replicas, the admin socket."""
        env = {"PRECON_LISTEN": f"127.0.0.1:{port}", "PRECON_HAPROXY_SOCKET": str(socket_path)}
        env.update({f"PRECON_REPLICA_{number}": address for number, address in enumerate(replicas, 1)})
        return env

    @staticmethod
    def check(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        """``haproxy -c -dW`` (warnings are errors) on deploy/haproxy.cfg with ``env``."""
        command = ["haproxy", "-c", "-dW", "-f", str(HAPROXY_CFG)]
        return subprocess.run(command, env={**_base_env(), **env}, capture_output=True, text=True, timeout=30)

    @classmethod
    def start(cls, replicas: list[str], workdir: Path) -> HAProxy:
        if shutil.which("haproxy") is None:
            raise StackError("haproxy is not installed (apt-get install -y haproxy)")
        port = free_port()
        socket_path = workdir / "haproxy.sock"
        env = cls.environment(port, replicas, socket_path)
        checked = cls.check(env)
        if checked.returncode != 0:
            raise StackError(f"deploy/haproxy.cfg does not check: {checked.stdout}{checked.stderr}")
        log_path = workdir / "haproxy.log"
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                ["haproxy", "-db", "-f", str(HAPROXY_CFG)], env={**_base_env(), **env}, stdout=log, stderr=log
            )
        proxy = cls(process, port, socket_path, log_path)
        deadline = time.monotonic() + 10
        while not socket_path.exists():
            if process.poll() is not None or time.monotonic() > deadline:
                proxy.stop()
                raise StackError(f"haproxy did not start; see {log_path}")
            time.sleep(0.05)
        return proxy

    def command(self, line: str) -> str:
        """One command on the admin socket, its answer."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as admin:
            admin.settimeout(5)
            admin.connect(str(self.socket_path))
            admin.sendall(line.encode() + b"\n")
            chunks = []
            while chunk := admin.recv(65536):
                chunks.append(chunk)
        return b"".join(chunks).decode()

    def servers(self) -> dict[str, dict[str, str]]:
        """The backend's servers as ``show stat`` has them (``status`` UP, DOWN, ...; ``retr``, ``redis``)."""
        text = self.command("show stat").lstrip("# ")
        rows = csv.DictReader(io.StringIO(text))
        return {r["svname"]: r for r in rows if r["pxname"] == "replicas" and r["svname"] not in ("BACKEND",)}

    def retries(self) -> tuple[int, int]:
        """The backend's retries and redispatches so far."""
        text = self.command("show stat").lstrip("# ")
        for row in csv.DictReader(io.StringIO(text)):
            if row["pxname"] == "replicas" and row["svname"] == "BACKEND":
                return int(row["wretr"] or 0), int(row["wredis"] or 0)
        return 0, 0

    def wait_status(self, server: str, status: str, timeout_s: float = 30.0) -> float:
        """Waits until ``server``'s health check status starts with ``status`` (UP, DOWN); the seconds it took."""
        started = time.monotonic()
        while True:
            found = self.servers().get(server, {}).get("status", "")
            if found.startswith(status):
                return time.monotonic() - started
            if time.monotonic() - started > timeout_s:
                raise StackError(f"haproxy: {server} is {found!r}, not {status}, after {timeout_s:g} s")
            time.sleep(0.1)

    def stop(self) -> None:
        _stop(self.process)


def _base_env() -> dict[str, str]:
    """The environment without any PRECON_ variable of the caller's (so only what is given here counts)."""
    return {name: value for name, value in os.environ.items() if not name.startswith("PRECON_")}


# -- replicas ---------------------------------------------------------------------------------------------------


@dataclass
class Replica:
    """One ``precon serve --workers 1`` process with a data directory of its own."""

    name: str
    port: int
    data_dir: Path
    env: dict[str, str]
    process: subprocess.Popen[bytes] | None = None
    started_s: float = 0.0

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.address}"

    @property
    def log_path(self) -> Path:
        return self.data_dir.with_suffix(".log")

    def start(self, wait: bool = True) -> Replica:
        """Starts the process (again after a kill: same port, same data directory); waits for /healthz."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        command = [str(PRECON), "serve", "--host", "127.0.0.1", "--port", str(self.port), "--workers", "1"]
        command += ["--data", str(self.data_dir), "--dev"]
        env = {**_base_env(), **self.env}
        started = time.perf_counter()
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
        if wait:
            self.wait_healthy()
            self.started_s = time.perf_counter() - started
        return self

    def wait_healthy(self, timeout_s: float = START_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process is None or self.process.poll() is not None:
                tail = self.log_path.read_text(errors="replace")[-3000:] if self.log_path.exists() else ""
                raise StackError(f"replica {self.name} exited; its log ends:\n{tail}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.url + "/healthz", timeout=2.0).status_code == 200:
                    return
            time.sleep(0.2)
        raise StackError(f"replica {self.name}: no answer from /healthz in {timeout_s:g} s; see {self.log_path}")

    def kill(self) -> None:
        """SIGKILL, as a crash: nothing is closed, nothing finishes."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def stop(self) -> None:
        if self.process is not None:
            _stop(self.process)


# -- the webhook receiver ---------------------------------------------------------------------------------------


@dataclass
class Received:
    webhook_id: str
    event_id: str
    at: float
    signed: bool


@dataclass
class Receiver:
    """An HTTP server on loopback that answers 204 to every POST and records its ``webhook-id`` and event id;
    with the subscriptions' secrets it checks each signature (Standard Webhooks)."""

    delay_s: float = 0.0
    """How long each answer takes (recorded on arrival, answered after): a receiver that takes its time keeps
    deliveries in flight, as a real one does."""
    secrets: list[str] = field(default_factory=list)
    received: list[Received] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/hooks"

    def start(self) -> Receiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                receiver.record({k.lower(): v for k, v in self.headers.items()}, body)
                time.sleep(receiver.delay_s)
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def record(self, headers: dict[str, str], body: bytes) -> None:
        from standardwebhooks import Webhook, WebhookVerificationError

        signed = False
        for secret in list(self.secrets):
            try:
                Webhook(secret).verify(body, headers)
            except WebhookVerificationError:
                continue
            signed = True
            break
        try:
            event_id = str(orjson.loads(body).get("id"))
        except orjson.JSONDecodeError:
            event_id = ""
        with self._lock:
            self.received.append(Received(headers.get("webhook-id", ""), event_id, time.monotonic(), signed))

    def snapshot(self) -> list[Received]:
        with self._lock:
            return list(self.received)

    def tally(self, expected_events: set[str]) -> dict[str, Any]:
        """Against the events the service acknowledged: how many arrived, were lost, came twice (one
        ``webhook-id`` seen more than once), arrived unannounced, or failed their signature."""
        received = self.snapshot()
        by_id = Counter(r.webhook_id for r in received)
        events = {r.event_id for r in received}
        return {
            "deliveries_received": len(received),
            "events_expected": len(expected_events),
            "events_received": len(expected_events & events),
            "lost": len(expected_events - events),
            "sent_twice": sum(1 for count in by_id.values() if count > 1),
            "extra_copies": sum(count - 1 for count in by_id.values() if count > 1),
            "unannounced": len(events - expected_events),
            "bad_signatures": sum(not r.signed for r in received),
        }

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
