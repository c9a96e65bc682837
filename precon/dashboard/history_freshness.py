"""How fresh a deployment's history is: the time of its newest change, said in words, and whether it is stale.

A mirror (``precon catalogue mirror``, run daily) records nothing on a day the source did not change, and nothing
at all when it stops running: a history whose newest change is more than :data:`STALE_AFTER` old most likely
belongs to a mirror that no longer runs, and the figures drawn from it stop there.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

STALE_AFTER = timedelta(days=2)


@dataclass(frozen=True)
class Freshness:
    newest: datetime | None
    """The time of the newest change in the history (None: the history is empty)."""
    now: datetime

    @property
    def age(self) -> timedelta | None:
        return None if self.newest is None else max(self.now - self.newest, timedelta(0))

    @property
    def stale(self) -> bool:
        age = self.age
        return age is None or age > STALE_AFTER

    def describe(self) -> str:
        """One sentence for the page: when the newest change was recorded, and how long ago."""
        if self.newest is None:
            return "This deployment's history holds no change yet."
        when = self.newest.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
        return f"The newest change in this deployment's history was recorded {ago(self.age)} ({when})."

    def warning(self) -> str | None:
        """What a reader should know when the history is stale; None when it is fresh."""
        if not self.stale:
            return None
        return (
            f"{self.describe()} The figures stop there: if this deployment follows another with a daily "
            "`precon catalogue mirror`, check that the mirror still runs (a run that finds nothing changed records "
            "nothing, but a market rarely stands still for two days)."
        )


def ago(age: timedelta | None) -> str:
    """``just now``, ``12 minutes ago``, ``5 hours ago``, ``3 days ago``."""
    if age is None:
        return "never"
    seconds = int(age.total_seconds())
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            count = seconds // size
            return f"{count} {unit}{'' if count == 1 else 's'} ago"
    return "just now"


def freshness_of(newest: datetime | None, now: datetime | None = None) -> Freshness:
    """The freshness of a history whose newest change was at ``newest`` (naive times are UTC)."""
    if newest is not None and newest.tzinfo is None:
        newest = newest.replace(tzinfo=UTC)
    return Freshness(newest, now or datetime.now(UTC))
