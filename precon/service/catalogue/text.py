"""Small text helpers of the generator: JSON-like numbers, ASCII slugs, English lists."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence


def json_number(value: float) -> int | float:
    """A whole number as int, a fractional one as float (what JSON written by JavaScript looks like)."""
    as_int = int(value)
    return as_int if as_int == value else value


def ascii_fold(text: str) -> str:
    """``text`` in lower-case ASCII, accents dropped ("Québec" -> "quebec")."""
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii").lower()


def slug(text: str) -> str:
    """ASCII lower-case letters and digits only (for domains and file names)."""
    return re.sub(r"[^a-z0-9]+", "", ascii_fold(text))


def join_words(items: Sequence[str]) -> str:
    """ "a", "a and b", "a, b and c"."""
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} and {items[-1]}"
