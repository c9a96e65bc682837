"""How fresh the history is, on the pages that stand on it (Changes, Market): the newest change's time from the
service, and a warning once it is more than two days old (a daily mirror that stopped)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from precon.client import Client
from precon.dashboard.history_freshness import ago, freshness_of
from tests.dashboard_support import history_fixtures, open_page, page_text

LISTINGS = 120
PAGES = ["views/changes.py", "views/market.py"]


def test_the_age_is_said_in_words_and_two_days_is_the_limit() -> None:
    now = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)
    assert ago(timedelta(seconds=30)) == "just now" and ago(timedelta(minutes=1)) == "1 minute ago"
    assert ago(timedelta(hours=5, minutes=59)) == "5 hours ago" and ago(timedelta(days=3, hours=1)) == "3 days ago"
    fresh = freshness_of(now - timedelta(days=2), now)
    assert not fresh.stale and fresh.warning() is None
    assert (
        fresh.describe()
        == "The newest change in this deployment's history was recorded 2 days ago (2026-12-04 12:00 UTC)."
    )
    stale = freshness_of(now - timedelta(days=2, seconds=1), now)
    assert stale.stale and "check that the mirror still runs" in (stale.warning() or "")
    assert freshness_of(None, now).stale
    assert freshness_of(datetime(2026, 12, 6, 11, 0), now).describe().endswith("1 hour ago (2026-12-06 11:00 UTC).")


history_data, oracle, dashboard = history_fixtures("freshness-data", LISTINGS, 30)


@pytest.fixture(scope="module")
def newest(oracle: Client) -> datetime:
    at = oracle.changes(per_page=1).results[0].at
    assert at is not None
    return at


def clock_at(now: datetime) -> Callable[..., object]:
    real = freshness_of
    return lambda newest, at=None: real(newest, now)


@pytest.mark.parametrize("page", PAGES)
def test_the_page_says_when_the_newest_change_was_recorded(
    dashboard: None, newest: datetime, page: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from components import freshness

    monkeypatch.setattr(freshness, "freshness_of", clock_at(newest + timedelta(hours=20)))
    app = open_page(page)
    assert not app.exception, [e.value for e in app.exception]
    when = newest.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
    assert f"was recorded 20 hours ago ({when})" in page_text(app)
    assert not any("check that the mirror still runs" in w.value for w in app.warning)


@pytest.mark.parametrize("page", PAGES)
def test_the_page_warns_when_the_history_is_more_than_two_days_old(
    dashboard: None, newest: datetime, page: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from components import freshness

    monkeypatch.setattr(freshness, "freshness_of", clock_at(newest + timedelta(days=3, hours=2)))
    app = open_page(page)
    assert not app.exception, [e.value for e in app.exception]
    warnings = [w.value for w in app.warning if "check that the mirror still runs" in w.value]
    assert len(warnings) == 1 and "3 days ago" in warnings[0]


def test_the_newest_change_is_the_services_own(oracle: Client, newest: datetime) -> None:
    everything = list(oracle.iter_changes(since="2000-01-01T00:00:00Z"))
    assert newest == max(entry.at for entry in everything if entry.at is not None)
