"""The PostgreSQL schema's migrations (Alembic), run from Python: no ``alembic.ini`` is needed.

``upgrade(conninfo)`` brings a database to the newest revision; ``alembic`` on the command line works too, with
``-c`` naming a configuration whose ``script_location`` is this folder and whose ``sqlalchemy.url`` is a
``postgresql+psycopg://`` URL.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import psycopg
import sqlalchemy
from alembic import command
from alembic.config import Config

FOLDER = Path(__file__).parent
SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


def schema_options(schema: str) -> dict[str, str]:
    """Connection arguments that put a catalogue's tables in ``schema`` (its extensions stay in ``public``)."""
    if not SCHEMA_NAME.match(schema):
        raise ValueError(f"not a schema name: {schema!r}")
    return {} if schema == "public" else {"options": f"-c search_path={schema},public"}


MIGRATION_LOCK = 0x70726564
"""The advisory lock migrations hold: replicas starting together migrate one after the other."""


def config() -> Config:
    settings = Config()
    settings.set_main_option("script_location", str(FOLDER))
    return settings


def _run(conninfo: str, schema: str, action: Callable[[Config], None]) -> None:
    """Runs an Alembic command on the catalogue in ``schema`` (made if missing), in one transaction that holds
    :data:`MIGRATION_LOCK`."""
    options = schema_options(schema)
    engine = sqlalchemy.create_engine(
        "postgresql+psycopg://", creator=lambda: psycopg.connect(conninfo, **options), poolclass=sqlalchemy.NullPool
    )
    try:
        with engine.begin() as connection:
            connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK})")
            if schema != "public":
                connection.exec_driver_sql(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')  # checked by schema_options
                connection.exec_driver_sql(f'SET LOCAL search_path TO "{schema}", public')
            settings = config()
            settings.attributes["connection"] = connection
            settings.attributes["schema"] = schema
            action(settings)
    finally:
        engine.dispose()


def upgrade(conninfo: str, revision: str = "head", schema: str = "public") -> None:
    """Migrates the database ``conninfo`` names (a libpq string or a ``postgresql://`` URL) to ``revision``: the
    catalogue in ``schema``."""
    _run(conninfo, schema, lambda settings: command.upgrade(settings, revision))


def downgrade(conninfo: str, revision: str = "base", schema: str = "public") -> None:
    """Undoes migrations down to ``revision`` (``base``: an empty database)."""
    _run(conninfo, schema, lambda settings: command.downgrade(settings, revision))


def current(conninfo: str, schema: str = "public") -> str | None:
    """The revision of the catalogue in ``schema``, or None when it was never migrated."""
    with psycopg.connect(conninfo, **schema_options(schema)) as connection:
        exists = connection.execute("SELECT to_regclass(%s) IS NOT NULL", (f"{schema}.alembic_version",)).fetchone()
        if not exists or not exists[0]:
            return None
        row = connection.execute("SELECT version_num FROM alembic_version").fetchone()
        return None if row is None else str(row[0])
