"""Everything the service keeps, in PostgreSQL 15 (issue 13), and each replica's local copies of it (issue 20).

* :mod:`.store`: :class:`~.store.PostgresCatalogueStore`, where every catalogue write is made, over a psycopg
  connection pool: :mod:`.catalogue_base` (pool, transactions, generation, ``NOTIFY``, the journal of webhook
  events), :mod:`.writes` (upserts, deletes, views; each write logs the keys it changed under the generation it
  raised, in ``catalogue_log``, and what it changed in each listing, in ``listing_history``) and :mod:`.documents`
  (records by key, snapshots, log batches with their history). PostgreSQL answers no search.
* :mod:`.replica`: a replica's local SQLite copy of each catalogue, built from a snapshot and kept current from the
  log (``LISTEN``/``NOTIFY`` and a poll), from which every question is answered with the single node's code.
* :mod:`.accounts`: keys, products and grants (:class:`~.accounts.PostgresAccountStore`), a known key's grants kept
  for half a second.
* :mod:`.webhooks`: subscriptions, events, the delivery outbox and attempts, claimed ``FOR UPDATE SKIP LOCKED``
  with a lease, and ``Idempotency-Key`` answers (:class:`~.webhooks.PostgresWebhookStore`).
* :mod:`.catalogue_base` records each catalogue write's changes in a journal, in its own transaction, to be turned
  into webhook events once after the commit, or by any replica's sweep when the writer died first
  (:mod:`precon.service.webhooks.journal`).
* :mod:`.pools`: the connection pools, opened alike.
* :mod:`.migrations`: the schema, made and upgraded by Alembic from Python (``upgrade(conninfo, schema=...)``);
  replicas starting together migrate one after the other (an advisory lock).
* :mod:`.catalogues`: the service's two catalogues in one database, the live one in schema ``public`` and the
  sandbox in schema ``sandbox``, filled with the defaults on first use (once, whichever replica comes first).

How it is checked (``tests/test_pg_*.py``, on a throw-away cluster, see ``tests/pg_support.py``): the service's
API test modules run on a replica (``test_pg_suite_*``); a replica's answers equal a single node's over the same
catalogue (``test_pg_service.py``); copies hold PostgreSQL's documents byte for byte, resume where a killed replica
stopped, end identical after concurrent writers, and rebuild when the log no longer reaches back to them
(``test_pg_replica_copies.py``).
"""
