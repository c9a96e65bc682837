"""The dashboard's one way to the listings API: the client (kept for the app's life) and the data it returns
(kept a minute per question), and the readable message a failure becomes.

Every page calls :func:`call`; a rerun that asks nothing new is answered from Streamlit's cache without an API
call, and what does reach the client goes through its HTTP cache too.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import streamlit as st

from precon import filters
from precon.client import Client
from precon.client.errors import (
    BadRequest,
    Forbidden,
    NoDataProduct,
    NotFound,
    PreconError,
    RateLimited,
    ServerError,
    Timeout,
    TransportError,
)

if TYPE_CHECKING:
    from precon.service.embedded import EmbeddedService


class ServiceUnavailable(TransportError):
    """The embedded service could not start (its data directory unreadable, say)."""


DATA_TTL_S = 60
DASHBOARD_RETRIES = 2
"""Fewer retries than a script's: someone is waiting at the page."""
SETTING_NAMES = ("PRECON_API_URL", "PRECON_API_KEY", "PRECON_PRODUCT_ID")


@dataclass(frozen=True)
class Connection:
    kind: Literal["embedded", "remote"]
    url: str
    product_id: str | None
    client: Client
    fresh_client: Client
    """The same connection without the HTTP cache: for calls with an effect, or that must see the latest."""
    service: EmbeddedService | None = None
    """The embedded service (None for a remote deployment): stopped by :meth:`close`."""

    @property
    def data_dir(self) -> Path | None:
        """The embedded service's data directory (where the dashboard keeps its own file too); None for a remote one."""
        return None if self.service is None else self.service.data_dir

    @property
    def identity(self) -> str:
        """What keeps one deployment's cached answers apart from another's."""
        return f"{self.kind}:{self.url}:{self.product_id}"

    def close(self) -> None:
        """Closes the clients and stops the embedded service: clearing the cache must not leave its threads."""
        self.fresh_client.close()
        if self.service is not None:
            self.service.stop()
        else:
            self.client.close()


def setting(name: str) -> str | None:
    """A setting from the environment, else from Streamlit's secrets (by its name or in lower case); None: unset."""
    value = os.environ.get(name)
    if value:
        return value
    try:
        secret = st.secrets.get(name) or st.secrets.get(name.lower())
    except (FileNotFoundError, KeyError, AttributeError):
        return None
    except Exception:
        return None
    return str(secret) if secret else None


@st.cache_resource(show_spinner="Starting the listings service…", on_release=Connection.close)
def connection() -> Connection:
    """The remote deployment named by ``PRECON_API_URL`` (environment or secrets), or the embedded service."""
    url = setting("PRECON_API_URL")
    if url:
        key, product = setting("PRECON_API_KEY") or "", setting("PRECON_PRODUCT_ID")
        client = Client(url, key, product, max_retries=DASHBOARD_RETRIES)
        fresh = Client(url, key, product, max_retries=DASHBOARD_RETRIES, cache=False)
        return Connection("remote", client.api_url, client.product_id, client, fresh)
    from precon.service import embedded

    try:
        service = embedded.start()
    except Exception as error:
        raise ServiceUnavailable(f"the embedded listings service could not start ({error})") from error
    fresh = Client(service.url, service.api_key, service.product_id, cache=False)
    return Connection("embedded", service.url, service.product_id, service.client, fresh, service)


def scope() -> tuple[str, str]:
    """The API version and province chosen in the sidebar."""
    return st.session_state.get("version", "v1"), st.session_state.get("province", "all")


def _plain(value: Any) -> Any:
    if isinstance(value, filters.And | filters.Or | filters.Not | filters.Match | filters.Range | filters.Compare):
        return filters.to_query(value)
    if isinstance(value, tuple | set | frozenset):
        return list(value)
    return value


@st.cache_data(ttl=DATA_TTL_S, show_spinner=False, max_entries=1000)
def _cached_call(identity: str, version: str, province: str, operation: str, arguments: str) -> Any:
    client = connection().client
    return getattr(client, operation)(**json.loads(arguments), version=version, province=province)


