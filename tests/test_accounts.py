"""precon.service.accounts (model, sql, sqlite): keys, products and the grants that tie them, stored hashed."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from precon.client.models import PROVINCES, VERSIONS
from precon.service.accounts.model import ALL_PROVINCES, KEY_PREFIX, ApiKey, Grant, digest
from precon.service.accounts.sqlite import AccountStore

EVERY_PROVINCE = frozenset([*PROVINCES, "all"])
EVERY_VERSION = frozenset(VERSIONS)


@pytest.fixture
def accounts(tmp_path: Path) -> AccountStore:
    return AccountStore(tmp_path / "nested" / "accounts.sqlite3")


def test_every_province_includes_all() -> None:
    assert ALL_PROVINCES == EVERY_PROVINCE
    assert len(ALL_PROVINCES) == 11


def test_a_new_key_grants_everything_by_default(accounts: AccountStore) -> None:
    key = accounts.create_key("acme", label="first")
    assert key.startswith(KEY_PREFIX)
    assert len(key) == len(KEY_PREFIX) + 43  # 32 random bytes, URL-safe base64
    found = accounts.authenticate(key)
    assert found is not None
    assert found.hint == key[:6] + "…"
    assert found.grants == (Grant("acme", EVERY_VERSION, EVERY_PROVINCE),)
    assert found.grant("acme") == Grant("acme", EVERY_VERSION, EVERY_PROVINCE)
    assert found.grant("other") is None
    assert accounts.products() == ["acme"]


def test_generated_keys_differ(accounts: AccountStore) -> None:
    keys = {accounts.create_key("acme") for _ in range(5)}
    assert len(keys) == 5
    ids = set()
    for key in keys:
        found = accounts.authenticate(key)
        assert found is not None
        ids.add(found.key_id)
    assert len(ids) == 5
    assert accounts.products() == ["acme"]


def test_explicit_key_is_idempotent_and_regranted(accounts: AccountStore) -> None:
    assert accounts.create_key("dev", ["v1"], ["on"], key="my-key") == "my-key"
    first = accounts.authenticate("my-key")
    assert first is not None
    # A short key is too much of itself to show: its hint is only an ellipsis.
    assert first == ApiKey(first.key_id, "…", (Grant("dev", frozenset({"v1"}), frozenset({"on"})),))

    # Again, unchanged: the same key, the same grant.
    assert accounts.create_key("dev", ["v1"], ["on"], key="my-key") == "my-key"
    assert accounts.authenticate("my-key") == first

    # Again with other versions and provinces: the grant is replaced, not added to.
    accounts.create_key("dev", key="my-key")
    again = accounts.authenticate("my-key")
    assert again is not None
    assert again.key_id == first.key_id
    assert again.grants == (Grant("dev", EVERY_VERSION, EVERY_PROVINCE),)

    # Another product: the key now holds both, the oldest product first.
    accounts.create_key("beta", ["v1-lite"], ["qc"], key="my-key")
    both = accounts.authenticate("my-key")
    assert both is not None and both.key_id == first.key_id
    assert both.grants == (
        Grant("dev", EVERY_VERSION, EVERY_PROVINCE),
        Grant("beta", frozenset({"v1-lite"}), frozenset({"qc"})),
    )
    assert [g.product_id for g in both.granting("v1-lite", "qc")] == ["dev", "beta"]
    assert [g.product_id for g in both.granting("v1", "on")] == ["dev"]
    assert both.granting("v1-sandbox", "on") == [Grant("dev", EVERY_VERSION, EVERY_PROVINCE)]
    assert accounts.products() == ["beta", "dev"]

    db = sqlite3.connect(accounts.path)
    try:
        assert db.execute("SELECT count(*) FROM api_keys").fetchone() == (1,)
        assert db.execute("SELECT count(*) FROM grants").fetchone() == (2,)
    finally:
        db.close()


def test_keys_are_stored_as_sha256_digests(accounts: AccountStore) -> None:
    key = accounts.create_key("acme")
    assert digest(key) == hashlib.sha256(key.encode()).hexdigest()
    db = sqlite3.connect(accounts.path)
    try:
        rows = db.execute("SELECT digest, hint FROM api_keys").fetchall()
    finally:
        db.close()
    assert rows == [(digest(key), key[:6] + "…")]
    stored = b"".join(p.read_bytes() for p in accounts.path.parent.iterdir())
    assert key.encode() not in stored


@pytest.mark.parametrize(
    ("version", "province", "allowed"),
    [
        ("v1", "on", True),
        ("v1", "bc", True),
        ("v1-lite", "on", True),
        ("v1-sandbox", "on", False),
        ("v1", "qc", False),
        ("v1", "all", False),
        ("v2", "on", False),
        ("V1", "ON", False),
    ],
)
def test_grant_allows(version: str, province: str, allowed: bool) -> None:
    grant = Grant("p", frozenset({"v1", "v1-lite"}), frozenset({"on", "bc"}))
    assert grant.allows(version, province) is allowed


def test_api_key_allows_through_any_grant() -> None:
    key = ApiKey(
        1,
        "pk_abcd…",
        (Grant("east", frozenset({"v1"}), frozenset({"qc"})), Grant("west", frozenset({"v1-lite"}), frozenset({"bc"}))),
    )
    allowed = {(v, p) for v in VERSIONS for p in EVERY_PROVINCE if key.allows(v, p)}
    assert allowed == {("v1", "qc"), ("v1-lite", "bc")}
    assert not ApiKey(2, "x", ()).allows("v1", "on")


@pytest.mark.parametrize("key", [None, "", "pk_unknown", "precon-dev-key", " "])
def test_authenticate_refuses_missing_and_unknown_keys(accounts: AccountStore, key: str | None) -> None:
    accounts.create_key("acme", key="the-real-key")
    assert accounts.authenticate(key) is None


def test_authenticate_is_exact(accounts: AccountStore) -> None:
    key = accounts.create_key("acme")
    assert accounts.authenticate(key) is not None
    assert accounts.authenticate(key + " ") is None
    assert accounts.authenticate(key.upper()) is None
    assert accounts.authenticate(key[:-1]) is None


@pytest.mark.parametrize(
    ("provinces", "granted"),
    [
        (["all"], EVERY_PROVINCE),
        (["on", "all"], EVERY_PROVINCE),
        (["on,all"], EVERY_PROVINCE),
        (["on"], frozenset({"on"})),
        (["on", "bc"], frozenset({"on", "bc"})),
        (["on, bc", " pe "], frozenset({"on", "bc", "pe"})),
        ([], EVERY_PROVINCE),
        (None, EVERY_PROVINCE),
    ],
)
def test_narrowing_provinces(accounts: AccountStore, provinces: list[str] | None, granted: frozenset[str]) -> None:
    key = accounts.create_key("p", ["v1"], provinces)
    found = accounts.authenticate(key)
    assert found is not None
    assert found.grants == (Grant("p", frozenset({"v1"}), granted),)
    assert found.allows("v1", "sk") is ("sk" in granted)


@pytest.mark.parametrize(
    ("versions", "granted"),
    [
        (["v1"], frozenset({"v1"})),
        (["v1", "v1-lite"], frozenset({"v1", "v1-lite"})),
        (["v1-sandbox,v1"], frozenset({"v1", "v1-sandbox"})),
        (None, EVERY_VERSION),
    ],
)
def test_narrowing_versions(accounts: AccountStore, versions: list[str] | None, granted: frozenset[str]) -> None:
    found = accounts.authenticate(accounts.create_key("p", versions))
    assert found is not None
    assert found.grants == (Grant("p", granted, EVERY_PROVINCE),)


@pytest.mark.parametrize(
    ("product", "versions", "provinces", "message"),
    [
        ("p", ["v2"], None, "unknown versions: v2 (allowed: v1, v1-lite, v1-sandbox)"),
        ("p", ["v1", "all"], None, "unknown versions: all (allowed: v1, v1-lite, v1-sandbox)"),
        (
            "p",
            None,
            ["on", "yt", "nu"],
            "unknown provinces: nu, yt (allowed: ab, all, bc, mb, nb, nl, ns, on, pe, qc, sk)",
        ),
        ("  ", None, None, "a product id is required"),
    ],
)
def test_create_key_refuses_bad_input_and_writes_nothing(
    accounts: AccountStore, product: str, versions: list[str] | None, provinces: list[str] | None, message: str
) -> None:
    with pytest.raises(ValueError) as raised:
        accounts.create_key(product, versions, provinces, key="would-be-key")
    assert str(raised.value) == message
    assert accounts.authenticate("would-be-key") is None
    assert accounts.products() == []


def test_product_id_is_trimmed(accounts: AccountStore) -> None:
    found = accounts.authenticate(accounts.create_key("  acme  "))
    assert found is not None
    assert [g.product_id for g in found.grants] == ["acme"]
    assert accounts.products() == ["acme"]


def test_a_second_store_on_the_same_file_sees_the_keys(tmp_path: Path) -> None:
    path = tmp_path / "accounts.sqlite3"
    key = AccountStore(path).create_key("acme", ["v1"], ["on"])
    found = AccountStore(path).authenticate(key)
    assert found is not None
    assert found.grants == (Grant("acme", frozenset({"v1"}), frozenset({"on"})),)
