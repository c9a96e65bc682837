"""The catalogue in PostgreSQL 15 (issue 13): a store answering as :class:`~precon.service.store.SQLiteStore` does.

The schema is made and upgraded by the Alembic migrations in :mod:`precon.service.postgres.migrations`; the
store is :class:`precon.service.postgres.store.PostgresCatalogueStore`.
"""
