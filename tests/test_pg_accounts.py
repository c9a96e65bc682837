"""Keys, products and grants in PostgreSQL answer as in SQLite: the same calls on both stores, the same answers
(tests/test_accounts.py's behaviour, on a throw-away cluster: see tests/pg_support.py)."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from precon.client.models import PROVINCES, VERSIONS
from precon.service.accounts.model import Accounts, ApiKey, Grant, digest
from precon.service.accounts.postgres import PostgresAccountStore
from precon.service.accounts.sqlite import AccountStore
from tests import pg_support

pg_cluster = pg_support.pg_cluster
pg_database = pg_support.pg_database

EVERY_PROVINCE = frozenset([*PROVINCES, "all"])
EVERY_VERSION = frozenset(VERSIONS)


@pytest.fixture(params=["sqlite", "postgres"])
def accounts(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Accounts]:
    store: Accounts
    if request.param == "sqlite":
        store = AccountStore(tmp_path / "accounts.sqlite3")
    else:
        store = PostgresAccountStore(request.getfixturevalue("pg_database"), migrate=False)
    yield store
    store.close()


def rows(store: Accounts, sql: str) -> list[tuple[Any, ...]]:
    """What the store's own tables hold (the same SQL on both)."""
    if isinstance(store, AccountStore):
        db = sqlite3.connect(store.path)
        try:
            return [tuple(r) for r in db.execute(sql)]
        finally:
            db.close()
    assert isinstance(store, PostgresAccountStore)
    with psycopg.connect(store.conninfo) as connection:
        return [tuple(r) for r in connection.execute(sql)]


def test_a_new_key_grants_everything_by_default(accounts: Accounts) -> None:
    key = accounts.create_key("acme", label="first")
    found = accounts.authenticate(key)
    assert found == ApiKey(1, key[:6] + "…", (Grant("acme", EVERY_VERSION, EVERY_PROVINCE),))
    assert accounts.products() == ["acme"]


def test_explicit_key_is_idempotent_and_regranted(accounts: Accounts) -> None:
    assert accounts.create_key("dev", ["v1"], ["on"], key="my-key") == "my-key"
    first = accounts.authenticate("my-key")
    assert first == ApiKey(1, "…", (Grant("dev", frozenset({"v1"}), frozenset({"on"})),))
    assert accounts.create_key("dev", ["v1"], ["on"], key="my-key") == "my-key"
    assert accounts.authenticate("my-key") == first
    accounts.create_key("dev", key="my-key")
    accounts.create_key("beta", ["v1-lite"], ["qc"], key="my-key")
    both = accounts.authenticate("my-key")
    assert both == ApiKey(
        1,
        "…",
        (Grant("dev", EVERY_VERSION, EVERY_PROVINCE), Grant("beta", frozenset({"v1-lite"}), frozenset({"qc"}))),
    )
    assert accounts.products() == ["beta", "dev"]
    assert rows(accounts, "SELECT count(*) FROM api_keys") == [(1,)]
    assert rows(accounts, "SELECT count(*) FROM grants") == [(2,)]
    other = accounts.authenticate(accounts.create_key("gamma"))
    assert other is not None and other.key_id == 2, "registering a known key again takes no id"


def test_keys_are_stored_as_sha256_digests_only(accounts: Accounts) -> None:
    key = accounts.create_key("acme")
    assert rows(accounts, "SELECT digest, hint FROM api_keys") == [(digest(key), key[:6] + "…")]
    columns = " || ".join(("digest", "hint", "label"))
    assert all(key not in text for (text,) in rows(accounts, f"SELECT {columns} FROM api_keys"))


@pytest.mark.parametrize("key", [None, "", "pk_unknown", "precon-dev-key", " "])
def test_authenticate_refuses_missing_and_unknown_keys(accounts: Accounts, key: str | None) -> None:
    real = accounts.create_key("acme")
    assert accounts.authenticate(key) is None
    assert accounts.authenticate(real + " ") is None
    assert accounts.authenticate(real.upper()) is None


@pytest.mark.parametrize(
    ("versions", "provinces", "granted"),
    [
        (["v1"], ["on", "all"], Grant("p", frozenset({"v1"}), EVERY_PROVINCE)),
        (
            ["v1-sandbox,v1"],
            ["on, bc", " pe "],
            Grant("p", frozenset({"v1", "v1-sandbox"}), frozenset({"on", "bc", "pe"})),
        ),
        (None, [], Grant("p", EVERY_VERSION, EVERY_PROVINCE)),
    ],
)
def test_narrowing(accounts: Accounts, versions: list[str] | None, provinces: list[str], granted: Grant) -> None:
    found = accounts.authenticate(accounts.create_key(" p ", versions, provinces))
    assert found is not None and found.grants == (granted,)


