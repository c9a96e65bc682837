"""Whether a listing's completion is behind it: a building that is complete, or whose completion date (its latest
estimate, else its stated date or year) has passed, is not "upcoming" and is no "soonest completion".

Builders word dates loosely ("Spring 2028", "Q4 2030", "Late 2027", "August 2026", "2029"): a date is taken to
have passed only once the last day it can mean has, so a date is never called passed too early.
"""

from __future__ import annotations

import calendar
import re
from datetime import date

from precon.client.models import Listing

COMPLETE = "Complete"
"""The construction status of a finished building."""
MONTHS = {
    name: number
    for number, name in enumerate(
        ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
         "november", "december"),
        start=1,
    )
}  # fmt: skip
PERIOD_LAST_MONTHS = {"q1": 3, "q2": 6, "q3": 9, "q4": 12, "winter": 3, "early": 4, "spring": 6, "mid": 8,
                      "summer": 9, "fall": 12, "autumn": 12, "late": 12}  # fmt: skip
"""The last month a period can mean ("Winter 2026" as builders use it: the start of the year)."""


def last_day(text: str | None) -> date | None:
    """The last day ``text`` can mean: ``2027-06-30`` that day, ``August 2026`` 31 August, ``Q4 2030`` and
    ``2029`` 31 December; None where it names no year."""
    found = re.search(r"\b(\d{4})(?:-(\d{1,2})(?:-(\d{1,2}))?)?\b", text or "")
    if not found:
        return None
    year = int(found.group(1))
    if found.group(2) and found.group(3):
        try:
            return date(year, int(found.group(2)), int(found.group(3)))
        except ValueError:
            return None
    month = int(found.group(2)) if found.group(2) and 1 <= int(found.group(2)) <= 12 else None
    for word in re.findall(r"[a-z0-9]+", (text or "").lower()):
        if month is not None:
            break
        named = next((n for name, n in MONTHS.items() if len(word) >= 3 and name.startswith(word)), None)
        month = named or PERIOD_LAST_MONTHS.get(word)
    month = month or 12
    return date(year, month, calendar.monthrange(year, month)[1])


def completion_end(listing: Listing) -> date | None:
    """The last day the listing's completion can mean: its latest estimate, else its completion date, else its
    year (None when to be determined or not given)."""
    if listing.estimatedCompletionDate and not listing.estimatedCompletionDateTBD:
        found = last_day(listing.estimatedCompletionDate)
        if found is not None:
            return found
    if listing.completionDateTBD:
        return None
    found = last_day(listing.completionDate)
    if found is None and listing.completionYear:
        found = date(int(listing.completionYear), 12, 31)
    return found


def is_complete(listing: Listing) -> bool:
    return listing.constructionStatus == COMPLETE


def completion_passed(listing: Listing, today: date) -> bool:
    """Whether the listing's completion is behind it: complete, or its completion date over by ``today``."""
    end = completion_end(listing)
    return is_complete(listing) or (end is not None and end < today)


def completion_note(listing: Listing, today: date) -> str | None:
    """What to say beside a completion date behind it: "completed" or "completion date passed"; None otherwise."""
    if is_complete(listing):
        return "completed"
    end = completion_end(listing)
    return "completion date passed" if end is not None and end < today else None
