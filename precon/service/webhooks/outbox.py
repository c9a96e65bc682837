"""The webhook store a service sends from, whichever holds it."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

from precon.service.webhooks.store import WebhookStore

if TYPE_CHECKING:
    from precon.service.webhooks.postgres import PostgresWebhookStore

Outbox: TypeAlias = "WebhookStore | PostgresWebhookStore"
"""A webhook store: the SQLite file's or PostgreSQL's, which answer alike (``shared``: whether replicas on other
machines use it too)."""
