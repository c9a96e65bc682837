"""(ours) A served SQLite catalogue's indexes moved to each new generation as soon as it is written, not on the
first request after it, as a search engine refreshes its readers after a write.

Writes come from other processes (``precon catalogue import``, ``simulate``, ``mirror``) and from this one. A
:class:`Refresher` thread looks at the catalogue's generation every :data:`REFRESH_S` (a ``stat`` of the signal file
every write replaces: see :meth:`~precon.service.stores.sqlite.catalogue.SQLiteCatalogueBase.generation`) and, when it
moved, patches the indexes this process already holds (the column index, the typo index and labels that come with
it, the floor plans' index): a request arriving after that finds them ready. What no request has asked for yet is
left to the first that does, and so are a write of more listings than a patch takes (an import of thousands, batch
after batch: built whole once, when asked) and the market's columns and unit ledger: their patch is a few listings'
columns beside the held ones (:mod:`precon.service.stores.market_layers`), a small part of the ``market_stats``
request that makes it, and made here it would take the processor from the requests that follow a write.
"""

from __future__ import annotations

import logging
import threading

from precon.service.stores.sqlite.store import SQLiteStore

log = logging.getLogger("precon.service")

REFRESH_S = 0.02
"""How often the generation is looked at (a ``stat``)."""


class Refresher:
    """``start()``: a thread keeping ``store``'s held indexes at its newest generation; ``stop()`` ends it."""

    def __init__(self, store: SQLiteStore, interval: float = REFRESH_S) -> None:
        self.store = store
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="precon-refresher", daemon=True)

    def start(self) -> Refresher:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        seen = self.store.generation()
        while not self._stop.wait(self.interval):
            try:
                generation = self.store.generation()
                if generation != seen:
                    seen = generation  # a refresh that fails is not tried again: the next request builds
                    self.store.refresh()  # a write landing meanwhile is refreshed on the next look
            except Exception:
                log.exception("refreshing the indexes of %s failed", self.store.path)
