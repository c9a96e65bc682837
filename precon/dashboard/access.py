"""Who may use the dashboard and what each may do: the pure rules, without Streamlit (``components/auth.py`` is the
gate that applies them to the signed-in user).

- ``PRECON_DASHBOARD_ADMINS``: e-mail addresses and ``@domain`` entries, comma-separated; whoever matches is an
  admin (the Admin section: webhooks), everyone else signed in is a viewer.
- ``PRECON_DASHBOARD_USERS``: the same syntax; when set, only whoever matches it (or the admins' list) may sign in.
- ``PRECON_DASHBOARD_ANONYMOUS=true``: the dashboard may listen beyond loopback without sign-in, on purpose.

A saved search belongs to whoever saved it: a viewer sees and manages their own, an admin all of them. Without
sign-in there is nobody to tell apart, and everyone manages everything, as before sign-in existed.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

ADMINS_SETTING = "PRECON_DASHBOARD_ADMINS"
USERS_SETTING = "PRECON_DASHBOARD_USERS"
ANONYMOUS_SETTING = "PRECON_DASHBOARD_ANONYMOUS"
SESSION_HOURS_SETTING = "PRECON_DASHBOARD_SESSION_HOURS"
DEFAULT_SESSION_HOURS = 12.0
AUTH_KEYS = ("redirect_uri", "cookie_secret", "client_id", "client_secret", "server_metadata_url")
"""The standard ``[auth]`` section of ``.streamlit/secrets.toml``: each one is needed."""
TRUE_WORDS = frozenset({"1", "true", "yes", "on"})


class Role(StrEnum):
    ADMIN = "admin"
    VIEWER = "viewer"


class BadSetting(ValueError):
    """A setting that cannot be used as it is; the message names it and says how to fix it, for a person."""


@dataclass(frozen=True)
class Entries:
    """A list of e-mail addresses and ``@domain`` entries (a domain matches its addresses exactly, not its
    subdomains); case is ignored."""

    addresses: frozenset[str] = frozenset()
    domains: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.addresses or self.domains)

    def matches(self, email: str | None) -> bool:
        address = (email or "").strip().casefold()
        if "@" not in address:
            return False
        return address in self.addresses or address.rpartition("@")[2] in self.domains


def parse_entries(text: str | None, setting: str = ADMINS_SETTING) -> Entries:
    """``"ana@example.com, @example.org"`` as :class:`Entries`; an entry that is neither an address nor ``@domain``
    raises :class:`BadSetting` naming it (a list that half works would let in, or keep out, the wrong people)."""
    addresses: set[str] = set()
    domains: set[str] = set()
    bad: list[str] = []
    for raw in (text or "").split(","):
        entry = raw.strip().casefold()
        if not entry:
            continue
        local, at, domain = entry.rpartition("@")
        if not at or not domain or "." not in domain or " " in entry or local.count("@"):
            bad.append(raw.strip())
        elif local:
            addresses.add(entry)
        else:
            domains.add(domain)
    if bad:
        listed = ", ".join(f"“{b}”" for b in bad)
        raise BadSetting(
            f"{setting} has entries that are neither an e-mail address nor an @domain: {listed}. "
            "Write it as comma-separated addresses and @domain entries, e.g. “ana@example.com, @example.org”."
        )
    return Entries(frozenset(addresses), frozenset(domains))


@dataclass(frozen=True)
class Person:
    """Someone signed in, and what they may do."""

    email: str
    name: str
    role: Role

    @property
    def is_admin(self) -> bool:
        return self.role is Role.ADMIN


@dataclass(frozen=True)
class Policy:
    admins: Entries
    users: Entries | None = None
    """None: anyone the provider signs in may use the dashboard (as a viewer, unless an admin)."""

    @classmethod
    def from_settings(cls, admins: str | None, users: str | None) -> Policy:
        parsed_users = parse_entries(users, USERS_SETTING) if (users or "").strip() else None
        return cls(parse_entries(admins, ADMINS_SETTING), parsed_users)

    def role(self, email: str | None) -> Role | None:
        """The role of this address, or None when it may not sign in."""
        if self.admins.matches(email):
            return Role.ADMIN
        if self.users is not None and not self.users.matches(email):
            return None
        return Role.VIEWER if "@" in (email or "") else None


def is_true(value: str | None) -> bool:
    return (value or "").strip().casefold() in TRUE_WORDS


def is_loopback(address: str | None) -> bool:
    """Whether a listening address reaches only this machine (an empty one listens on every interface)."""
    host = (address or "").strip().strip("[]")
    if host.casefold() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def exposure_problem(address: str | None, auth_configured: bool, anonymous: bool, proxied: bool = False) -> str | None:
    """Why the dashboard must not serve on this address, or through a proxy (which makes loopback reach beyond this
    machine), without sign-in (None: it may)."""
    if auth_configured or anonymous or (is_loopback(address) and not proxied):
        return None
    if is_loopback(address):
        how = "is reached through a proxy (the request says whom it was forwarded for), beyond this machine,"
    else:
        how = f"is set to listen on {address}" if (address or "").strip() else "is set to listen on every interface"
        how += ", beyond this machine,"
    return (
        f"This dashboard {how} without sign-in: anyone who reaches it "
        "would see the data and act with its API key. Configure sign-in (the [auth] section of "
        f".streamlit/secrets.toml, see docs/deploy.md), listen on 127.0.0.1, or set {ANONYMOUS_SETTING}=true "
        "if serving it to anyone who reaches it is meant."
    )


def missing_auth_keys(section: Mapping[str, Any]) -> list[str]:
    """The keys of the standard ``[auth]`` section that are missing or empty."""
    return [key for key in AUTH_KEYS if not str(section.get(key) or "").strip()]


def session_hours(text: str | None) -> float:
    if not (text or "").strip():
        return DEFAULT_SESSION_HOURS
    try:
        hours = float(str(text))
    except ValueError:
        hours = 0.0
    if not 0 < hours <= 24 * 30:
        raise BadSetting(f"{SESSION_HOURS_SETTING} is a number of hours from 0 to 720 (“{text}” is not).")
    return hours


def session_expired(signed_in_at: Any, hours: float, now: datetime | None = None) -> bool:
    """Whether a sign-in at ``signed_in_at`` (the ID token's ``iat``: seconds since the epoch) is older than
    ``hours``; a sign-in whose time is unknown has not expired (the identity cookie's own 30 days still hold)."""
    if isinstance(signed_in_at, bool) or not isinstance(signed_in_at, int | float):
        return False
    moment = datetime.fromtimestamp(float(signed_in_at), UTC)
    return (now or datetime.now(UTC)) - moment > timedelta(hours=hours)


def owns(person: Person | None, saved_by: str | None) -> bool:
    """Whether ``person`` may see and manage a saved search (or its alerts) saved by ``saved_by``: its saver and
    every admin; without sign-in (``person`` None) everyone."""
    if person is None or person.is_admin:
        return True
    if not person.email.strip():
        return False
    return (saved_by or "").strip().casefold() == person.email.strip().casefold()
