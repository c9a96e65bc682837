"""The ``precon`` command: serve the listings service, manage keys, build and import catalogues."""

from __future__ import annotations

import contextlib
import os
import re
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click
import orjson

from precon.service.config import DEFAULT_DATA_DIR, DEV_API_KEY, DEV_PRODUCT_ID, ServiceSettings


class ManyValues(click.Option):
    """An option that takes every value up to the next option: ``--versions v1 v1-lite`` (commas work too)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("multiple", True)
        super().__init__(*args, **kwargs)

    def add_to_parser(self, parser: Any, ctx: click.Context) -> None:
        super().add_to_parser(parser, ctx)
        for name in self.opts:
            option = parser._long_opt.get(name) or parser._short_opt.get(name)
            if option is None:
                continue
            original = option.process

            def process(value: Any, state: Any, original: Any = original) -> None:
                values = [value]
                while state.rargs and not state.rargs[0].startswith("-"):
                    values.append(state.rargs.pop(0))
                for item in values:
                    original(item, state)

            option.process = process


def _split(values: tuple[str, ...]) -> list[str]:
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


data_option = click.option(
    "--data",
    "data_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=lambda: os.environ.get("PRECON_SERVICE_DATA_DIR", str(DEFAULT_DATA_DIR)),
    show_default="./data or $PRECON_SERVICE_DATA_DIR",
    help="The data directory: catalogue, sandbox and keys.",
)

database_option = click.option(
    "--database",
    "database_url",
    envvar="PRECON_SERVICE_DATABASE_URL",
    default=None,
    metavar="URL",
    help="A postgresql:// URL (or $PRECON_SERVICE_DATABASE_URL): the catalogue, the sandbox, keys and webhooks are "
    "kept in that PostgreSQL database instead of SQLite files in the data directory.",
)

_URL_PASSWORD = re.compile(r"^(?P<head>[a-z][a-z0-9+.-]*://[^:@/?#]*:)(?P<secret>.*)@(?=[^@]*$)", re.IGNORECASE)
_PARAMETER_PASSWORD = re.compile(r"(?P<head>\bpassword\s*=\s*)(?P<secret>'(?:[^'\\]|\\.)*'|[^\s&]*)", re.IGNORECASE)


def redact(database_url: str) -> str:
    """The URL or connection string with its password (in the user part, or a ``password`` parameter) shown as
    ``***``: what logs and messages say instead of the URL."""
    before_query, question, query = database_url.partition("?")
    before_query = _URL_PASSWORD.sub(r"\g<head>***@", before_query)
    return _PARAMETER_PASSWORD.sub(r"\g<head>***", before_query + question + query)


def _password(database_url: str) -> str | None:
    """The password the URL carries, as libpq reads it (None: none, or the URL cannot be read)."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        password = conninfo_to_dict(database_url).get("password")
    except Exception:  # an unreadable URL: the patterns of redact() are all there is
        return None
    return str(password) if password else None


def scrub(text: str, database_url: str | None) -> str:
    """``text`` (an error message, a line of output) with the database URL's password nowhere in it."""
    if not database_url:
        return text
    text = text.replace(database_url, redact(database_url))
    password = _password(database_url)
    if password:
        text = text.replace(password, "***")
    return _PARAMETER_PASSWORD.sub(r"\g<head>***", text)


@contextlib.contextmanager
def _database_errors(database_url: str | None, note: str = "") -> Iterator[None]:
    """A failure to reach or use the database ends the command with its message (and ``note``), the password
    scrubbed out."""
    if not database_url:
        yield
        return
    import psycopg
    import sqlalchemy.exc

    try:
        yield
    except (psycopg.Error, sqlalchemy.exc.SQLAlchemyError) as error:  # the migrations run through SQLAlchemy
        message = f"PostgreSQL at {redact(database_url)}: {type(error).__name__}: {error}{note}"
        raise click.ClickException(scrub(message, database_url)) from None


def _open_postgres(database_url: str, sandbox: bool = False) -> Any:
    """The PostgreSQL catalogue (``sandbox``: the sandbox) at the URL, migrated."""
    from precon.service.stores.postgres.catalogues import SANDBOX_SCHEMA
    from precon.service.stores.postgres.store import PostgresCatalogueStore

    return PostgresCatalogueStore(database_url, schema=SANDBOX_SCHEMA if sandbox else "public", max_size=4)


@click.group()
def main() -> None:
    """Precon Explorer: Canada's pre-construction listings, served and explored."""


@main.command()
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
    from precon.service.runtime import available_cores

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
        with _database_errors(settings.database_url):
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


@main.group()
def keys() -> None:
    """API keys and the data products they grant."""


