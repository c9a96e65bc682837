"""Turning catalogue changes into webhook events for the subscribers allowed to see them."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from precon.client.models import PROVINCES
from precon.service.accounts.model import Accounts
from precon.service.stores.records import province_of
from precon.service.stores.sqlite.store import SQLiteStore
from precon.service.stores.types import CatalogueChange
from precon.service.webhooks.model import Event, Outbox, Subscription
from precon.service.webhooks.selection import MATCHED, Write, selected_events

if TYPE_CHECKING:
    from precon.service.stores.postgres.store import PostgresCatalogueStore

T = TypeVar("T")
LIVE_VERSIONS = {"v1", "v1-lite"}
LISTING_PREFIX = "Listings/"


@dataclass
class CatalogueNotifier:
    """Listens to a store; each listing or profile written or removed becomes an event to its subscribers.

    ``env`` is ``live`` for the catalogue and ``sandbox`` for the sandbox. A live event goes only to keys that may
    read the record through one of their grants: a listing's province, or one of a profile's provinces (the
    provinces of the listings naming it; a profile in none is read under ``all`` only). A live profile reaches
    each key with only the listings of the provinces that key is granted. Sandbox events go to any key (any key
    may read the sandbox). A deletion carries only the record's id and path, to every subscriber of the event:
    what the deleted record was in can no longer be read.

    The stores may be SQLite's or PostgreSQL's, in any mix (they answer alike). The subscriptions and grants are
    read once per write, however many records it changed (with PostgreSQL each read is a round trip).
    """

    webhooks: Outbox
    accounts: Accounts
    store: SQLiteStore | PostgresCatalogueStore
    env: str
    first_delay: float = 0.0
    _batch: Any = field(default_factory=threading.local, repr=False, compare=False)
    """``reads``: what this thread's current write has read of the subscriptions and grants, by question."""

    def attach(self) -> CatalogueNotifier:
        """Listens to the store. A PostgreSQL store with the outbox in its own database records each write's
        changes in its journal instead, in the write's transaction, and this notifier's events are published from
        there: none is lost if the process dies after the commit (see :mod:`precon.service.webhooks.journal`).
        Otherwise it hears of each write after the commit."""
        if not self._journaled():
            self.store.listeners.append(self)
        return self

    def _journaled(self) -> bool:
        """Whether the store's journal takes this notifier's changes. Only a shared outbox (PostgreSQL's) may
        take them, and only then are PostgreSQL's modules loaded: a service on SQLite files never needs them."""
        if not self.webhooks.shared:
            return False
        from precon.service.webhooks.journal import journal_changes

        return journal_changes(self.store, self, self.webhooks)

    def __call__(self, changes: Sequence[CatalogueChange]) -> None:
        events = [event for events in self.events_of(changes) for event in events]
        if events:
            self.webhooks.publish(events, self.first_delay)

    def events_of(self, changes: Sequence[CatalogueChange]) -> list[list[Event]]:
        """Each change's events, in order (none for a change nobody subscribed to and may read): the
        subscriptions and grants are read once for all of them."""
        self._batch.reads = {}
        try:
            return [self._events(change) for change in changes]
        finally:
            self._batch.reads = None

    def _read(self, question: tuple[Any, ...], read: Callable[[], T]) -> T:
        """``read()``, once per write (outside one, every time)."""
        reads: dict[tuple[Any, ...], Any] | None = getattr(self._batch, "reads", None)
        if reads is None:
            return read()
        if question not in reads:
            reads[question] = read()
        answer: T = reads[question]
        return answer

    def _chosen(self, event_type: str) -> list[Subscription]:
        """The subscriptions to ``event_type`` in this notifier's env."""
        return list(
            self._read(("event", event_type), lambda: self.webhooks.subscriptions(event=event_type, env=self.env))
        )

    def _allowing(self, province: str | None) -> set[int]:
        """The keys granted a live version in ``province`` (any province when None)."""
        return set(self._read(("province", province), lambda: self.accounts.key_ids_allowing(LIVE_VERSIONS, province)))

    def _subscribers(self, event_type: str, province: str | None) -> list[Subscription]:
        chosen = self._chosen(event_type)
        if not chosen or self.env == "sandbox":
            return chosen
        allowed = self._allowing(province)
        return [s for s in chosen if s.key_id in allowed]

    def wants_before(self) -> bool:
        """Whether a write should keep the documents it replaces for this notifier: only while a subscription in
        its env has a filter (see :mod:`precon.service.webhooks.selection`)."""
        return self.webhooks.filtering(self.env)

    def _events(self, change: CatalogueChange) -> list[Event]:
        event_type = f"{change.kind}.{change.action}"
        if change.kind == "profile":
            return self._profile_events(change, event_type)
        if not self._chosen(event_type) and not self._chosen(MATCHED):
            return []  # nobody listens: the listing is not read back
        record = self.store.get_listings([change.key], None).get(change.key)
        province = province_of(record.get("state")) if record else None
        subscribers = self._subscribers(event_type, province if change.action != "deleted" else None)
        matched = self._subscribers(MATCHED, province) if record is not None else []
        if not subscribers and not matched:
            return []
        listing = record if record is not None else {"listingId": change.key, "path": f"Listings/{change.key}"}
        data: dict[str, Any] = {"listing": {**listing, "objectID": change.key}}
        if change.action == "updated" and change.entries is not None:
            data["changes"] = change.entries
        plain = [s for s in subscribers if not s.selection]
        events = [Event(event_type, self.env, data, plain)] if plain else []
        selective = [s for s in subscribers if s.selection] + matched
        if selective:
            write = Write.of(change, record)
            if record is None and write.before is not None and self.env != "sandbox":  # where it stood
                allowed = self._allowing(province_of(write.before.get("state")))
                selective = [s for s in selective if s.key_id in allowed]
            events += selected_events(write, event_type, self.env, data, selective)
        return events

    # -- profiles --------------------------------------------------------------------------------------------

    def _profile_events(self, change: CatalogueChange, event_type: str) -> list[Event]:
        collection, _, profile_id = change.key.partition("/")
        chosen = self._chosen(event_type)
        if not chosen:
            return []
        record = self.store.get_profiles([change.key]).get(change.key)
        if record is None or change.action == "deleted":
            stub = {"id": profile_id, "path": change.key}
            return [Event(event_type, self.env, {"collection": collection, "profile": stub}, self._any_reader(chosen))]
        if self.env == "sandbox":
            return [Event(event_type, self.env, {"collection": collection, "profile": record}, chosen)]
        readers = self.profile_readers(profile_id, collection)
        subscribers = [s for s in chosen if s.key_id in readers]
        if not subscribers:
            return []
        granted = self.granted_provinces({s.key_id for s in subscribers})
        listed = self._listing_provinces(record.get("listings"))
        by_view: dict[tuple[Any, ...], list[Subscription]] = {}
        for subscription in subscribers:
            view = tuple(visible_listings(record.get("listings"), listed, granted[subscription.key_id]))
            by_view.setdefault(view, []).append(subscription)
        events = []
        for view, group in by_view.items():
            profile = {**record, "listings": list(view)} if isinstance(record.get("listings"), list) else record
            events.append(Event(event_type, self.env, {"collection": collection, "profile": profile}, group))
        return events

    def _any_reader(self, chosen: list[Subscription]) -> list[Subscription]:
        if self.env == "sandbox":
            return chosen
        allowed = self._allowing(None)
        return [s for s in chosen if s.key_id in allowed]

    def profile_provinces(self, profile_id: str, collection: str) -> set[str]:
        """The provinces a profile is read in: those of the listings naming it, as the profile operation sees."""
        return {p for p in PROVINCES if self.store.find_profile(profile_id, collection, p) is not None}

    def profile_readers(self, profile_id: str, collection: str) -> set[int]:
        """The keys that may read the profile in a live version: in one of its provinces, or in ``all``."""
        readers = self._allowing("all")
        for province in self.profile_provinces(profile_id, collection):
            readers |= self._allowing(province)
        return readers

    def granted_provinces(self, key_ids: set[int]) -> dict[int, frozenset[str]]:
        """The provinces each key may read in a live version."""
        granted: dict[int, set[str]] = {key_id: set() for key_id in key_ids}
        for province in PROVINCES:
            for key_id in self._allowing(province) & key_ids:
                granted[key_id].add(province)
        return {key_id: frozenset(provinces) for key_id, provinces in granted.items()}

    def _listing_provinces(self, paths: Any) -> dict[str, str | None]:
        """The province of each listing a profile names, by path (None: not found, or in no province)."""
        if not isinstance(paths, list):
            return {}
        ids = [p[len(LISTING_PREFIX) :] for p in paths if isinstance(p, str) and p.startswith(LISTING_PREFIX)]
        found = self.store.get_listings(ids, None)
        return {LISTING_PREFIX + i: province_of(found[i].get("state")) if i in found else None for i in ids}


def visible_listings(paths: Any, provinces: dict[str, str | None], granted: Iterable[str]) -> list[Any]:
    """The listing paths of a profile that a key granted ``granted`` may read: those in a granted province."""
    if not isinstance(paths, list):
        return []
    allowed = set(granted)
    return [p for p in paths if isinstance(p, str) and provinces.get(p) in allowed]
