"""Placeholder images for the catalogue's ``/media/...`` paths, drawn on the fly so nothing is fetched."""

from __future__ import annotations

import hashlib
import re
from xml.sax.saxutils import escape

MEDIA_PATH = re.compile(r"^(listings|profiles)/[A-Za-z0-9_-]{1,40}(/[A-Za-z0-9_.-]{1,60}){1,2}$")
PALETTE = ("#264653", "#2a9d8f", "#e9c46a", "#f4a261", "#e76f51", "#3d5a80", "#98c1d9", "#6d597a", "#b56576")


def placeholder_svg(path: str) -> str | None:
    """A deterministic SVG for a media path, or None when the path is not one the catalogue uses."""
    if not path.endswith(".svg") or not MEDIA_PATH.match(path):
        return None
    digest = hashlib.blake2b(path.encode(), digest_size=4).digest()
    background = PALETTE[digest[0] % len(PALETTE)]
    accent = PALETTE[digest[1] % len(PALETTE)]
    kind, record_id, *rest = path.removesuffix(".svg").split("/")
    label = escape(f"{record_id} · {' '.join(rest)}")
    if kind == "profiles":
        return (
            '<svg xmlns="http://www.w3.org/2000/svg" width="160" height="160" viewBox="0 0 160 160">'
            f'<rect width="160" height="160" rx="24" fill="{background}"/>'
            f'<circle cx="80" cy="70" r="34" fill="{accent}"/>'
            f'<text x="80" y="138" font-family="sans-serif" font-size="14" fill="#fff" text-anchor="middle">'
            f"{escape(record_id[:8])}</text></svg>"
        )
    return (
        '<svg xmlns="http://www.w3.org/2000/svg" width="640" height="400" viewBox="0 0 640 400">'
        f'<rect width="640" height="400" fill="{background}"/>'
        f'<rect x="220" y="90" width="200" height="230" fill="{accent}" opacity="0.85"/>'
        + "".join(
            f'<rect x="{240 + 45 * (i % 4)}" y="{110 + 40 * (i // 4)}" width="25" height="22" fill="#fff" '
            'opacity="0.7"/>'
            for i in range(20)
        )
        + f'<text x="320" y="370" font-family="sans-serif" font-size="22" fill="#fff" text-anchor="middle">'
        f"{label}</text></svg>"
    )
