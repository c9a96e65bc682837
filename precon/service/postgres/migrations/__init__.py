"""The PostgreSQL schema's migrations (Alembic), run from Python: no ``alembic.ini`` is needed.

``upgrade(conninfo)`` brings a database to the newest revision; ``alembic`` on the command line works too, with
``-c`` naming a configuration whose ``script_location`` is this folder and whose ``sqlalchemy.url`` is a
``postgresql+psycopg://`` URL.
"""

from __future__ import annotations

from pathlib import Path

import psycopg
import sqlalchemy
from alembic import command
from alembic.config import Config

FOLDER = Path(__file__).parent


def config() -> Config:
    settings = Config()
    settings.set_main_option("script_location", str(FOLDER))
    return settings


def upgrade(conninfo: str, revision: str = "head") -> None:
    """Migrates the database ``conninfo`` names (a libpq string or a ``postgresql://`` URL) to ``revision``."""
    engine = sqlalchemy.create_engine(
        "postgresql+psycopg://", creator=lambda: psycopg.connect(conninfo), poolclass=sqlalchemy.NullPool
    )
    try:
        with engine.begin() as connection:
            settings = config()
            settings.attributes["connection"] = connection
            command.upgrade(settings, revision)
    finally:
        engine.dispose()


def downgrade(conninfo: str, revision: str = "base") -> None:
    """Undoes migrations down to ``revision`` (``base``: an empty database)."""
    engine = sqlalchemy.create_engine(
        "postgresql+psycopg://", creator=lambda: psycopg.connect(conninfo), poolclass=sqlalchemy.NullPool
    )
    try:
        with engine.begin() as connection:
            settings = config()
            settings.attributes["connection"] = connection
            command.downgrade(settings, revision)
    finally:
        engine.dispose()


def current(conninfo: str) -> str | None:
    """The database's revision, or None when it was never migrated."""
    with psycopg.connect(conninfo) as connection:
        exists = connection.execute("SELECT to_regclass('alembic_version') IS NOT NULL").fetchone()
        if not exists or not exists[0]:
            return None
        row = connection.execute("SELECT version_num FROM alembic_version").fetchone()
        return None if row is None else str(row[0])
