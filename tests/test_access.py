"""precon.dashboard.access: the ADMINS and USERS lists, roles, who owns a saved search, sessions, and where the
dashboard may listen without sign-in."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from precon.dashboard.access import (
    BadSetting,
    Person,
    Policy,
    Role,
    exposure_problem,
    is_loopback,
    is_true,
    missing_auth_keys,
    owns,
    parse_entries,
    session_expired,
    session_hours,
)


def test_entries_are_addresses_and_domains_without_case() -> None:
    entries = parse_entries(" Ana@Example.com , @example.org,, ")
    assert entries.addresses == {"ana@example.com"}
    assert entries.domains == {"example.org"}
    assert entries.matches("ANA@example.COM")
    assert entries.matches("bob@Example.org")
    assert not entries.matches("bob@sub.example.org")  # a domain is exact, not its subdomains
    assert not entries.matches("bob@example.com")
    assert not entries.matches("example.org")
    assert not entries.matches(None)
    assert not parse_entries("")
    assert not parse_entries(None)


@pytest.mark.parametrize("bad", ["ana", "ana@", "@", "ana@localhost", "a b@example.com", "a@b@example.com"])
def test_an_entry_that_is_neither_is_refused_by_name(bad: str) -> None:
    with pytest.raises(BadSetting) as refused:
        parse_entries(f"ok@example.com, {bad}", "PRECON_DASHBOARD_USERS")
    assert "PRECON_DASHBOARD_USERS" in str(refused.value)
    assert f"“{bad}”" in str(refused.value)


def test_roles() -> None:
    policy = Policy.from_settings("boss@example.com, @admins.example.com", None)
    assert policy.role("boss@example.com") is Role.ADMIN
    assert policy.role("Someone@Admins.Example.com") is Role.ADMIN
    assert policy.role("viewer@anywhere.net") is Role.VIEWER
    assert policy.role("") is None
    assert policy.role(None) is None


def test_users_limit_who_may_sign_in_and_admins_always_may() -> None:
    policy = Policy.from_settings("boss@example.com", "@example.org, guest@elsewhere.net")
    assert policy.role("boss@example.com") is Role.ADMIN
    assert policy.role("ana@example.org") is Role.VIEWER
    assert policy.role("guest@elsewhere.net") is Role.VIEWER
    assert policy.role("stranger@elsewhere.net") is None
    assert Policy.from_settings("", "  ").users is None  # blank: anyone the provider signs in


def test_ownership_of_saved_searches() -> None:
    viewer = Person("ana@example.org", "Ana", Role.VIEWER)
    admin = Person("boss@example.com", "Boss", Role.ADMIN)
    assert owns(viewer, "ANA@example.org ")
    assert not owns(viewer, "bob@example.org")
    assert not owns(viewer, "")  # saved before sign-in: an admin's to manage
    assert owns(admin, "bob@example.org")
    assert owns(admin, "")
    assert owns(None, "anyone")  # no sign-in: nobody to tell apart


@pytest.mark.parametrize(
    ("address", "loopback"),
    [("127.0.0.1", True), ("127.1.2.3", True), ("localhost", True), ("::1", True), ("[::1]", True),
     ("0.0.0.0", False), ("", False), (None, False), ("192.168.1.5", False), ("::", False), ("example.com", False)],
)  # fmt: skip
def test_loopback(address: str | None, loopback: bool) -> None:
    assert is_loopback(address) is loopback


def test_exposure_needs_auth_or_anonymous_beyond_loopback() -> None:
    assert exposure_problem("127.0.0.1", auth_configured=False, anonymous=False) is None
    assert exposure_problem("0.0.0.0", auth_configured=True, anonymous=False) is None
    assert exposure_problem("0.0.0.0", auth_configured=False, anonymous=True) is None
    problem = exposure_problem("0.0.0.0", auth_configured=False, anonymous=False)
    assert problem and "0.0.0.0" in problem and "PRECON_DASHBOARD_ANONYMOUS=true" in problem
    assert "every interface" in (exposure_problem("", auth_configured=False, anonymous=False) or "")
    behind = exposure_problem("127.0.0.1", auth_configured=False, anonymous=False, proxied=True)
    assert behind and "through a proxy" in behind
    assert exposure_problem("127.0.0.1", auth_configured=True, anonymous=False, proxied=True) is None
    assert is_true("TRUE") and is_true(" yes") and not is_true("false") and not is_true(None)


def test_auth_section_keys() -> None:
    full = {"redirect_uri": "u", "cookie_secret": "c", "client_id": "i", "client_secret": "s",
            "server_metadata_url": "m"}  # fmt: skip
    assert missing_auth_keys(full) == []
    assert missing_auth_keys({**full, "client_secret": " "}) == ["client_secret"]
    assert missing_auth_keys({}) == ["redirect_uri", "cookie_secret", "client_id", "client_secret",
                                     "server_metadata_url"]  # fmt: skip


def test_sessions() -> None:
    now = datetime(2026, 1, 2, tzinfo=UTC)
    assert session_hours(None) == 12
    assert session_hours("1.5") == 1.5
    for bad in ("0", "-1", "abc", "10000"):
        with pytest.raises(BadSetting):
            session_hours(bad)
    assert session_expired((now - timedelta(hours=13)).timestamp(), 12, now)
    assert not session_expired((now - timedelta(hours=11)).timestamp(), 12, now)
    assert not session_expired(None, 12, now)
    assert not session_expired("yesterday", 12, now)
    assert not session_expired(True, 12, now)
