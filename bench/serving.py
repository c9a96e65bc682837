"""A catalogue and a ``precon serve`` process for the benches: building and reading the catalogue, a key, starting
and stopping the service, and the memory of its process tree."""

from __future__ import annotations

import os
import random
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import orjson

from precon.service.config import ServiceSettings

sys.path.insert(0, str(Path(__file__).resolve().parent))

import mix
from mix import SAMPLE_SIZE, JsonDict

BENCH_DIR = Path(__file__).resolve().parent
OUT_DIR = BENCH_DIR / "out"
PRECON = Path(sys.executable).with_name("precon")
HEALTH_TIMEOUT_S = 900.0
STOP_TIMEOUT_S = 10.0
MEMORY_SAMPLE_S = 0.5


def build_catalogue(listings: int, seed: int, data_dir: Path, reuse: bool) -> float | None:
    """Seconds to build the catalogue, or None when ``reuse`` kept an existing one."""
    if reuse and ServiceSettings(data_dir=data_dir).catalogue_path.exists():
        return None
    started = time.perf_counter()
    command = [str(PRECON), "catalogue", "generate", "--listings", str(listings), "--seed", str(seed)]
    subprocess.run([*command, "--data", str(data_dir)], check=True)
    return time.perf_counter() - started


def read_listings(data_dir: Path) -> list[JsonDict]:
    """Every listing document as the store holds it (the ``listing_docs`` table)."""
    db = sqlite3.connect(ServiceSettings(data_dir=data_dir).catalogue_path)
    try:
        return [orjson.loads(doc) for (doc,) in db.execute("SELECT doc FROM listing_docs ORDER BY id")]
    finally:
        db.close()


def sample_listings(data_dir: Path, rng: random.Random) -> list[JsonDict]:
    """The listings :meth:`Vocabulary.of` would draw from :func:`read_listings`'s list with the same ``rng`` (the
    same positions in id order), reading only those documents: at 500,000 listings the whole list is gigabytes."""
    db = sqlite3.connect(ServiceSettings(data_dir=data_dir).catalogue_path)
    try:
        ids = [row[0] for row in db.execute("SELECT id FROM listing_docs ORDER BY id")]
        chosen = [ids[position] for position in rng.sample(range(len(ids)), min(SAMPLE_SIZE, len(ids)))]
        docs: dict[int, JsonDict] = {}
        for start in range(0, len(chosen), 500):
            batch = chosen[start : start + 500]
            marks = ", ".join("?" * len(batch))
            for rowid, doc in db.execute(f"SELECT id, doc FROM listing_docs WHERE id IN ({marks})", batch):
                docs[rowid] = orjson.loads(doc)
        return [docs[rowid] for rowid in chosen]
    finally:
        db.close()


def create_key(data_dir: Path) -> str:
    command = [str(PRECON), "keys", "create", "--product", mix.PRODUCT, "--data", str(data_dir)]
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout.strip()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def serve_offers_workers() -> bool:
    """Whether the installed ``precon serve`` takes ``--workers N``."""
    help_text = subprocess.run([str(PRECON), "serve", "--help"], capture_output=True, text=True).stdout
    return "--workers" in help_text


def process_tree(root: int) -> list[int]:
    """``root`` and every live descendant, from each process's parent in ``/proc/<pid>/stat``."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parent = int(stat[stat.rindex(")") + 2 :].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    found, pending = [], [root]
    while pending:
        pid = pending.pop()
        found.append(pid)
        pending += children.get(pid, [])
    return found


def tree_total_kb(root: int, proc_file: str, field: str) -> tuple[int, int]:
    """A field (``Pss`` of ``smaps_rollup``, ``VmRSS`` of ``status``) summed in kB over a process and its
    descendants, and how many processes had it."""
    total_kb = counted = 0
    for pid in process_tree(root):
        try:
            text = Path(f"/proc/{pid}/{proc_file}").read_text()
        except OSError:
            continue
        for line in text.splitlines():
            if line.startswith(field + ":"):
                total_kb += int(line.split()[1])
                counted += 1
                break
    return total_kb, counted


def tree_pss_mb(root: int) -> tuple[float, int]:
    """The summed ``Pss`` of a process and its descendants in MB, and how many processes were counted."""
    total_kb, counted = tree_total_kb(root, "smaps_rollup", "Pss")
    return total_kb / 1024, counted


class MemorySampler:
    """The service tree's PSS every ``MEMORY_SAMPLE_S`` in a thread, keeping the peak."""

    def __init__(self, root: int) -> None:
        self.root = root
        self.peak_mb = 0.0
        self.processes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def sample(self) -> float:
        pss, processes = tree_pss_mb(self.root)
        self.peak_mb = max(self.peak_mb, pss)
        self.processes = max(self.processes, processes)
        return pss

    def _run(self) -> None:
        while not self._stop.wait(MEMORY_SAMPLE_S):
            self.sample()

    def __enter__(self) -> MemorySampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


class ServiceFailed(RuntimeError):
    """The service did not start or did not answer its health check."""


@dataclass
class Service:
    process: subprocess.Popen[bytes]
    base_url: str
    log_path: Path
    started_s: float
    healthy_at: float = 0.0
    """``time.perf_counter()`` when ``/healthz`` first answered."""

    @classmethod
    def start(
        cls,
        data_dir: Path,
        log_path: Path,
        workers: int | None = None,
        env: dict[str, str] | None = None,
        dev: bool = False,
    ) -> Service:
        """``precon serve`` on ``data_dir`` on a free loopback port, with no rate limit, once ``/healthz`` answers;
        ``dev``: with the development key (printed in its log)."""
        port = free_port()
        command = [str(PRECON), "serve", "--data", str(data_dir), "--port", str(port), "--host", "127.0.0.1"]
        if workers is not None:
            command += ["--workers", str(workers)]
        if dev:
            command.append("--dev")
        started = time.perf_counter()
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                [*command, "--rate-limit", "0"], stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})}
            )
        service = cls(process, f"http://127.0.0.1:{port}", log_path, 0.0)
        service.wait_healthy()
        service.healthy_at = time.perf_counter()
        service.started_s = service.healthy_at - started
        return service

    def wait_healthy(self) -> None:
        deadline = time.monotonic() + HEALTH_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ServiceFailed(f"the service exited with {self.process.returncode}; see {self.log_path}")
            try:
                if httpx.get(self.base_url + "/healthz", timeout=2.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.stop()
        raise ServiceFailed(f"no answer from /healthz within {HEALTH_TIMEOUT_S:.0f} s; see {self.log_path}")

    def memory_mb(self) -> dict[str, float]:
        """The PSS of the service's process tree, and ``VmHWM`` (peak resident) and ``VmRSS`` of its main process,
        in MB."""
        pss, processes = tree_pss_mb(self.process.pid)
        found: dict[str, float] = {"PSS": pss, "processes": processes}
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            name, _, value = line.partition(":")
            if name in ("VmHWM", "VmRSS"):
                found[name] = int(value.split()[0]) / 1024
        return found

    def stop(self) -> None:
        if self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
