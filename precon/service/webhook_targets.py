"""Where a webhook may be delivered: public https addresses only, checked when subscribed and again on connect.

A subscription names a URL; the name is resolved when it is created and every time a delivery connects, and
the connection is made to an address that was just checked, so a DNS answer that changes after the first check
cannot send a delivery to a loopback, private, link-local or cloud-metadata address. A service started for
local development may allow ``http`` and loopback receivers (and nothing else that is not public).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpcore

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
MAX_URL_LENGTH = 2048
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a) for a in ("169.254.169.254", "169.254.170.2", "100.100.100.200", "fd00:ec2::254")
)
"""Cloud instance-metadata endpoints (AWS, ECS, Alibaba, AWS over IPv6); also covered by the ranges below."""
CARRIER_NAT = ipaddress.ip_network("100.64.0.0/10")


class TargetRefused(ValueError):
    """A target URL or address deliveries may not go to; the message says why."""


@dataclass(frozen=True)
class TargetPolicy:
    allow_http: bool = False
    allow_loopback: bool = False

    def check_address(self, address: IPAddress) -> None:
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
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
        if address.is_private or (isinstance(address, ipaddress.IPv4Address) and address in CARRIER_NAT):
            raise TargetRefused(f"{address} is a private address")
        if address.is_multicast or address.is_reserved or address.is_unspecified or not address.is_global:
            raise TargetRefused(f"{address} is not a public address")

    def resolve(self, host: str, port: int) -> list[IPAddress]:
        """Every address ``host`` resolves to, each checked; one refused address refuses the host."""
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError) as error:
            raise TargetRefused(f"the host {host!r} does not resolve ({error})") from None
        addresses: list[IPAddress] = []
        for info in infos:
            address = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
            self.check_address(address)
            if address not in addresses:
                addresses.append(address)
        if not addresses:
            raise TargetRefused(f"the host {host!r} has no address")
        return addresses

    def check_url(self, url: str) -> str:
        """The URL, if deliveries may go there; :class:`TargetRefused` saying why not otherwise."""
        if not isinstance(url, str) or not url.strip():
            raise TargetRefused("targetUrl is required")
        url = url.strip()
        if len(url) > MAX_URL_LENGTH:
            raise TargetRefused(f"targetUrl is longer than {MAX_URL_LENGTH} characters")
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError as error:
            raise TargetRefused(f"targetUrl is not a valid URL: {error}") from None
        schemes = ("https", "http") if self.allow_http else ("https",)
        if parts.scheme not in schemes:
            raise TargetRefused(f"targetUrl must be an {' or '.join(schemes)} URL, got {parts.scheme or 'none'!r}")
        if not parts.hostname:
            raise TargetRefused("targetUrl has no host")
        if parts.username or parts.password:
            raise TargetRefused("targetUrl may not carry a user name or password")
        self.resolve(parts.hostname, port or (443 if parts.scheme == "https" else 80))
        return url


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
