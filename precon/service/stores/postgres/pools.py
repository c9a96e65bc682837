"""The connection pools of the PostgreSQL stores, all opened alike."""

from __future__ import annotations

from typing import Any

from psycopg_pool import ConnectionPool


def open_pool(conninfo: str, name: str, min_size: int, max_size: int, **options: Any) -> ConnectionPool[Any]:
    """An open pool of autocommit connections to ``conninfo`` (``options``: more connection arguments, such as a
    schema's ``options``). Each connection is checked as it is lent, so one the server dropped (a restart) is
    replaced rather than handed out."""
    return ConnectionPool(
        conninfo,
        min_size=min_size,
        max_size=max_size,
        kwargs={"autocommit": True, **options},
        check=ConnectionPool.check_connection,
        open=True,
        name=name,
    )