@keys.command("create")
@click.option("--product", "product_id", required=True, help="The data product to grant (created if new).")
@click.option("--versions", cls=ManyValues, help="Versions to grant (default: all): v1 v1-lite v1-sandbox.")
@click.option("--provinces", cls=ManyValues, help="Provinces to grant (default: all): on bc ab ….")
@click.option("--label", default="", help="A note to remember the key by.")
@data_option
@database_option
def create_key(
    product_id: str,
    versions: tuple[str, ...],
    provinces: tuple[str, ...],
    label: str,
    data_dir: Path,
    database_url: str | None,
) -> None:
    """Create a key for a product; the key is printed once, alone on stdout."""
    with _database_errors(database_url):
        accounts = _open_accounts(ServiceSettings(data_dir=data_dir, database_url=database_url))
    try:
        key = accounts.create_key(product_id, _split(versions), _split(provinces), label=label)
    except ValueError as error:
        raise click.BadParameter(str(error)) from None
    finally:
        accounts.close()
    click.echo(key)


@keys.command("revoke")
@click.argument("key")
@data_option
@database_option
def revoke_key(key: str, data_dir: Path, database_url: str | None) -> None:
    """Revoke a key: it and its grants are removed, and every replica refuses it within a second."""
    with _database_errors(database_url):
        accounts = _open_accounts(ServiceSettings(data_dir=data_dir, database_url=database_url))
        try:
            revoked = accounts.revoke_key(key)
        finally:
            accounts.close()
    if not revoked:
        raise click.ClickException("no such key")
    click.echo("revoked", err=True)


@main.group()
def catalogue() -> None:
    """Build, import and inspect catalogues."""


def _open_accounts(settings: ServiceSettings) -> Any:
    """The keys and products the service reads: in PostgreSQL with a database URL, else in the data directory."""
    from precon.service.runtime import open_accounts

    return open_accounts(settings)


def _open_webhooks(settings: ServiceSettings) -> Any:
    """The webhook subscriptions and the outbox the service sends from (every replica's delivery worker sends from
    PostgreSQL's), as the service opens them."""
    from precon.service.runtime import open_webhooks

    return open_webhooks(settings)


@contextlib.contextmanager
def _subscribers(settings: ServiceSettings, env: str) -> Iterator[Callable[[Any], None]]:
    """A function that makes the changes written to a store reach webhook subscribers, through the outbox the
    service sends from: each change once, published by this process after its write is committed."""
    from precon.service.webhooks.notify import CatalogueNotifier

    with contextlib.ExitStack() as opened:
        accounts = _open_accounts(settings)
        opened.callback(accounts.close)
        webhooks = _open_webhooks(settings)
        opened.callback(webhooks.close)

        def notify(store: Any) -> None:
            CatalogueNotifier(webhooks, accounts, store, env, settings.webhook_first_delay).attach()

        yield notify


@catalogue.command("prepare")
@data_option
def prepare_catalogue(data_dir: Path) -> None:
    """Make the data directory ready for the dashboard: the default catalogue generated and loaded where there is
    none (with progress), its indexes built. Does nothing slow when it is ready already."""
    from precon.service.runtime import DataDirectory

    settings = ServiceSettings(data_dir=data_dir, dev=True)
    started = time.perf_counter()
    bar: Any = None
    listings = 0

    def progress(what: str, records: int) -> None:
        nonlocal bar, listings
        if what == "generated":
            listings = records
            click.echo(f"Generated {records:,} listings in {time.perf_counter() - started:.1f} s", err=True)
        elif what == "history":
            click.echo(
                f"Simulated {settings.default_history_days} days of market history ({records:,} changes) by "
                f"{time.perf_counter() - started:.1f} s; loading…",
                err=True,
            )
            bar = click.progressbar(length=listings, label="listings", file=sys.stderr)
        elif what == "listings" and bar is not None:
            bar.update(records)

    if not settings.catalogue_path.exists():
        click.echo(f"Building the catalogue in {data_dir} (the first start only)…", err=True)
    directory = DataDirectory.open(settings, progress)
    if bar is not None:
        bar.render_finish()
    counts = directory.live.counts()
    directory.close()
    click.echo(
        f"Catalogue ready: {counts['listings']:,} listings, {counts['profiles']:,} profiles "
        f"({time.perf_counter() - started:.1f} s)",
        err=True,
    )


