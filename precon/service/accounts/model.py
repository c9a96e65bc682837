"""API keys and the data products they grant, stored hashed in their own SQLite file
(:class:`precon.service.accounts.sqlite.AccountStore`) or, with a database URL, in PostgreSQL
(:class:`precon.service.accounts.postgres.PostgresAccountStore`): both are :class:`Accounts`, and answer the same.

A key belongs to an account; the account holds one or more data products; a product grant names the versions
and provinces it opens. Only a SHA-256 digest of each key is stored: keys are 256-bit random tokens, so a fast
digest is as safe as a slow one and keeps every request's look-up cheap.

This module is what keys and grants are, whichever database holds them; their SQL is
:mod:`precon.service.accounts.sql`, written once for both.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from typing import Protocol

from precon.client.models import PROVINCES, VERSIONS

ALL_PROVINCES = frozenset([*PROVINCES, "all"])
KEY_PREFIX = "pk_"


@dataclass(frozen=True)
class Grant:
    product_id: str
    versions: frozenset[str]
    provinces: frozenset[str]

    def allows(self, version: str, province: str) -> bool:
        return version in self.versions and province in self.provinces


@dataclass(frozen=True)
class ApiKey:
    key_id: int
    hint: str
    grants: tuple[Grant, ...]
    """The key's products, the oldest first."""

    def grant(self, product_id: str) -> Grant | None:
        return next((g for g in self.grants if g.product_id == product_id), None)

    def allows(self, version: str, province: str) -> bool:
        return any(g.allows(version, province) for g in self.grants)

    def granting(self, version: str, province: str) -> list[Grant]:
        """The key's products that grant ``version`` and ``province``, the oldest first."""
        return [g for g in self.grants if g.allows(version, province)]


def digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def key_hint(raw: str) -> str:
    """What is shown of a key: its first characters, or only an ellipsis for a key too short to show any."""
    return raw[:6] + "…" if len(raw) >= 24 else "…"


def new_key() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


def grant_of(product_id: str, versions: str, provinces: str) -> Grant:
    """A grant as stored: its versions and provinces comma-separated."""
    return Grant(product_id, frozenset(versions.split(",")), frozenset(provinces.split(",")))


def allows_any(versions: set[str], province: str | None, granted_versions: str, granted_provinces: str) -> bool:
    """Whether a stored grant opens any of ``versions`` in ``province`` (any province when None)."""
    return bool(versions & set(granted_versions.split(","))) and (
        province is None or province in granted_provinces.split(",")
    )


def normalised_grant(
    product_id: str, versions: list[str] | tuple[str, ...] | None, provinces: list[str] | tuple[str, ...] | None
) -> tuple[str, str, str]:
    """The product id, versions and provinces of a new grant as stored (every one unless narrowed); ValueError
    for a missing product or an unknown version or province."""
    product_id = product_id.strip()
    if not product_id:
        raise ValueError("a product id is required")
    granted_versions = _normalise(versions, frozenset(VERSIONS), "versions")
    granted_provinces = _normalise(provinces, ALL_PROVINCES, "provinces")
    return product_id, ",".join(sorted(granted_versions)), ",".join(sorted(granted_provinces))


def _normalise(values: list[str] | tuple[str, ...] | None, allowed: frozenset[str], what: str) -> frozenset[str]:
    if not values:
        return allowed
    chosen = {v.strip() for value in values for v in value.split(",") if v.strip()}
    unknown = chosen - allowed
    if unknown:
        raise ValueError(f"unknown {what}: {', '.join(sorted(unknown))} (allowed: {', '.join(sorted(allowed))})")
    if what == "provinces" and "all" in chosen:
        return allowed
    return frozenset(chosen)


class Accounts(Protocol):
    """What the service asks of the keys and products: :class:`precon.service.accounts.sqlite.AccountStore` or
    :class:`precon.service.accounts.postgres.PostgresAccountStore`."""

    def create_key(
        self,
        product_id: str,
        versions: list[str] | tuple[str, ...] | None = None,
        provinces: list[str] | tuple[str, ...] | None = None,
        *,
        label: str = "",
        key: str | None = None,
    ) -> str: ...

    def authenticate(self, key: str | None) -> ApiKey | None: ...

    def key_ids_allowing(self, versions: set[str], province: str | None) -> set[int]: ...

    def revoke_key(self, key: str) -> bool:
        """Removes the key and its grants (it is refused from then on); answers whether there was one."""
        ...

    def products(self) -> list[str]: ...

    def close(self) -> None: ...
