"""Precon Explorer: Canada's pre-construction listings, served and explored.

``from precon import Client`` is the typed client of the listings API; ``precon.errors`` its exceptions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from precon.client import Client

__all__ = ["Client"]


def __getattr__(name: str) -> Any:
    # Imported on first use, so the service and the command line don't pay for the client's imports.
    if name == "Client":
        from precon.client import Client

        return Client
    raise AttributeError(f"module 'precon' has no attribute {name!r}")
