"""The catalogue's history: what each write changed in each listing, recorded in the write's transaction.

A row is one entry of :func:`precon.service.stores.history.listing_changes` as
:func:`~precon.service.stores.history.history_rows` stores it (the same columns as a SQLite catalogue's
``listing_history``: ``from_value`` and ``to_value`` are the values' JSON, as bytes), under the ``generation`` of
the write that recorded it. ``seq`` numbers the rows in the order they were written (writes hold one advisory
lock, so it is also the order of their generations): the replicas' copies read a batch's rows by generation, a
snapshot's all of them by ``seq``, and each keeps them in that order in its own ``listing_history``, from which
``listing_history`` and ``changes`` are answered.

The table is never trimmed with ``catalogue_log``: history is what the service keeps, not a means of replication.
Writes before this revision recorded nothing; downgrading drops the history recorded since.

Made in every schema migrated (each catalogue has its own history).

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-28
"""

from __future__ import annotations

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

UPGRADE = """
CREATE TABLE listing_history(
  seq bigserial PRIMARY KEY,
  generation bigint NOT NULL,
  at text NOT NULL,
  listing_id text COLLATE "C" NOT NULL,
  province text,
  scope text NOT NULL CHECK (scope IN ('listing', 'floorPlan', 'unit')),
  plan text,
  unit text,
  field text,
  change text NOT NULL CHECK (change IN ('created', 'updated', 'deleted')),
  from_value bytea,
  to_value bytea);
CREATE INDEX listing_history_by_generation ON listing_history(generation, seq);
CREATE INDEX listing_history_by_listing ON listing_history(listing_id, seq);
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS listing_history")
