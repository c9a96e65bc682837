"""Where a listing matched the search words, in people's words: read from the service's ``_highlightResult``.

A text search keeps a listing when every word is found in one of its searchable fields (the name, the summary, the
amenities, the address ...), and most of them are not on a results table. The service marks each field's matched
words with ``<em>`` (contract: "Highlighting"), so the dashboard can say why a listing is there:
``Name “Parkhill” · Amenities “Park”``. Nothing here renders HTML: the marked text is read out as plain text.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from precon.dashboard.labels import field_label
from precon.schema import SEARCHABLE_LISTING_FIELDS

MARKED = re.compile(r"<em>(.*?)</em>", re.DOTALL)
MATCHED_LEVELS = frozenset({"partial", "full"})
MAX_WORDS_PER_FIELD = 3


@dataclass(frozen=True)
class MatchedField:
    """One field the words were found in, and the text found there (as written in the listing)."""

    field: str
    found: tuple[str, ...]

    @property
    def label(self) -> str:
        return field_label(self.field)


def _entries(value: Any) -> list[Mapping[str, Any]]:
    """A field's highlight entries: one for a text field, one per value for an array field."""
    if isinstance(value, Mapping):
        return [value]
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [entry for entry in value if isinstance(entry, Mapping)]
    return []


def _found_in(entry: Mapping[str, Any]) -> list[str]:
    if entry.get("matchLevel") not in MATCHED_LEVELS:
        return []
    marked = entry.get("value")
    found = [html.unescape(text).strip() for text in MARKED.findall(marked)] if isinstance(marked, str) else []
    if not any(found):  # a service that marks nothing but says which words matched
        words = entry.get("matchedWords")
        found = [w for w in words if isinstance(w, str)] if isinstance(words, list) else []
    return [text for text in found if text]


def matched_fields(highlight: Mapping[str, Any] | None) -> list[MatchedField]:
    """The fields the search words were found in, in the order of the searchable fields (the name first), each
    with the distinct texts found there (case aside, at most :data:`MAX_WORDS_PER_FIELD`)."""
    if not isinstance(highlight, Mapping):
        return []
    known = [f for f in SEARCHABLE_LISTING_FIELDS if f in highlight]
    others = sorted(f for f in highlight if f not in SEARCHABLE_LISTING_FIELDS and isinstance(f, str))
    matched = []
    for name in known + others:
        texts: dict[str, str] = {}
        for entry in _entries(highlight[name]):
            for text in _found_in(entry):
                texts.setdefault(text.casefold(), text)
        if texts:
            matched.append(MatchedField(name, tuple(list(texts.values())[:MAX_WORDS_PER_FIELD])))
    return matched


def matched_summary(highlight: Mapping[str, Any] | None, most: int = 3, shown: tuple[str, ...] = ()) -> str:
    """``Name “Parkhill” · Amenities “Park”`` (the first ``most`` fields, then how many more); blank when the
    highlights say nothing matched. The fields ``shown`` beside it (a table's name column) come last and are named
    without their text: ``Summary “park” · Name``."""
    fields = matched_fields(highlight)
    fields = [m for m in fields if m.field not in shown] + [m for m in fields if m.field in shown]
    parts = [
        m.label if m.field in shown else f"{m.label} " + ", ".join(f"“{text}”" for text in m.found)
        for m in fields[:most]
    ]
    if len(fields) > most:
        parts.append(f"+{len(fields) - most} more")
    return " · ".join(parts)
