"""A page's state in its address: typed readers and writers of ``st.query_params``, so a copied link reopens the view.

Every reader takes what it finds in the URL and quietly falls back to the default when the value is missing or
unreadable (a hand-edited link must never break a page). Every writer removes the parameter when the value is
the default or empty, to keep links short.

Encodings (pure functions, usable without Streamlit):

* a list is comma-separated: ``type=Condo,Townhouse``; a comma or backslash inside a value is escaped with a
  backslash (``Oak\\, Maple``), so any text survives the round trip;
* a numeric range is ``lo..hi``; either side may be left out (``price=400000..``, ``beds=..3``);
* an int is its decimal text.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

import streamlit as st

T = TypeVar("T")
Range = tuple[float | None, float | None]
RANGE_SEPARATOR = ".."


# -- encodings -------------------------------------------------------------------------------------------------


def encode_list(values: Iterable[str]) -> str:
    """``["Oak, Maple", "Loft"]`` → ``Oak\\, Maple,Loft`` (empty values left out)."""
    return ",".join(v.replace("\\", "\\\\").replace(",", "\\,") for v in values if v)


def decode_list(text: str | None) -> list[str]:
    """The values of :func:`encode_list`'s text, without blanks or duplicates, in their order."""
    if not text:
        return []
    values: list[str] = []
    current: list[str] = []
    escaped = False
    for char in text:
        if escaped:
            current.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == ",":
            values.append("".join(current))
            current = []
        else:
            current.append(char)
    values.append("".join(current))
    return list(dict.fromkeys(v.strip() for v in values if v.strip()))


def _number_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _number(text: str) -> float | None:
    try:
        value = float(text.strip())
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def encode_range(low: float | None, high: float | None) -> str:
    """``(400000, None)`` → ``400000..``; ``(None, None)`` → ``""``."""
    if low is None and high is None:
        return ""
    return (
        (_number_text(low) if low is not None else "")
        + RANGE_SEPARATOR
        + (_number_text(high) if high is not None else "")
    )


def decode_range(text: str | None) -> Range:
    """``"1.5..3"`` → ``(1.5, 3.0)``; a missing or unreadable side is None; a reversed range is put in order."""
    if not text or RANGE_SEPARATOR not in text:
        single = _number(text) if text else None
        return (single, single)
    low_text, _, high_text = text.partition(RANGE_SEPARATOR)
    low, high = _number(low_text) if low_text else None, _number(high_text) if high_text else None
    if low is not None and high is not None and low > high:
        low, high = high, low
    return (low, high)


# -- readers ---------------------------------------------------------------------------------------------------


def _raw(name: str) -> str | None:
    try:
        value = st.query_params.get(name)
    except Exception:  # an odd address reads as no value, never as a broken page
        return None
    return value if isinstance(value, str) else None


def get_str(name: str, default: str = "", *, max_length: int | None = None) -> str:
    value = (_raw(name) or "").strip()
    if not value:
        return default
    return value[:max_length] if max_length else value


def get_choice(name: str, choices: Sequence[T], default: T) -> T:
    """The value if it is one of ``choices`` (compared as text), else the default."""
    value = _raw(name)
    for choice in choices:
        if str(choice) == value:
            return choice
    return default


def get_int(name: str, default: int, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """The integer, clamped into ``[minimum, maximum]``; the default when it is not an integer."""
    value = _raw(name)
    try:
        number = int((value or "").strip())
    except ValueError:
        return default
    if minimum is not None:
        number = max(minimum, number)
    if maximum is not None:
        number = min(maximum, number)
    return number


def get_list(name: str, convert: Callable[[str], str] | None = None) -> list[str]:
    """A comma-separated list (see :func:`encode_list`); ``convert`` maps each value read (ids to paths, say)."""
    values = decode_list(_raw(name))
    return [convert(v) for v in values] if convert else values


def get_range(name: str) -> Range:
    """A ``lo..hi`` range; ``(None, None)`` when absent or unreadable."""
    return decode_range(_raw(name))


# -- writers ---------------------------------------------------------------------------------------------------


def _put(name: str, text: str, default_text: str = "") -> None:
    if not text or text == default_text:
        st.query_params.pop(name, None)
    elif _raw(name) != text:
        st.query_params[name] = text


def set_str(name: str, value: str | None, default: str = "") -> None:
    _put(name, (value or "").strip(), default)


def set_int(name: str, value: int, default: int) -> None:
    _put(name, str(int(value)), str(int(default)))


def set_list(name: str, values: Iterable[str], convert: Callable[[str], str] | None = None) -> None:
    """Writes a list (``convert`` maps each value written: paths to ids, say); an empty list removes it."""
    _put(name, encode_list(convert(v) for v in values) if convert else encode_list(values))


def set_range(name: str, low: float | None, high: float | None) -> None:
    _put(name, encode_range(low, high))


def remove(*names: str) -> None:
    for name in names:
        st.query_params.pop(name, None)
