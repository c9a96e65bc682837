"""The typed client of the listings API and what it is made of: ``from precon.client import Client``.

- :mod:`.client`: :class:`Client`, one method per operation; :mod:`.webhooks` and :mod:`.metrics` its webhook
  operations and the service's own pages (``/healthz``, ``/metrics``, read by :mod:`.metrics_view`);
- :mod:`.models` and :mod:`.market_models`: the records it answers with; :mod:`.errors`: what it raises
  (``precon.models`` and ``precon.errors`` name both publicly);
- :mod:`.cache` (the HTTP cache), :mod:`.retries` (the retry policy), :mod:`.settings` (``PRECON_API_*``),
  :mod:`.query_values` (how a parameter is written into a query string).

Nothing here imports the service or the command line. The names below
are imported on first use, so that the service, which reads :mod:`.models`, doesn't pay for the client's imports.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from precon.client.client import USER_AGENT, Client
    from precon.client.query_values import Filter
    from precon.client.settings import PRODUCTION_URL, ClientSettings

_HOMES = {
    "Client": "precon.client.client",
    "USER_AGENT": "precon.client.client",
    "ClientSettings": "precon.client.settings",
    "PRODUCTION_URL": "precon.client.settings",
    "Filter": "precon.client.query_values",
}

__all__ = ["PRODUCTION_URL", "USER_AGENT", "Client", "ClientSettings", "Filter"]


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(import_module(_HOMES[name]), name)
    raise AttributeError(f"module 'precon.client' has no attribute {name!r}")
