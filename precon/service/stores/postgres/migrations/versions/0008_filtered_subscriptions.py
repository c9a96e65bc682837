"""Filtered webhook subscriptions: what a subscription to listing events hears of (contract.md, "Filtered
subscriptions").

``filter_query`` and ``unit_filter`` keep the search grammars' text as the subscription was made with it (checked
then), ``fields`` the field names as a JSON array; all three null for a subscription that hears of everything, as
every subscription made before this revision does. The same columns as ``subscriptions`` of the SQLite file
``webhooks.sqlite3`` (``precon.service.webhooks.sqlite``).

Made in every schema migrated, as 0002's tables are.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-28
"""

from __future__ import annotations

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

COLUMNS = ("filter_query", "unit_filter", "fields")


def upgrade() -> None:
    op.execute(
        "ALTER TABLE webhook_subscriptions " + ", ".join(f"ADD COLUMN IF NOT EXISTS {name} text" for name in COLUMNS)
    )


def downgrade() -> None:
    op.execute("ALTER TABLE webhook_subscriptions " + ", ".join(f"DROP COLUMN IF EXISTS {name}" for name in COLUMNS))
