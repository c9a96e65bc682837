"""Alembic's environment: migrates the connection handed in by :func:`upgrade`, or ``sqlalchemy.url``."""

from __future__ import annotations

import sqlalchemy
from alembic import context

connection = context.config.attributes.get("connection")
schema = context.config.attributes.get("schema", "public")
"""The catalogue's schema, which holds its own ``alembic_version`` (the sandbox's is not the live catalogue's)."""
if connection is None:
    engine = sqlalchemy.create_engine(
        context.config.get_main_option("sqlalchemy.url") or "", poolclass=sqlalchemy.NullPool
    )
    with engine.begin() as connection:
        context.configure(connection=connection, transaction_per_migration=True, version_table_schema=schema)
        with context.begin_transaction():
            context.run_migrations()
else:
    context.configure(connection=connection, transaction_per_migration=True, version_table_schema=schema)
    with context.begin_transaction():
        context.run_migrations()
