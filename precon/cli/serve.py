"""``precon serve``: the listings service under uvicorn, in one process or several."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import Any

import click

from precon.cli.common import data_option, database_errors, database_option, redact, scrub
from precon.service.config import DEV_API_KEY, DEV_PRODUCT_ID, ServiceSettings


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--port", default=8000, show_default=True, type=int, help="Port to bind (0 picks a free one).")
@data_option
@database_option
@click.option("--dev", is_flag=True, help=f"Loopback only, with the development key {DEV_API_KEY!r}.")
@click.option("--rate-limit", type=float, default=None, help="Requests a second per key (0: no limit).")
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    help="Processes serving requests (default: one per core); they share one copy of the indexes.",
)
def serve(
    host: str,
    port: int,
    data_dir: Path,
    database_url: str | None,
    dev: bool,
    rate_limit: float | None,
    workers: int | None,
) -> None:
    """Serve the listings API over the catalogue in the data directory, or in PostgreSQL with --database (made on
    first use)."""
    os.environ.pop("PROMETHEUS_MULTIPROC_DIR", None)  # before prometheus-client is imported: see _serve_workers
    import uvicorn

    from precon.service.protocol import JsonErrorsProtocol
    from precon.service.stores.forked import available_cores

    if dev and host not in ("127.0.0.1", "localhost", "::1"):
        raise click.UsageError("--dev binds loopback only: use --host 127.0.0.1")
    workers = workers or available_cores()
    overrides: dict[str, Any] = {"data_dir": data_dir, "dev": dev, "workers": workers, "host": host}
    if rate_limit is not None:
        overrides["rate_limit"] = rate_limit
    if database_url:
        overrides["database_url"] = database_url
    settings = ServiceSettings(**overrides)
    from precon.service.api.observe import observed_serving

    try:
        log_config = observed_serving(settings)  # the logs' format applied; metrics settings that cannot be met refused
    except ValueError as error:
        raise click.UsageError(str(error)) from None
    where = f" and PostgreSQL at {redact(settings.database_url)}" if settings.database_url else ""
    click.echo(f"Opening {data_dir}{where} (the first run generates the default catalogue)…", err=True)
    if workers == 1:
        from precon.service.runtime import DataDirectory, settle_heap

        _fewer_malloc_arenas()
        with database_errors(settings.database_url):
            directory = DataDirectory.open(settings)
        app = directory.app()
        settle_heap()
        if dev:
            click.echo(f"Development key: {DEV_API_KEY}  product: {DEV_PRODUCT_ID}", err=True)
        options: dict[str, Any] = {"log_level": "info", "access_log": False, "log_config": log_config}
        uvicorn.run(app, host=host, port=port, http=JsonErrorsProtocol, **options)
        return
    _serve_workers(settings, host, port, log_config)


def _serve_workers(settings: ServiceSettings, host: str, port: int, log_config: dict[str, Any]) -> None:
    """``serve`` with several worker processes: the data directory made ready (and its indexes written) once, in a
    process of its own that ends before they start, so this supervising process stays small; then uvicorn's
    supervisor starts the workers, each of which opens the directory from the settings in its environment (and
    keeps its metrics in files of ``metrics/`` there, emptied for the run: any worker adds them all up)."""
    import uvicorn

    from precon.service.metrics import MULTIPROC_ENV, fresh_directory
    from precon.service.protocol import JsonErrorsProtocol

    os.environ.update(
        {
            "PRECON_SERVICE_DATA_DIR": str(settings.data_dir.resolve()),
            "PRECON_SERVICE_DEV": "true" if settings.dev else "false",
            "PRECON_SERVICE_RATE_LIMIT": repr(settings.rate_limit),
            "PRECON_SERVICE_WORKERS": str(settings.workers),
            "PRECON_SERVICE_HOST": host,
            "MALLOC_ARENA_MAX": os.environ.get("MALLOC_ARENA_MAX", "2"),  # see _fewer_malloc_arenas
        }
    )
    if settings.database_url:
        os.environ["PRECON_SERVICE_DATABASE_URL"] = settings.database_url
    prepare = "from precon.service.runtime import prepare_workers; prepare_workers()"
    if _run_scrubbed([sys.executable, "-c", prepare], settings.database_url) != 0:
        where = f" or the database {redact(settings.database_url)}" if settings.database_url else ""
        raise click.ClickException(f"could not open the data directory {settings.data_dir}{where}")
    if settings.dev:
        click.echo(f"Development key: {DEV_API_KEY}  product: {DEV_PRODUCT_ID}", err=True)
    os.environ[MULTIPROC_ENV] = str(fresh_directory(settings.data_dir.resolve() / "metrics"))
    uvicorn.run(
        "precon.service.runtime:worker_app",
        factory=True,
        workers=settings.workers,
        host=host,
        port=port,
        log_level="info",
        access_log=False,
        http=JsonErrorsProtocol,
        log_config=log_config,
    )


def _run_scrubbed(command: list[str], database_url: str | None) -> int:
    """Runs ``command``, its standard error passed on line by line with the database password scrubbed out (a
    traceback may quote the URL); answers its exit status."""
    import subprocess

    if not database_url:
        return subprocess.run(command, check=False).returncode
    with subprocess.Popen(command, stderr=subprocess.PIPE, text=True, errors="replace") as process:
        assert process.stderr is not None
        for line in process.stderr:
            sys.stderr.write(scrub(line, database_url))
            sys.stderr.flush()
    return process.returncode


def _fewer_malloc_arenas() -> None:
    """glibc gives each thread its own heap arena; with a pool of worker threads the service then holds far more
    memory than it uses. Two arenas serve this service as fast (the same as MALLOC_ARENA_MAX=2)."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    if sys.platform.startswith("linux") and name:
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(name).mallopt(-8, 2)  # -8: M_ARENA_MAX
