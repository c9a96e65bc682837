"""Replicas read from local copies: PostgreSQL keeps the documents and the log that copies follow.

Every replica answers questions from a SQLite copy of the catalogue in its own data directory
(:mod:`precon.service.stores.replica`), so what found records in PostgreSQL goes: the typed columns, the
term/number/plan rows, the ``tsvector`` columns and the words rows, the labels, the attribute names, the
profiles' provinces. What stays is what writes need: each record's document, the listing's province, the floor
plans' ids (an import checks they are unique), and which profiles a listing refers to (``listing_references``,
made here from the reference rows of ``listing_terms``): webhook events of profiles go to the keys granted one
of its provinces.

``catalogue_log``: the replication log. Every write records the keys it changed under the generation it raised,
in its own transaction; a copy at generation ``g`` catches up by reading the entries above ``g`` and the
documents of their keys in one snapshot. Entries older than a replica's retention are trimmed; ``meta``'s
``log_floor`` is the highest generation trimmed, so a copy below it rebuilds from a snapshot instead of
skipping what it never saw. The history before this revision is not in the log: the floor starts at the
generation of the moment.

``listing_views.touched_at``: the database's clock at a row's last change, so that each replica reads back only
the view counts that changed since its last look.

Downgrading to 0005 leaves the catalogue empty in the older layout (its search rows cannot be made from here):
restore a ``pg_dump`` or import the catalogue again.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-27
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

REFERENCE_ATTRIBUTES = ("architects", "builders", "interiorDesigners", "marketingCompanies", "salesCentres")
"""The reference attributes of ``precon.schema.LISTING_REFERENCE_FIELDS`` at this revision."""
LISTING_COLUMNS_KEPT = ("id", "listing_id", "province", "doc")
PROFILE_COLUMNS_KEPT = ("id", "profile_id", "collection", "path", "path_key", "doc")
SEARCH_TABLES = (
    "listing_words",
    "profile_words",
    "listing_plan_values",
    "listing_plans",
    "listing_numbers",
    "labels",
    "listing_attributes",
    "profile_provinces",
)

UPGRADE = f"""
CREATE TABLE listing_references(
  path_key text COLLATE "C" NOT NULL,
  listing bigint NOT NULL REFERENCES listings(id) ON DELETE CASCADE,
  PRIMARY KEY(path_key, listing));
CREATE INDEX listing_references_by_listing ON listing_references(listing);
INSERT INTO listing_references
  SELECT DISTINCT term, listing FROM listing_terms WHERE attr IN ({", ".join(f"'{a}'" for a in REFERENCE_ATTRIBUTES)});
DROP TABLE listing_terms;
DROP TABLE {", ".join(SEARCH_TABLES)};
CREATE TABLE catalogue_log(
  generation bigint NOT NULL,
  kind text NOT NULL CHECK (kind IN ('listing', 'profile')),
  key text COLLATE "C" NOT NULL,
  logged_at timestamptz NOT NULL DEFAULT now());
CREATE INDEX catalogue_log_by_generation ON catalogue_log(generation);
CREATE INDEX catalogue_log_by_time ON catalogue_log(logged_at);
INSERT INTO meta VALUES ('log_floor', (SELECT value FROM meta WHERE key = 'generation'))
  ON CONFLICT (key) DO NOTHING;
ALTER TABLE listing_views ADD COLUMN touched_at double precision NOT NULL DEFAULT 0;
CREATE INDEX listing_views_by_touch ON listing_views(touched_at);
"""


def _drop_columns_but(table: str, kept: tuple[str, ...]) -> None:
    connection = op.get_bind().connection.driver_connection
    columns = [
        row[0]
        for row in connection.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() "
            "AND table_name = %s ORDER BY ordinal_position",
            (table,),
        )
        if row[0] not in kept
    ]
    if columns:  # names read from the catalogue's own schema, quoted
        op.execute(f"ALTER TABLE {table} " + ", ".join(f'DROP COLUMN "{name}"' for name in columns))


def upgrade() -> None:
    op.execute(UPGRADE)
    _drop_columns_but("listings", LISTING_COLUMNS_KEPT)
    _drop_columns_but("profiles", PROFILE_COLUMNS_KEPT)


def _revision(name: str) -> ModuleType:
    path = Path(__file__).with_name(name)
    spec = importlib.util.spec_from_file_location(f"precon_revision_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def downgrade() -> None:
    first, relevance = _revision("0001_catalogue.py"), _revision("0004_text_relevance.py")
    op.execute("DROP TABLE IF EXISTS catalogue_log, listing_references")
    for table in first.TABLES:
        op.execute(f"DROP TABLE IF EXISTS {table} CASCADE")  # fixed names
    op.execute(first.UPGRADE)
    op.execute(relevance.UPGRADE)