def call(operation: str, /, **arguments: Any) -> Any:
    """The client's ``operation`` with these arguments, in the sidebar's version and province, cached."""
    version, province = scope()
    plain = {name: _plain(value) for name, value in arguments.items() if value is not None}
    return _cached_call(connection().identity, version, province, operation, json.dumps(plain, sort_keys=True))


def call_in(where: tuple[str, str], operation: str, /, **arguments: Any) -> Any:
    """As :func:`call`, in this version and province instead of the sidebar's (a saved search's own, say)."""
    plain = {name: _plain(value) for name, value in arguments.items() if value is not None}
    return _cached_call(connection().identity, *where, operation, json.dumps(plain, sort_keys=True))


def call_uncached(operation: str, /, **arguments: Any) -> Any:
    """For calls with an effect (fetching a listing counts a view) or that must see the latest state: neither
    Streamlit's cache nor the HTTP cache answers them."""
    version, province = scope()
    return getattr(connection().fresh_client, operation)(**arguments, version=version, province=province)


def advice(error: PreconError) -> tuple[str, str]:
    """A title and what to do about an error, in the user's terms."""
    if isinstance(error, NoDataProduct):
        return "No data product", "Set PRECON_PRODUCT_ID to a data product of this API key, or ask your data provider."
    if isinstance(error, Forbidden):
        return "Access refused", (
            "The API key is missing or unknown, or its product does not grant this version and province. "
            "Pick another version or province in the sidebar, or check PRECON_API_KEY."
        )
    if isinstance(error, NotFound):
        return "Not found", "It may have been removed, or it is outside the province chosen in the sidebar."
    if isinstance(error, RateLimited):
        wait = f" about {error.retry_after:.0f} s" if error.retry_after else " a little"
        return "Too many requests", f"The service asks to slow down: wait{wait} and try again."
    if isinstance(error, BadRequest):
        return "The service could not use this request", "Change the search or filters and try again."
    if isinstance(error, ServerError):
        return "The listings service failed", "Try again in a moment; if it keeps failing, quote the request id."
    if isinstance(error, Timeout):
        return "The listings service is too slow to answer", "Try again, or narrow the search."
    if isinstance(error, TransportError):
        return "The listings service cannot be reached", (
            f"Check that it is running and that PRECON_API_URL is right ({connection().url})."
        )
    return "Something went wrong", "Try again; if it keeps failing, quote the request id."


def show_error(error: PreconError) -> None:
    title, what_to_do = advice(error)
    lines = [f"**{title}.** {error.message}", what_to_do]
    if error.request_id:
        lines.append(f"Request id: `{error.request_id}`")
    st.error("\n\n".join(lines), icon="⚠️")


@contextmanager
def guarded() -> Iterator[None]:
    """Runs a block of API calls; a failure shows its message and stops the page there."""
    try:
        yield
    except PreconError as error:
        show_error(error)
        st.stop()


class CachedBackend:
    """The listing calls of :mod:`precon.dashboard.listing_search` and :mod:`precon.dashboard.ordering`, answered
    through :func:`call`."""

    def search_listings(self, search: str | None = None, **arguments: Any) -> Any:
        return call("search_listings", search=search, **arguments)

    def multiple_listings(self, ids: Any, **arguments: Any) -> Any:
        return call("multiple_listings", ids=list(ids), **arguments)


backend = CachedBackend()
UNIT_SUPPORT_TTL_S = 600


@st.cache_data(ttl=UNIT_SUPPORT_TTL_S, show_spinner=False)
def _unit_filter_supported(identity: str, version: str, province: str) -> bool:
    from precon.dashboard.listing_search import unit_filter_supported

    return unit_filter_supported(backend)


def unit_filter_supported() -> bool:
    """Whether the deployment filters floor plans itself (``unitFilter``); else the dashboard does (exactly)."""
    version, province = scope()
    return _unit_filter_supported(connection().identity, version, province)


@st.cache_resource
def _lacking() -> set[str]:
    return set()


def lacks(operation: str) -> None:
    """Remembers, for this deployment, that it has no such operation (it answered 404 to the operation's path)."""
    _lacking().add(f"{connection().identity}:{operation}")


def offers(operation: str) -> bool:
    """False once :func:`lacks` recorded that this deployment has no such operation."""
    return f"{connection().identity}:{operation}" not in _lacking()
