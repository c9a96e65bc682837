"""The errors the client raises, by their public name: ``from precon.errors import NotFound``.

Their home is :mod:`precon.client.errors`, with the client that raises them; this module names the same objects
for whoever imports them as README.md and docs/ say."""

from __future__ import annotations

from precon.client.errors import (
    NO_DATA_PRODUCT_MESSAGE,
    APIStatusError,
    BadRequest,
    Forbidden,
    NoDataProduct,
    NotFound,
    PreconError,
    RateLimited,
    ServerError,
    Timeout,
    TransportError,
    error_for_response,
    error_for_transport,
)

__all__ = [
    "NO_DATA_PRODUCT_MESSAGE",
    "APIStatusError",
    "BadRequest",
    "Forbidden",
    "NoDataProduct",
    "NotFound",
    "PreconError",
    "RateLimited",
    "ServerError",
    "Timeout",
    "TransportError",
    "error_for_response",
    "error_for_transport",
]