@pytest.mark.parametrize(
    ("product", "versions", "provinces", "message"),
    [
        ("p", ["v2"], None, "unknown versions: v2 (allowed: v1, v1-lite, v1-sandbox)"),
        ("p", None, ["on", "yt"], "unknown provinces: yt (allowed: ab, all, bc, mb, nb, nl, ns, on, pe, qc, sk)"),
        ("  ", None, None, "a product id is required"),
    ],
)
def test_create_key_refuses_bad_input_and_writes_nothing(
    accounts: Accounts, product: str, versions: list[str] | None, provinces: list[str] | None, message: str
) -> None:
    with pytest.raises(ValueError) as raised:
        accounts.create_key(product, versions, provinces, key="would-be-key")
    assert str(raised.value) == message
    assert accounts.authenticate("would-be-key") is None
    assert accounts.products() == []


def test_key_ids_allowing(accounts: Accounts) -> None:
    ids = {}
    for name, versions, provinces in (
        ("on", ["v1"], ["on"]),
        ("lite-bc", ["v1-lite"], ["bc"]),
        ("all", None, None),
        ("sandbox", ["v1-sandbox"], ["all"]),
    ):
        found = accounts.authenticate(accounts.create_key(name, versions, provinces))
        assert found is not None
        ids[name] = found.key_id
    assert accounts.key_ids_allowing({"v1", "v1-lite"}, "on") == {ids["on"], ids["all"]}
    assert accounts.key_ids_allowing({"v1-lite"}, None) == {ids["lite-bc"], ids["all"]}
    assert accounts.key_ids_allowing({"v1", "v1-lite"}, "all") == {ids["all"]}
    assert accounts.key_ids_allowing({"v1-sandbox"}, "qc") == {ids["all"], ids["sandbox"]}
    assert accounts.key_ids_allowing(set(), None) == set()


def test_both_stores_answer_the_same_calls_alike(tmp_path: Path, pg_database: str) -> None:
    sqlite_store = AccountStore(tmp_path / "accounts.sqlite3")
    pg_store = PostgresAccountStore(pg_database, migrate=False)
    calls: list[tuple[str, list[str] | None, list[str] | None, str]] = [
        ("acme", None, None, "k-acme"),
        ("east", ["v1"], ["qc", "nb"], "k-east"),
        ("west", ["v1-lite"], ["bc,ab"], "k-west"),
        ("east", ["v1-lite"], ["on"], "k-acme"),
        ("acme", ["v1"], ["all"], "k-west"),
        ("acme", ["v1"], ["pe"], "k-acme"),
    ]
    try:
        answers = []
        for store in (sqlite_store, pg_store):
            made = [store.create_key(p, v, r, key=k) for p, v, r, k in calls]
            keys = [store.authenticate(k) for k in ("k-acme", "k-east", "k-west", "nope")]
            allowing = [store.key_ids_allowing({v}, p) for v in VERSIONS for p in [*sorted(EVERY_PROVINCE), None]]
            answers.append((made, keys, allowing, store.products()))
        assert answers[0] == answers[1]
    finally:
        sqlite_store.close()
        pg_store.close()


def test_replicas_seeding_the_development_key_at_once_make_one_key(pg_database: str) -> None:
    stores = [PostgresAccountStore(pg_database, migrate=False) for _ in range(4)]
    start = threading.Barrier(16)
    failures: list[BaseException] = []

    def seed(store: PostgresAccountStore) -> None:
        start.wait()
        try:
            for _ in range(5):
                store.create_key("dev-product", key="precon-dev-key-long-enough-to-hint", label="development")
        except BaseException as error:
            failures.append(error)

    threads = [threading.Thread(target=seed, args=(stores[n % 4],)) for n in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        assert failures == []
        found = stores[0].authenticate("precon-dev-key-long-enough-to-hint")
        assert found is not None and found.grants == (Grant("dev-product", EVERY_VERSION, EVERY_PROVINCE),)
        assert rows(stores[0], "SELECT count(*) FROM api_keys") == [(1,)]
        assert stores[1].products() == ["dev-product"]
    finally:
        for store in stores:
            store.close()


def test_a_replica_remembers_a_valid_key_for_half_a_second_and_never_an_unknown_one(pg_database: str) -> None:
    """What lets a replica check a known key on the event loop: no round trip to PostgreSQL while it remembers."""
    from precon.service.accounts.postgres import KEY_CACHE_S, PostgresAccountStore

    accounts = PostgresAccountStore(pg_database, migrate=False)
    try:
        key = accounts.create_key("everything")
        assert not accounts.remembers(key) and not accounts.remembers(None)
        assert accounts.authenticate(key) is not None
        assert accounts.remembers(key)
        assert accounts.authenticate("pk_unknown") is None and not accounts.remembers("pk_unknown")
        time.sleep(KEY_CACHE_S + 0.1)
        assert not accounts.remembers(key)
    finally:
        accounts.close()
