"""Everything the service keeps, in PostgreSQL 15 (issue 13): stores answering as the SQLite ones do.

* :mod:`.store`: :class:`~.store.PostgresCatalogueStore`, the :class:`~precon.service.store.CatalogueStore`
  operations over a psycopg connection pool, made of :mod:`.catalogue_base` (pool, transactions, generation,
  ``NOTIFY``), :mod:`.writes`, :mod:`.reads`, :mod:`.text_search` (words, ``tsvector``/``tsquery``) and
  :mod:`.relevance` (the SQLite store's BM25 in SQL); several processes (replicas) may share one database.
* :mod:`.accounts`: keys, products and grants (:class:`~.accounts.PostgresAccountStore`).
* :mod:`.webhooks`: subscriptions, events, the delivery outbox and attempts, claimed ``FOR UPDATE SKIP LOCKED``
  with a lease, and ``Idempotency-Key`` answers (:class:`~.webhooks.PostgresWebhookStore`).
* :mod:`.change_journal`: each catalogue write's changes, recorded in its own transaction and turned into webhook
  events once after the commit, or by any replica's sweep when the writer died first.
* :mod:`.pools`: the connection pools, opened alike.
* :mod:`.sql`: filter expressions as SQL with bound parameters (the SQLite store's compilers, ``%s`` placeholders).
* :mod:`.migrations`: the schema, made and upgraded by Alembic from Python (``upgrade(conninfo, schema=...)``);
  replicas starting together migrate one after the other (an advisory lock).
* :mod:`.catalogues`: the service's two catalogues in one database, the live one in schema ``public`` and the
  sandbox in schema ``sandbox``, filled with the defaults on first use (once, whichever replica comes first).

What equals what, and how it is checked (``tests/test_pg_*.py``, on a throw-away cluster, see
``tests/pg_support.py``): every read answers as the SQLite store's SQL engine does over the same catalogue, the
stored documents byte for byte (``json``, key order kept); text search matches the same records, ranked by the
same BM25 scores (``tests/test_pg_text_rank.py``); the service's API test modules run on both stores.

Caches kept in a process (facet labels, the typo vocabulary, attribute names, unindexed-filter results) are keyed
by the catalogue's generation, read from the database with every question: a write of any replica
is seen by the next question of every other one (no staleness). Writes also ``NOTIFY precon_catalogue`` with
``"<schema> <generation>"`` after their commit, for what would keep a copy in memory.
"""
