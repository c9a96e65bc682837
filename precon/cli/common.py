"""What the commands share: the data directory and database options, a database URL's password kept out of every
message, and the stores and accounts opened as the service opens them."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from precon.service.config import DEFAULT_DATA_DIR, ServiceSettings


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


def split_values(values: tuple[str, ...]) -> list[str]:
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
def database_errors(database_url: str | None, note: str = "") -> Iterator[None]:
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


def open_postgres(database_url: str, sandbox: bool = False) -> Any:
    """The PostgreSQL catalogue (``sandbox``: the sandbox) at the URL, migrated."""
    from precon.service.stores.postgres.catalogues import SANDBOX_SCHEMA
    from precon.service.stores.postgres.store import PostgresCatalogueStore

    return PostgresCatalogueStore(database_url, schema=SANDBOX_SCHEMA if sandbox else "public", max_size=4)


def open_accounts_of(settings: ServiceSettings) -> Any:
    """The keys and products the service reads: in PostgreSQL with a database URL, else in the data directory."""
    from precon.service.runtime import open_accounts

    return open_accounts(settings)


def open_webhooks_of(settings: ServiceSettings) -> Any:
    """The webhook subscriptions and the outbox the service sends from (every replica's delivery worker sends from
    PostgreSQL's), as the service opens them."""
    from precon.service.runtime import open_webhooks

    return open_webhooks(settings)