@catalogue.command("generate")
@click.option("--listings", "count", default=2500, show_default=True, type=click.IntRange(1, 1_000_000))
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--profiles", default=None, type=click.IntRange(1, 100_000), help="Default: scaled to listings.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Also write NDJSON here.")
@data_option
@database_option
def generate_catalogue(
    count: int, seed: int, profiles: int | None, out: Path | None, data_dir: Path, database_url: str | None
) -> None:
    """Replace the data directory's catalogue (or the PostgreSQL one, with --database) with a generated one."""
    from precon.service import catalogue as generator

    started = time.perf_counter()
    built = generator.generate(count, seed, profiles)
    click.echo(
        f"generated {len(built.listings)} listings and {len(built.profiles)} profiles "
        f"in {time.perf_counter() - started:.1f} s",
        err=True,
    )
    if out is not None:
        with out.open("wb") as handle:
            for record in [*built.profiles, *built.listings]:
                handle.write(orjson.dumps(record) + b"\n")
    if database_url:
        from precon.service.stores.mirror import replace_catalogue

        with _database_errors(database_url, "; the catalogue is unchanged"):
            store = _open_postgres(database_url)
            try:
                replace_catalogue(store, built.profiles, built.listings)
            finally:
                store.close()
        click.echo(f"wrote PostgreSQL at {redact(database_url)} in {time.perf_counter() - started:.1f} s", err=True)
        return
    from precon.service.stores.exclusive import CatalogueBusy, exclusive

    target = ServiceSettings(data_dir=data_dir).catalogue_path
    try:
        with exclusive(target, "a generate"):
            _replace_sqlite(target, built.listings, built.profiles)
    except CatalogueBusy as busy:
        raise click.ClickException(f"{busy}; the catalogue is unchanged") from None
    click.echo(
        f"wrote {ServiceSettings(data_dir=data_dir).catalogue_path} in {time.perf_counter() - started:.1f} s", err=True
    )


@catalogue.command("simulate")
@click.option("--days", required=True, type=click.IntRange(1, 3650), help="How many days to move forward.")
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--wait", "wait_s", default=600.0, show_default=True, help="Seconds to wait for an import running.")
@click.option(
    "--helper/--no-helper",
    default=None,
    help="Whether a second process decides most days while this one writes them (default: on a SQLite catalogue, "
    "for a long run on a machine of two cores or more). The outcome is the same.",
)
@data_option
@database_option
def simulate_catalogue(
    days: int, seed: int, wait_s: float, helper: bool | None, data_dir: Path, database_url: str | None
) -> None:
    """Move the catalogue forward in time from its newest change, day by day: releases, sales, launches,
    sell-outs, stalls and delays, each day one write (so history is recorded and webhooks hear of it)."""
    from precon.service.stores.exclusive import CatalogueBusy, exclusive
    from precon.service.stores.simulation import SimulationFailed, simulate
    from precon.service.stores.sqlite.store import SQLiteStore
    from precon.service.stores.sqlite.writes import StaleUpdate

    if helper and database_url:
        raise click.UsageError("--helper is for a SQLite catalogue; PostgreSQL's simulation runs in one process")

    settings = ServiceSettings(data_dir=data_dir, database_url=database_url)
    bar = click.progressbar(length=days, label="days", file=sys.stderr)

    def waiting(holder: str) -> None:
        click.echo(f"waiting for {holder} to finish (at most {wait_s:.0f} s)…", err=True)

    with _database_errors(database_url, "; the days written so far are kept, each whole"):
        lock = (
            contextlib.nullcontext()
            if database_url
            else exclusive(settings.catalogue_path, "a simulation", wait_s, waiting)
        )
        try:
            with lock:
                store = _open_postgres(database_url) if database_url else SQLiteStore(settings.catalogue_path)
                try:
                    with _subscribers(settings, "live") as notify, bar:
                        notify(store)
                        report = simulate(store, days, seed, lambda day, written: bar.update(1), helper)
                finally:
                    store.close()
        except CatalogueBusy as busy:
            raise click.ClickException(f"{busy}; nothing was simulated") from None
        except (SimulationFailed, StaleUpdate) as failed:
            raise click.ClickException(f"{failed}; the days written so far are kept, each whole") from None
    click.echo(
        f"simulated {report.first_day} to {report.last_day}: {report.listings_written:,} listing updates in "
        f"{report.writes} writes, {report.entries:,} history entries, in {report.seconds:.1f} s",
        err=True,
    )


def _replace_sqlite(target: Path, listings: list[dict[str, Any]], profiles: list[dict[str, Any]]) -> None:
    """The catalogue file replaced whole by one holding these records (written beside it, then renamed)."""
    from precon.service.stores.loading import load
    from precon.service.stores.sqlite.store import SQLiteStore

    target.parent.mkdir(parents=True, exist_ok=True)
    fresh = target.with_name(target.name + ".new")
    for leftover in (fresh, Path(f"{fresh}-wal"), Path(f"{fresh}-shm")):
        leftover.unlink(missing_ok=True)
    store = SQLiteStore(fresh)
    load(store, listings, profiles)
    store.close()
    for suffix in ("-wal", "-shm"):
        Path(f"{target}{suffix}").unlink(missing_ok=True)
    fresh.replace(target)


