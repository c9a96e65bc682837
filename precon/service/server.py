"""Running the service under uvicorn in a background thread, on a real loopback port."""

from __future__ import annotations

import threading
import time
from types import TracebackType

import uvicorn
from fastapi import FastAPI

from precon.service.protocol import JsonErrorsProtocol

STARTUP_TIMEOUT_S = 30.0
KEEP_ALIVE_S = 75


class ServerThread:
    """``with ServerThread(app) as server: server.url`` — uvicorn on an ephemeral port, stopped on exit."""

    def __init__(self, app: FastAPI, host: str = "127.0.0.1", port: int = 0) -> None:
        config = uvicorn.Config(
            app,
            host=host,
            port=port,
            log_level="warning",
            access_log=False,
            lifespan="on",
            http=JsonErrorsProtocol,
            # Longer than a client's own idle limit (httpx's is 5 s): the client drops an idle connection first, never
            # sends a request on one the server is closing (uvicorn's 5 s raced httpx's on a busy machine).
            timeout_keep_alive=KEEP_ALIVE_S,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name="precon-service", daemon=True)
        self.url = ""

    def start(self) -> ServerThread:
        self._thread.start()
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the listings service did not start")
            time.sleep(0.01)
        host, port = self._server.servers[0].sockets[0].getsockname()[:2]
        self.url = f"http://{host}:{port}"
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()
