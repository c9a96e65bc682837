"""Text relevance: each record's words with their counts, so that PostgreSQL scores a search as SQLite does.

``listing_words``/``profile_words``: per record and word, its field-weighted count (``weighted``: the sum of the
searchable fields' weights over its instances, ``SEARCHABLE_LISTING_WEIGHTS``/``SEARCHABLE_PROFILE_WEIGHTS``) and
its number of instances in each searchable field (``counts``, in the fields' order), keyed by the word
(``COLLATE "C"``: code-point order, so a prefix's words are one range of the key). Beside each record, the
field-weighted length of its text (``listings.text_length``) and its number of words (``text_tokens``): the
document lengths of the two measures (:mod:`precon.service.stores.postgres.relevance`). A record's words rows repeat
them
(``length``, ``tokens``), and the words' key includes every column: a search without filters ranks from that
index alone (in some fields only too), and reads the records' rows only for its best matches (their order among
equal scores); with filters, what a listing search orders by comes from ``listings_for_ranking`` (an index-only
scan), not from the wide rows.

Superseded by 0006, which drops these rows: the rows of a catalogue already stored are no longer made here.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23
"""

from __future__ import annotations

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

UPGRADE = """
ALTER TABLE listings ADD COLUMN text_length double precision NOT NULL DEFAULT 0,
  ADD COLUMN text_tokens integer NOT NULL DEFAULT 0;
ALTER TABLE profiles ADD COLUMN text_tokens integer NOT NULL DEFAULT 0;
CREATE INDEX listings_for_ranking ON listings(id) INCLUDE (featured, updated_at, listing_id, text_length);
CREATE TABLE listing_words(
  word text COLLATE "C" NOT NULL,
  listing bigint NOT NULL REFERENCES listings(id) ON DELETE CASCADE,
  weighted double precision NOT NULL,
  length double precision NOT NULL,
  tokens integer NOT NULL,
  counts integer[] NOT NULL,
  PRIMARY KEY(word, listing) INCLUDE (weighted, length, tokens, counts));
CREATE INDEX listing_words_by_listing ON listing_words(listing);
CREATE TABLE profile_words(
  word text COLLATE "C" NOT NULL,
  profile bigint NOT NULL REFERENCES profiles(id) ON DELETE CASCADE,
  weighted double precision NOT NULL,
  tokens integer NOT NULL,
  counts integer[] NOT NULL,
  PRIMARY KEY(word, profile) INCLUDE (weighted, tokens, counts));
CREATE INDEX profile_words_by_profile ON profile_words(profile);
"""


def upgrade() -> None:
    # The rows were filled here from the stored documents while PostgreSQL answered searches itself; 0006 drops
    # them (each replica reads from a local copy), so a database passing through is not filled in vain.
    op.execute(UPGRADE)


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS profile_words")
    op.execute("DROP TABLE IF EXISTS listing_words")
    op.execute("ALTER TABLE profiles DROP COLUMN IF EXISTS text_tokens")
    op.execute("ALTER TABLE listings DROP COLUMN IF EXISTS text_length, DROP COLUMN IF EXISTS text_tokens")
