"""Where a webhook may be delivered: public https addresses only, checked when subscribed and again on connect.

A subscription names a URL; the name is resolved when it is created and every time a delivery connects, and
the connection is made to an address that was just checked, so a DNS answer that changes after the first check
cannot send a delivery to a loopback, private, link-local or cloud-metadata address. A service started for
local development may allow ``http`` and loopback receivers (and nothing else that is not public).

An IPv6 address that carries an IPv4 address inside it (IPv4-mapped, IPv4-compatible, 6to4, Teredo, NAT64) is
judged by the IPv4 address too: ``2002:7f00:1::1`` is loopback in disguise. Names are resolved in a small pool
of threads under a deadline, never on the event loop: a slow DNS answer holds up only the call that asked.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
import unicodedata
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import SplitResult, urlsplit, urlunsplit

import httpcore

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
AddressInfo = list[tuple[Any, ...]]
MAX_URL_LENGTH = 2048
RESOLVE_TIMEOUT_S = 3.0
"""The longest a host name may take to resolve, when subscribing and when a delivery connects."""
RESOLVER_THREADS = 16
"""Look-ups at once; more wait their turn (within their deadline), so hung look-ups cannot pile up threads."""
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a) for a in ("169.254.169.254", "169.254.170.2", "100.100.100.200", "fd00:ec2::254")
)
"""Cloud instance-metadata endpoints (AWS, ECS, Alibaba, AWS over IPv6); also covered by the ranges below."""
CARRIER_NAT = ipaddress.ip_network("100.64.0.0/10")
BROADCAST = ipaddress.IPv4Address("255.255.255.255")
IPV4_MAPPED = ipaddress.ip_network("::ffff:0:0/96")
IPV4_TRANSLATED = ipaddress.ip_network("::ffff:0:0:0/96")
IPV4_COMPATIBLE = ipaddress.ip_network("::/96")
NAT64_WELL_KNOWN = ipaddress.ip_network("64:ff9b::/96")
NAT64_LOCAL_USE = ipaddress.ip_network("64:ff9b:1::/48")
NON_PUBLIC_IPV6 = tuple(
    ipaddress.ip_network(n)
    for n in (
        "100::/64",  # discard-only
        "2001:db8::/32",  # documentation
        "3fff::/20",  # documentation (RFC 9637)
        "2001:2::/48",  # benchmarking
        "2001:10::/28",  # ORCHID
        "2001:20::/28",  # ORCHIDv2
        "fc00::/7",  # unique local
        "fec0::/10",  # site-local (deprecated, but still not public)
    )
)
"""IPv6 ranges refused by name, whatever this Python's ``ipaddress`` thinks of them."""
_LABEL = re.compile(r"^(?!-)[A-Za-z0-9_-]{1,63}(?<!-)$")
_resolver = ThreadPoolExecutor(max_workers=RESOLVER_THREADS, thread_name_prefix="webhook-resolve")


class TargetRefused(ValueError):
    """A target URL or address deliveries may not go to; the message says why."""


def embedded_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """Every IPv4 address ``address`` carries: mapped, translated, compatible, 6to4, Teredo, NAT64."""
    found: list[ipaddress.IPv4Address] = []
    low32 = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address in IPV4_MAPPED or address in IPV4_TRANSLATED:
        found.append(low32)
    if address in IPV4_COMPATIBLE and int(address) > 1:  # :: and ::1 are themselves, not IPv4 addresses
        found.append(low32)
    if address in NAT64_WELL_KNOWN or address in NAT64_LOCAL_USE:
        found.append(low32)
    if address.sixtofour is not None:
        found.append(address.sixtofour)
    if address.teredo is not None:
        found.extend(address.teredo)  # (server, client); the client is already un-obfuscated
    return list(dict.fromkeys(found))


def _unsafe_character(text: str) -> str | None:
    """A description of the first character a target URL may not hold, or None."""
    for index, char in enumerate(text):
        category = unicodedata.category(char)
        if char.isspace() or category in ("Cc", "Cf", "Cs", "Co", "Cn", "Zs", "Zl", "Zp"):
            name = unicodedata.name(char, "a control character")
            return f"U+{ord(char):04X} ({name.lower()}) at position {index + 1}"
    return None


