"""``precon catalogue``: prepare, generate, simulate, import and mirror catalogues."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click
import orjson

from precon.cli.common import (
    data_option,
    database_errors,
    database_option,
    open_accounts_of,
    open_postgres,
    open_webhooks_of,
    redact,
)
from precon.service.config import ServiceSettings


@click.group()
def catalogue() -> None:
    """Build, import and inspect catalogues."""


@contextlib.contextmanager
def _subscribers(settings: ServiceSettings, env: str) -> Iterator[Callable[[Any], None]]:
    """A function that makes the changes written to a store reach webhook subscribers, through the outbox the
    service sends from: each change once, published by this process after its write is committed."""
    from precon.service.webhooks.notify import CatalogueNotifier

    with contextlib.ExitStack() as opened:
        accounts = open_accounts_of(settings)
        opened.callback(accounts.close)
        webhooks = open_webhooks_of(settings)
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
    directory = DataDirectory.open(settings, progress, serving=False)
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

        with database_errors(database_url, "; the catalogue is unchanged"):
            store = open_postgres(database_url)
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

    with database_errors(database_url, "; the days written so far are kept, each whole"):
        lock = (
            contextlib.nullcontext()
            if database_url
            else exclusive(settings.catalogue_path, "a simulation", wait_s, waiting)
        )
        try:
            with lock:
                store = open_postgres(database_url) if database_url else SQLiteStore(settings.catalogue_path)
                try:
                    with _subscribers(settings, "live") as notify, bar:
                        notify(store)
                        report = simulate(store, days, seed, progress=lambda day, written: bar.update(1), helper=helper)
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
    from precon.service.stores.loading import load_new
    from precon.service.stores.sqlite.store import write_whole

    write_whole(target, lambda store: load_new(store, listings, profiles, at=time.time()))


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
    with database_errors(database_url, "; nothing was imported"):
        target = settings.sandbox_path if sandbox else settings.catalogue_path
        lock: Any = contextlib.nullcontext() if database_url else exclusive(target, f"an import of {file.name}")
        try:
            with lock:
                store = open_postgres(database_url, sandbox) if database_url else SQLiteStore(target)
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
@click.option(
    "--page-size",
    default=1000,
    show_default=True,
    type=click.IntRange(1, 1000),
    help="Records a request (fewer for a slow or flaky network; a resumed run keeps the size it began with).",
)
@data_option
@database_option
def mirror_catalogue(
    source: str,
    key: str,
    product_id: str,
    province: str,
    version: str,
    page_size: int,
    data_dir: Path,
    database_url: str | None,
) -> None:
    """Copy every listing and profile of a deployment here, recording in the history what changed since the last
    copy; rerun to resume. The pages are fetched into the data directory, then what differs is written in one
    transaction (into PostgreSQL with --database)."""
    from precon.client import Client
    from precon.client.errors import PreconError
    from precon.service.stores.exclusive import CatalogueBusy, exclusive
    from precon.service.stores.mirror import mirror

    settings = ServiceSettings(data_dir=data_dir, database_url=database_url)
    target = settings.catalogue_path
    target.parent.mkdir(parents=True, exist_ok=True)
    bars = _ProgressBars()
    with database_errors(database_url, "; the catalogue is unchanged, the pages fetched are kept: rerun to resume"):
        into = open_postgres(database_url) if database_url else None
        try:
            with (
                contextlib.nullcontext() if database_url else exclusive(target, "a mirror"),
                _subscribers(settings, "live") as notify,
                Client(source, key, product_id, version=version, cache=False) as client,
            ):
                report = mirror(
                    client, target, province=province, progress=bars, on_store=notify, into=into, page_size=page_size
                )
        except CatalogueBusy as busy:
            raise click.ClickException(f"{busy}; the catalogue is unchanged") from None
        except (PreconError, ValueError) as error:  # ValueError: a record the source sent that no store takes
            bars.close()
            raise click.ClickException(
                f"{error}\nThe catalogue is unchanged and the pages fetched so far are kept: run the same command "
                "again to resume."
            ) from None
        finally:
            if into is not None:
                into.close()
    where = target if database_url is None else f"PostgreSQL at {redact(database_url)}"
    click.echo(_mirrored(report, str(where)), err=True)


class _ProgressBars:
    """A mirror's progress: a bar a phase (profiles, listings), closed when the phase is done or the run fails."""

    def __init__(self) -> None:
        self.bars: dict[str, Any] = {}

    def __call__(self, phase: str, done: int, total: int) -> None:
        bar = self.bars.get(phase)
        if bar is None:
            bar = self.bars[phase] = click.progressbar(length=max(total, 1), label=f"{phase:9}", file=sys.stderr)
            bar.__enter__()
        bar.update(done - bar.pos)
        if done >= total:
            bar.__exit__(None, None, None)

    def close(self) -> None:
        for bar in self.bars.values():
            bar.__exit__(None, None, None)


def _mirrored(report: Any, where: str) -> str:
    """What a mirror run did, for its log: the records copied, then what changed and the entries recorded."""
    from precon.service.stores.history import iso_time

    found = report.differences
    return (
        f"{'resumed; ' if report.resumed else ''}mirrored {report.listings} listings and {report.profiles} profiles "
        f"into {where} ({report.requests} requests)\n"
        f"listings: {found.created['listings']} created, {found.updated['listings']} changed, "
        f"{found.deleted['listings']} deleted; profiles: {found.created['profiles']} created, "
        f"{found.updated['profiles']} changed, {found.deleted['profiles']} deleted; "
        f"{found.entries} history entries at {iso_time(report.at)}"
    )