@catalogue.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--sandbox", is_flag=True, help="Import into the v1-sandbox catalogue.")
@data_option
@database_option
def import_catalogue(file: Path, sandbox: bool, data_dir: Path, database_url: str | None) -> None:
    """Load listings and profiles from JSON or NDJSON; bad records are reported by line and skipped. Into
    PostgreSQL (--database) the whole import is one transaction."""
    from precon.service.stores.exclusive import CatalogueBusy, exclusive
    from precon.service.stores.importer import import_file
    from precon.service.stores.sqlite.store import SQLiteStore

    settings = ServiceSettings(data_dir=data_dir, database_url=database_url)
    with _database_errors(database_url, "; nothing was imported"):
        target = settings.sandbox_path if sandbox else settings.catalogue_path
        lock: Any = contextlib.nullcontext() if database_url else exclusive(target, f"an import of {file.name}")
        try:
            with lock:
                store = _open_postgres(database_url, sandbox) if database_url else SQLiteStore(target)
                try:
                    with _subscribers(settings, "sandbox" if sandbox else "live") as notify:
                        notify(store)
                        report = import_file(store, file)
                finally:
                    store.close()
        except CatalogueBusy as busy:
            raise click.ClickException(f"{busy}; nothing was imported") from None
    for line, problem in report.problems:
        click.echo(f"{file}:{line}: skipped: {problem}", err=True)
    click.echo(
        f"imported {len(report.listings)} listings and {len(report.profiles)} profiles; skipped {len(report.problems)}",
        err=True,
    )
    if report.problems and not (report.listings or report.profiles):
        sys.exit(1)


@catalogue.command("mirror")
@click.option("--from", "source", required=True, help="The deployment to copy, e.g. https://api.getbuildify.com.")
@click.option("--key", envvar="PRECON_API_KEY", required=True, help="Its API key (or $PRECON_API_KEY).")
@click.option("--product", "product_id", envvar="PRECON_PRODUCT_ID", required=True, help="The data product.")
@click.option("--province", default="all", show_default=True, help="Copy one province only.")
@click.option("--version", default="v1", show_default=True, help="The API version to read.")
@data_option
@database_option
def mirror_catalogue(
    source: str, key: str, product_id: str, province: str, version: str, data_dir: Path, database_url: str | None
) -> None:
    """Copy every listing and profile of a deployment here, to work offline; rerun to resume. Into PostgreSQL
    (--database) the pages are fetched into the data directory, then replace the catalogue in one transaction."""
    from precon.client import Client
    from precon.errors import PreconError
    from precon.service.stores.mirror import mirror

    settings = ServiceSettings(data_dir=data_dir, database_url=database_url)
    target = settings.catalogue_path
    target.parent.mkdir(parents=True, exist_ok=True)
    bars: dict[str, Any] = {}

    def progress(phase: str, done: int, total: int) -> None:
        bar = bars.get(phase)
        if bar is None:
            bar = bars[phase] = click.progressbar(length=max(total, 1), label=f"{phase:9}", file=sys.stderr)
            bar.__enter__()
        bar.update(done - bar.pos)
        if done >= total:
            bar.__exit__(None, None, None)

    with _database_errors(database_url, "; the catalogue is unchanged, the pages fetched are kept: rerun to resume"):
        into = _open_postgres(database_url) if database_url else None
        try:
            with (
                _subscribers(settings, "live") as notify,
                Client(source, key, product_id, version=version, cache=False) as client,
            ):
                report = mirror(client, target, province=province, progress=progress, on_store=notify, into=into)
        except PreconError as error:
            for bar in bars.values():
                bar.__exit__(None, None, None)
            raise click.ClickException(
                f"{error}\nThe copy so far is kept: run the same command again to resume."
            ) from None
        except ValueError as error:  # a record the source sent that no store takes
            for bar in bars.values():
                bar.__exit__(None, None, None)
            raise click.ClickException(f"{error}; the catalogue is unchanged") from None
        finally:
            if into is not None:
                into.close()
    where = target if database_url is None else f"PostgreSQL at {redact(database_url)}"
    click.echo(
        f"{'resumed; ' if report.resumed else ''}mirrored {report.listings} listings and {report.profiles} profiles "
        f"into {where} ({report.requests} requests)",
        err=True,
    )


if __name__ == "__main__":
    main()