def _ascii_host(host: str) -> str:
    """The host as DNS sends it (IDNA A-labels); :class:`TargetRefused` if it cannot be one."""
    try:
        ipaddress.ip_address(host)
        return host
    except ValueError:
        pass
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError as error:
            raise TargetRefused(f"the host {host!r} is not a valid internationalised domain name ({error})") from None
    labels = host[:-1].split(".") if host.endswith(".") else host.split(".")
    if len(host) > 253 or not all(_LABEL.match(label) for label in labels):
        raise TargetRefused(f"the host {host!r} is not a valid host name")
    return host.lower()


@dataclass(frozen=True)
class Target:
    """A target URL taken apart: the URL as it is stored, and where to resolve and connect."""

    url: str
    host: str
    port: int


@dataclass(frozen=True)
class TargetPolicy:
    allow_http: bool = False
    allow_loopback: bool = False
    resolve_timeout_s: float = RESOLVE_TIMEOUT_S

    # -- addresses -------------------------------------------------------------------------------------------

    def _check_ipv4(self, address: ipaddress.IPv4Address) -> None:
        if address in METADATA_ADDRESSES:
            raise TargetRefused(f"{address} is a cloud metadata address")
        if address.is_unspecified or address.is_multicast or address == BROADCAST:
            raise TargetRefused(f"{address} is not a public address")
        if address.is_loopback:
            if self.allow_loopback:
                return
            raise TargetRefused(f"{address} is a loopback address")
        if address.is_link_local:
            raise TargetRefused(f"{address} is a link-local address")
        if address.is_private or address in CARRIER_NAT:
            raise TargetRefused(f"{address} is a private address")
        if address.is_reserved or not address.is_global:
            raise TargetRefused(f"{address} is not a public address")

    def _check_ipv6(self, address: ipaddress.IPv6Address) -> None:
        if address in METADATA_ADDRESSES:
            raise TargetRefused(f"{address} is a cloud metadata address")
        if address.is_unspecified or address.is_multicast:
            raise TargetRefused(f"{address} is not a public address")
        if address.is_loopback:
            if self.allow_loopback:
                return
            raise TargetRefused(f"{address} is a loopback address")
        if address.is_link_local:
            raise TargetRefused(f"{address} is a link-local address")
        if address.is_site_local or address in ipaddress.ip_network("fc00::/7"):
            raise TargetRefused(f"{address} is a private address")
        if any(address in network for network in NON_PUBLIC_IPV6):
            raise TargetRefused(f"{address} is not a public address")
        if address.is_private or address.is_reserved or not address.is_global:
            raise TargetRefused(f"{address} is not a public address")

    def check_address(self, address: IPAddress) -> None:
        """Nothing if deliveries may connect to ``address``; :class:`TargetRefused` saying why not otherwise.

        An IPv6 address carrying IPv4 addresses is refused if any of them would be; one that is only an IPv4
        address written as IPv6 (``::ffff:a.b.c.d``) is judged as that IPv4 address alone.
        """
        if isinstance(address, ipaddress.IPv4Address):
            self._check_ipv4(address)
            return
        scope_free = ipaddress.IPv6Address(int(address))
        # Loopback allowed in development means ::1, 127.0.0.1 and ::ffff:127.0.0.1; no other wrapping of it.
        inner_policy = self if scope_free in IPV4_MAPPED else replace(self, allow_loopback=False)
        for inner in embedded_ipv4(scope_free):
            try:
                inner_policy._check_ipv4(inner)
            except TargetRefused as refused:
                raise TargetRefused(f"{address} carries {inner}: {refused}") from None
        if scope_free in IPV4_MAPPED:
            return
        self._check_ipv6(scope_free)

    # -- names -----------------------------------------------------------------------------------------------

    def _checked(self, host: str, infos: AddressInfo) -> list[IPAddress]:
        addresses: list[IPAddress] = []
        for info in infos:
            address = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
            self.check_address(address)
            if address not in addresses:
                addresses.append(address)
        if not addresses:
            raise TargetRefused(f"the host {host!r} has no address")
        return addresses

    def _too_slow(self, host: str) -> TargetRefused:
        return TargetRefused(f"the host {host!r} did not resolve within {self.resolve_timeout_s:g} s")

    def resolve(self, host: str, port: int) -> list[IPAddress]:
        """Every address ``host`` resolves to, each checked; one refused address refuses the host.

        Blocks the calling thread for at most the policy's deadline: for worker threads, never the event loop
        (which uses :meth:`resolve_async`).
        """
        future = _resolver.submit(_getaddrinfo, host, port)
        try:
            infos = future.result(timeout=self.resolve_timeout_s)
        except FutureTimeout:
            future.cancel()
            raise self._too_slow(host) from None
        except (OSError, UnicodeError) as error:
            raise TargetRefused(f"the host {host!r} does not resolve ({error})") from None
        return self._checked(host, infos)

    async def resolve_async(self, host: str, port: int) -> list[IPAddress]:
        """:meth:`resolve` for the event loop: the look-up runs in the resolver's threads, the loop goes on."""
        future: Future[AddressInfo] = _resolver.submit(_getaddrinfo, host, port)
        try:
            infos = await asyncio.wait_for(asyncio.wrap_future(future), self.resolve_timeout_s)
        except TimeoutError:
            future.cancel()
            raise self._too_slow(host) from None
        except (OSError, UnicodeError) as error:
            raise TargetRefused(f"the host {host!r} does not resolve ({error})") from None
        return self._checked(host, infos)

    # -- URLs ------------------------------------------------------------------------------------------------

    def parse_url(self, url: object) -> Target:
        """The URL checked for everything but where its host resolves to; :class:`TargetRefused` if it fails."""
        if not isinstance(url, str) or not url.strip():
            raise TargetRefused("targetUrl is required")
        if len(url) > MAX_URL_LENGTH:
            raise TargetRefused(f"targetUrl is longer than {MAX_URL_LENGTH} characters")
        unsafe = _unsafe_character(url)
        if unsafe is not None:
            raise TargetRefused(f"targetUrl may not contain spaces or control characters: {unsafe}")
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError as error:
            raise TargetRefused(f"targetUrl is not a valid URL: {error}") from None
        schemes = ("https", "http") if self.allow_http else ("https",)
        if parts.scheme not in schemes:
            raise TargetRefused(f"targetUrl must be an {' or '.join(schemes)} URL, got {parts.scheme or 'none'!r}")
        if "@" in parts.netloc:
            raise TargetRefused("targetUrl may not carry a user name or password")
        if not parts.hostname:
            raise TargetRefused("targetUrl has no host")
        host = _ascii_host(parts.hostname)
        rest = parts.path + parts.query + parts.fragment
        if not rest.isascii():
            raise TargetRefused("targetUrl's path and query must be ASCII: percent-encode other characters")
        if host != parts.hostname:
            netloc = host if parts.port is None else f"{host}:{parts.port}"
            url = urlunsplit(SplitResult(parts.scheme, netloc, parts.path, parts.query, parts.fragment))
        return Target(url, host, port or (443 if parts.scheme == "https" else 80))

    def check_url(self, url: str) -> str:
        """The URL, if deliveries may go there; :class:`TargetRefused` saying why not otherwise.

        Resolves the host in this thread (up to the deadline): call :meth:`check_url_async` on the event loop.
        """
        target = self.parse_url(url)
        self.resolve(target.host, target.port)
        return target.url

    async def check_url_async(self, url: str) -> str:
        """:meth:`check_url` for ``async`` routes: the host is resolved off the event loop, under the deadline."""
        target = self.parse_url(url)
        await self.resolve_async(target.host, target.port)
        return target.url


def _getaddrinfo(host: str, port: int) -> AddressInfo:
    return list(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))


class GuardedBackend(httpcore.NetworkBackend):
    """Connects only to addresses the policy allows, resolving the host itself at connect time."""

    def __init__(self, policy: TargetPolicy) -> None:
        self.policy = policy
        self._inner = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        try:
            addresses = self.policy.resolve(host, port)
        except TargetRefused as refused:
            raise httpcore.ConnectError(f"refused to connect: {refused}") from None
        last: Exception | None = None
        for address in addresses:
            try:
                return self._inner.connect_tcp(str(address), port, timeout, local_address, socket_options)
            except httpcore.ConnectError as error:
                last = error
        raise last or httpcore.ConnectError(f"cannot connect to {host}")

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        raise httpcore.ConnectError("deliveries never go to unix sockets")

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)
