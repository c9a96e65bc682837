"""Turning catalogue changes into webhook events for the subscribers allowed to see them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from precon.service.accounts import AccountStore
from precon.service.store import CatalogueChange, SQLiteStore, province_of
from precon.service.webhooks import Event, Subscription, WebhookStore

LIVE_VERSIONS = {"v1", "v1-lite"}


@dataclass
class CatalogueNotifier:
    """Listens to a store; each listing or profile written or removed becomes an event to its subscribers.

    ``env`` is ``live`` for the catalogue and ``sandbox`` for the sandbox. A live listing event goes only to keys
    granted the listing's province; sandbox events go to any key (any key may read the sandbox).
    """

    webhooks: WebhookStore
    accounts: AccountStore
    store: SQLiteStore
    env: str
    first_delay: float = 0.0

    def attach(self) -> CatalogueNotifier:
        self.store.listeners.append(self)
        return self

    def __call__(self, changes: Sequence[CatalogueChange]) -> None:
        events = [event for change in changes if (event := self._event(change)) is not None]
        if events:
            self.webhooks.publish(events, self.first_delay)

    def _subscribers(self, event_type: str, province: str | None) -> list[Subscription]:
        chosen = self.webhooks.subscriptions(event=event_type, env=self.env)
        if not chosen or self.env == "sandbox":
            return chosen
        allowed = self.accounts.key_ids_allowing(LIVE_VERSIONS, province)
        return [s for s in chosen if s.key_id in allowed]

    def _event(self, change: CatalogueChange) -> Event | None:
        event_type = f"{change.kind}.{change.action}"
        data: dict[str, Any]
        if change.kind == "listing":
            record = self.store.get_listings([change.key], None).get(change.key)
            province = province_of(record.get("state")) if record else None
            subscribers = self._subscribers(event_type, province if change.action != "deleted" else None)
            listing = record if record is not None else {"listingId": change.key, "path": f"Listings/{change.key}"}
            data = {"listing": {**listing, "objectID": change.key}}
        else:
            collection, _, profile_id = change.key.partition("/")
            subscribers = self._subscribers(event_type, None)
            record = self.store.get_profiles([change.key]).get(change.key)
            data = {"collection": collection, "profile": record or {"id": profile_id, "path": change.key}}
        if not subscribers:
            return None
        return Event(event_type, self.env, data, subscribers)
