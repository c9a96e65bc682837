"""What each deleted listing last was: a ``changes`` feed filtered after a listing went still judges it on that
(contract.md, "History": "a deleted listing matches on what it last was").

A delete stores the listing's last document here in its transaction; a listing written again under the same id is
no longer deleted and leaves it. The same table as a SQLite catalogue's ``deleted_listings``; the replicas' copies
hold theirs (each copy's delete keeps the document it held, and a copy rebuilt from a snapshot takes these rows).

Made in every schema migrated (each catalogue has its own).

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-28
"""

from __future__ import annotations

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # json, not jsonb, as listings.doc: the document's keys stay in their order.
    op.execute(
        'CREATE TABLE deleted_listings(listing_id text COLLATE "C" PRIMARY KEY, province text, doc json NOT NULL)'
    )


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS deleted_listings")
