"""Idempotency keys: the answer stored with each ``Idempotency-Key`` of a webhook POST, by the caller's API key.

The layout of ``idempotency_keys`` in the SQLite file ``webhooks.sqlite3`` (``precon.service.webhooks.store``), as
PostgreSQL types: the stored answer's status and body, a digest of the request it answered (``fingerprint``) and
when it was stored (``created_at``, epoch seconds of the database's clock; rows older than a day are purged).

Made in every schema migrated, as 0002's tables are.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23
"""

from __future__ import annotations

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

UPGRADE = """
CREATE TABLE webhook_idempotency_keys(
  key_id bigint NOT NULL,
  idempotency_key text COLLATE "C" NOT NULL,
  fingerprint text NOT NULL,
  status integer NOT NULL,
  body bytea NOT NULL,
  created_at double precision NOT NULL,
  PRIMARY KEY(key_id, idempotency_key));
CREATE INDEX webhook_idempotency_keys_by_age ON webhook_idempotency_keys(created_at);
"""


def upgrade() -> None:
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS webhook_idempotency_keys")
