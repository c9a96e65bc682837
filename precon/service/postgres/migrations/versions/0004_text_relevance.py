"""Text relevance: each record's words with their counts, so that PostgreSQL scores a search as SQLite does.

``listing_words``/``profile_words``: per record and word, its field-weighted count (``weighted``: the sum of the
searchable fields' weights over its instances, ``SEARCHABLE_LISTING_WEIGHTS``/``SEARCHABLE_PROFILE_WEIGHTS``) and
its number of instances in each searchable field (``counts``, in the fields' order), keyed by the word
(``COLLATE "C"``: code-point order, so a prefix's words are one range of the key). Beside each record, the
field-weighted length of its text (``listings.text_length``) and its number of words (``text_tokens``): the
document lengths of the two measures (:mod:`precon.service.postgres.relevance`). A record's words rows repeat them
(``length``, ``tokens``), and the words' key includes every column: a search without filters ranks from that
index alone (in some fields only too), and reads the records' rows only for its best matches (their order among
equal scores); with filters, what a listing search orders by comes from ``listings_for_ranking`` (an index-only
scan), not from the wide rows.

The rows of a catalogue already stored are made here from its documents, with the store's own word folding.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23
"""

from __future__ import annotations

from typing import Any

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


def _fill(connection: Any, table: str) -> None:
    """The words rows and lengths of the records already in ``table`` (``listings`` or ``profiles``)."""
    import orjson

    from precon.service.postgres.text_search import _field_words, word_counts, words_copy_lines
    from precon.service.schema import (
        SEARCHABLE_LISTING_FIELDS,
        SEARCHABLE_LISTING_WEIGHTS,
        SEARCHABLE_PROFILE_FIELDS,
        SEARCHABLE_PROFILE_WEIGHTS,
    )

    if table == "listings":
        words, fields, weights = "listing_words", SEARCHABLE_LISTING_FIELDS, SEARCHABLE_LISTING_WEIGHTS
    else:
        words, fields, weights = "profile_words", SEARCHABLE_PROFILE_FIELDS, SEARCHABLE_PROFILE_WEIGHTS
    lengths: list[tuple[float, int, int]] = []
    with connection.cursor() as cursor, connection.cursor() as writer:
        cursor.execute(f"SELECT id, doc::text FROM {table}")  # table: a fixed name
        with writer.copy(f"COPY {words} FROM STDIN") as copy:
            for rowid, text in cursor:
                counts = word_counts(_field_words(orjson.loads(text), fields), weights)
                copy.write(words_copy_lines(counts, rowid, length=table == "listings"))
                lengths.append((counts.weighted_length, counts.tokens, rowid))
        if table == "listings":
            writer.executemany("UPDATE listings SET text_length = %s, text_tokens = %s WHERE id = %s", lengths)
        else:
            writer.executemany(
                "UPDATE profiles SET text_tokens = %s WHERE id = %s", [(tokens, rowid) for _, tokens, rowid in lengths]
            )


def upgrade() -> None:
    op.execute(UPGRADE)
    connection = op.get_bind().connection.driver_connection
    for table in ("listings", "profiles"):
        _fill(connection, table)


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS profile_words")
    op.execute("DROP TABLE IF EXISTS listing_words")
    op.execute("ALTER TABLE profiles DROP COLUMN IF EXISTS text_tokens")
    op.execute("ALTER TABLE listings DROP COLUMN IF EXISTS text_length, DROP COLUMN IF EXISTS text_tokens")
