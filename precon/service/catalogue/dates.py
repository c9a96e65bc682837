"""Time in the catalogue: timestamps of records, and the sales, construction and occupancy dates builders publish.

Times are millisecond offsets from 2021-01-01T00:00:00Z, turned into text arithmetically (no datetime
arithmetic, so no dependence on the machine's time zone database).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from datetime import date, timedelta
from random import Random

_START_DAY = date(2021, 1, 1)
_END_DAY = date(2026, 11, 1)
_DAYS: tuple[str, ...] = tuple(
    (_START_DAY + timedelta(days=offset)).isoformat() for offset in range((_END_DAY - _START_DAY).days)
)
DAY_MS = 86_400_000
SPAN_MS = len(_DAYS) * DAY_MS
"""Milliseconds from 2021-01-01T00:00:00Z to the reference date; a time is an offset in [0, SPAN_MS)."""

_EPOCH_S = 1_609_459_200
"""Unix seconds of 2021-01-01T00:00:00Z, the origin of the offsets."""

_SEASONS = ("Winter", "Spring", "Summer", "Fall")
_MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip
_PERIODS = ("Early", "Mid", "Late")


def iso(ms: int) -> str:
    """ISO 8601 UTC with milliseconds of an offset from 2021-01-01, without datetime arithmetic."""
    day, rest = divmod(ms, DAY_MS)
    seconds, milli = divmod(rest, 1000)
    hours, seconds = divmod(seconds, 3600)
    minutes, seconds = divmod(seconds, 60)
    return f"{_DAYS[day]}T{hours:02d}:{minutes:02d}:{seconds:02d}.{milli:03d}Z"


def status_timestamp(lid: str, selling: str, created_ms: int, updated_ms: int) -> int:
    """Unix seconds of the last change of sellingStatus: the creation for a listing still selling, else a moment
    between its creation and its last update (drawn from its id, so the random stream is untouched)."""
    if selling == "Selling Now":
        return _EPOCH_S + created_ms // 1000
    share = zlib.crc32(lid.encode()) % 1000 / 1000
    return _EPOCH_S + (created_ms + int((updated_ms - created_ms) * share)) // 1000


def _date_text(rng: Random, year: int) -> str:
    """Free text for a year the way builders write it: "Fall 2027", "Q2 2028", "2029", "Late 2027"."""
    r = rng.random()
    if r < 0.34:
        return f"{_SEASONS[int(rng.random() * 4)]} {year}"
    if r < 0.58:
        return f"Q{1 + int(rng.random() * 4)} {year}"
    if r < 0.74:
        return str(year)
    if r < 0.87:
        return f"{_PERIODS[int(rng.random() * 3)]} {year}"
    return f"{_MONTHS[int(rng.random() * 12)]} {year}"


@dataclass(frozen=True, slots=True)
class Timeline:
    """When a listing was created and last updated, and the moments its floor plans and photos were revised."""

    created_ms: int
    updated_ms: int
    created_at: str
    updated_at: str
    plans_created: str
    revisions: list[str]
    """The floor plans' creation first, then (when the listing changed since) later revisions."""


def draw_timeline(rng: Random) -> Timeline:
    """A creation time, a last update after it, and the floor plans' creation within three days of the first."""
    rand = rng.random
    created_ms = int(rand() * (SPAN_MS - 1))
    updated_ms = created_ms + int((SPAN_MS - 1 - created_ms) * rand() ** 0.6)
    updated_at = iso(updated_ms)
    plans_ms = min(created_ms + int(rand() * 3 * DAY_MS), updated_ms)
    plans_created = iso(plans_ms)
    revisions = [plans_created]
    if updated_ms > plans_ms:
        revisions.append(updated_at)
        revisions.append(iso(plans_ms + int((updated_ms - plans_ms) * rand())))
    return Timeline(created_ms, updated_ms, iso(created_ms), updated_at, plans_created, revisions)


PUBLISHED_DATES: tuple[str, ...] = (
    "completionDate",
    "estimatedCompletionDate",
    "firstOccupancyDate",
    "constructionStarted",
    "salesStarted",
)
"""The listing's published dates, in the order of the tuples of :class:`PublishedDates`."""


@dataclass(frozen=True, slots=True)
class PublishedDates:
    """Per :data:`PUBLISHED_DATES`: the text (None when to be determined), the TBD flag, and the year."""

    texts: list[str | None]
    tbd: tuple[bool, ...]
    years: list[int | None]

    @property
    def first_occupancy(self) -> str | None:
        return self.texts[2]

    def fields(self) -> dict[str, str | bool | int | None]:
        """``completionDate``... then the five ``...TBD`` flags, then the five ``...Year`` values."""
        texts = dict(zip(PUBLISHED_DATES, self.texts, strict=True))
        flags = {f"{name}TBD": flag for name, flag in zip(PUBLISHED_DATES, self.tbd, strict=True)}
        years = {
            f"{name.removesuffix('Date')}Year": year for name, year in zip(PUBLISHED_DATES, self.years, strict=True)
        }
        return {**texts, **flags, **years}


def draw_published_dates(rng: Random, selling: str, construction: str | None, condo_like: bool) -> PublishedDates:
    """Years consistent with the statuses (a complete building was sold before it was built), as builders word
    them; a pending listing often has no sales date yet."""
    rand = rng.random
    if construction == "Complete":
        completion = 2021 + int(rand() * 6)
        construction_year = completion - 2 - int(rand() * 3)
        sales_year = construction_year - int(rand() * 2)
        tbd = (False, False, rand() < 0.02, False, False)
    else:
        sales_year = (2026 + int(rand() * 2)) if selling == "Pending" else 2021 + int(rand() * 6)
        construction_year = sales_year + int(rand() * 3)
        completion = construction_year + (2 + int(rand() * 3) if condo_like else 1 + int(rand() * 3))
        tbd = (
            rand() < 0.12,
            rand() < 0.07,
            rand() < 0.18,
            rand() < (0.25 if construction_year >= 2026 else 0.05),
            rand() < (0.35 if selling == "Pending" else 0.04),
        )
    estimated = completion + (1 if rand() < 0.2 and construction != "Complete" else 0)
    occupancy = max(completion - (int(rand() * 2) if condo_like else 0), construction_year + 1)
    years = (completion, estimated, occupancy, construction_year, sales_year)
    texts = [None if tbd[k] else _date_text(rng, years[k]) for k in range(5)]
    return PublishedDates(texts, tbd, [None if tbd[k] else years[k] for k in range(5)])
