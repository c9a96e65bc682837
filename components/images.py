"""Where the dashboard's pictures may come from: one check for every image it draws.

Streamlit's ``st.image`` reads a string that is not a URL as a path on this machine's disk, and fails on one
that is neither; a catalogue record's ``coverPhoto`` is somebody else's data. So every image goes through
:func:`safe_image_source` first: an absolute ``http(s)`` address with a host, or a small inline
``data:image/…;base64,`` picture, and nothing else.
"""

from __future__ import annotations

import re
from typing import Any, Literal
from urllib.parse import urlsplit

import streamlit as st

MAX_URL_CHARS = 4096
MAX_DATA_URL_CHARS = 1_500_000
"""About 1.1 MB of picture inline; anything bigger is not drawn."""
PLACEHOLDER = "No image"
_DATA_URL = re.compile(r"data:image/(?:png|jpeg|gif|webp);base64,[A-Za-z0-9+/]+={0,2}")
_FORBIDDEN = frozenset("<>\"'`\\")


def _clean(text: str) -> bool:
    """Printable ASCII only (no whitespace or control characters), none of the characters that end an attribute."""
    return all(32 < ord(char) < 127 and char not in _FORBIDDEN for char in text)


def safe_image_source(value: Any) -> str | None:
    """``value`` (without surrounding whitespace) if the dashboard may draw it as an image, else None.

    Accepted: an absolute ``http``/``https`` URL with a host and no user name, of at most ``MAX_URL_CHARS``;
    a ``data:image/(png|jpeg|gif|webp);base64,…`` URL of at most ``MAX_DATA_URL_CHARS``. Never a file path,
    ``file:``, ``javascript:``, inline SVG or anything else.
    """
    if not isinstance(value, str):
        return None
    value = value.strip()
    if value.startswith("data:"):
        return value if len(value) <= MAX_DATA_URL_CHARS and _DATA_URL.fullmatch(value) else None
    if not value or len(value) > MAX_URL_CHARS or not _clean(value):
        return None
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not value[len(parts.scheme) :].startswith("://"):
        return None
    if not parts.hostname or "@" in parts.netloc:
        return None
    return value


def draw_image(
    value: Any,
    *,
    caption: str | None = None,
    width: int | Literal["stretch", "content"] = "stretch",
    placeholder: str | None = PLACEHOLDER,
) -> bool:
    """Draws ``value`` as an image if :func:`safe_image_source` accepts it, else ``placeholder`` as a caption
    (nothing when None). Says whether the image was drawn."""
    source = safe_image_source(value)
    if source is None:
        if placeholder:
            st.caption(placeholder)
        return False
    st.image(source, caption=caption, width=width)
    return True
