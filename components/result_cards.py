"""Listings as cards, with the words that matched the search highlighted.

The service's ``_highlightResult`` values are HTML: matched words wrapped in ``<em>``, everything else escaped.
They are never passed on as they come. :func:`highlight_runs` reads a value into runs of plain text (unescaped)
and whether each matched, and refuses a value holding any markup besides ``<em>``; the card is then rebuilt
from those runs with every character of text escaped again (:func:`safe_text`), so the only tags on the page
are the dashboard's own. A refused value falls back to the listing's plain field, escaped the same way.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import streamlit as st

from components.formatting import MISSING, completion, listing_url, number_range, price_range, size_range
from components.images import draw_image
from precon.client.models import Listing
from precon.dashboard.matched_words import matched_summary

Run = tuple[str, bool]
"""A piece of text and whether it matched the search."""

_EM = re.compile(r"<(/?)em>")
_SPACES = re.compile(r"\s+")
_MARKDOWN_SIGNIFICANT = str.maketrans({c: f"&#{ord(c)};" for c in "\\`*_{}[]()#+-.!|~$:<>&\"'="})
SUMMARY_CHARS = 320
CARDS_PER_ROW = 2
MUTED = "color: rgba(49, 51, 63, 0.65); font-size: 0.9em"
SMALL = "font-size: 0.9em; margin: 0.25em 0"
SMALLER = "font-size: 0.85em"


def highlight_runs(value: Any) -> list[Run] | None:
    """The runs of a highlighted value (``"a <em>b</em>"`` → ``[("a ", False), ("b", True)]``), text unescaped.

    None when the value is not a string, or holds markup other than ``<em>`` and ``</em>`` or unbalanced ones:
    what the contract promises is then not what came, and the caller shows the plain field instead.
    """
    if not isinstance(value, str):
        return None
    runs: list[Run] = []
    position, inside = 0, False
    for tag in _EM.finditer(value):
        closing = tag.group(1) == "/"
        if closing != inside:
            return None
        runs.append((value[position : tag.start()], inside))
        inside, position = not inside, tag.end()
    if inside:
        return None
    runs.append((value[position:], False))
    if any("<" in text or ">" in text for text, _ in runs):
        return None
    return [(html.unescape(text), matched) for text, matched in runs if text]


def safe_text(text: str) -> str:
    """Text for a ``st.markdown(..., unsafe_allow_html=True)`` body that can only ever read as text: HTML-escaped,
    and every character Markdown or Streamlit's directives give a meaning written as a character reference."""
    return _SPACES.sub(" ", text).translate(_MARKDOWN_SIGNIFICANT)


def runs_html(runs: Sequence[Run], limit: int | None = None) -> str:
    """The runs as safe HTML, matches in ``<mark>``; cut at ``limit`` characters of text (with an ellipsis)."""
    parts: list[str] = []
    used = 0
    for text, matched in runs:
        if limit is not None and used + len(text) > limit:
            text = text[: max(limit - used, 0)].rstrip() + "…"
            parts.append(f"<mark>{safe_text(text)}</mark>" if matched else safe_text(text))
            break
        used += len(text)
        parts.append(f"<mark>{safe_text(text)}</mark>" if matched else safe_text(text))
    return "".join(parts)


def _field(listing: Listing, name: str) -> Any:
    return (listing.highlight or {}).get(name)


def highlighted(listing: Listing, name: str, plain: str | None) -> list[Run]:
    """A field's runs from ``_highlightResult`` when it is there and sound, else its plain text as one run."""
    entry = _field(listing, name)
    runs = highlight_runs(entry.get("value")) if isinstance(entry, dict) else None
    if runs is None:
        return [(plain, False)] if plain else []
    return runs


def matched_values(listing: Listing, name: str) -> list[list[Run]]:
    """The values of an array field (amenities, neighbourhood) that matched the search, as runs."""
    entries = _field(listing, name)
    if not isinstance(entries, list):
        return []
    found = []
    for entry in entries:
        if isinstance(entry, dict) and entry.get("matchLevel") in ("partial", "full"):
            runs = highlight_runs(entry.get("value"))
            if runs:
                found.append(runs)
    return found


def array_runs(listing: Listing, name: str, plain: Sequence[str]) -> list[list[Run]]:
    """Each value of an array field as runs: highlighted when the service's highlights are there and sound."""
    entries = _field(listing, name)
    if isinstance(entries, list) and len(entries) == len(plain):
        runs = [highlight_runs(e.get("value")) if isinstance(e, dict) else None for e in entries]
        if all(r is not None for r in runs):
            return [r for r in runs if r]
    return [[(value, False)] for value in plain if value]


def _facts(listing: Listing, builder_names: Mapping[str, str]) -> list[str]:
    price = price_range(listing.startPrice or None, listing.endPrice or None)
    if price == "Contact for pricing" and not listing.contactForPricing:
        price = MISSING
    facts = [f"<b>{safe_text(price)}</b>"]
    if listing.averagePricePerSqFeet:
        facts.append(safe_text(f"${listing.averagePricePerSqFeet:,.0f}/sq ft"))
    beds, baths = number_range(listing.minBeds, listing.maxBeds), number_range(listing.minBaths, listing.maxBaths)
    if beds != MISSING:
        facts.append(safe_text(f"{beds} beds"))
    if baths != MISSING:
        facts.append(safe_text(f"{baths} baths"))
    size = size_range(listing.minSize, listing.maxSize)
    if size != MISSING:
        facts.append(safe_text(f"{size} sq ft"))
    facts.append(safe_text(f"Completion {completion(listing)}"))
    builders = [builder_names.get(b, "") if isinstance(b, str) else (b.name or "") for b in listing.builders]
    builders = [b for b in builders if b]
    if builders:
        facts.append(safe_text("By " + ", ".join(builders)))
    return facts


def card_html(
    listing: Listing, builder_names: Mapping[str, str] | None = None, matched: str = "", link: bool = True
) -> str:
    """The text of one card: name (linking to the listing page), place, status, facts, summary, matches."""
    name_runs = highlighted(listing, "name", listing.name or listing.id or "Unnamed listing")
    href = html.escape(listing_url(listing.id), quote=True)
    place_runs = highlighted(listing, "cityOrDistrict", listing.cityOrDistrict)
    neighbourhood = array_runs(listing, "neighbourhood", listing.neighbourhood)
    status = " · ".join(s for s in (", ".join(listing.type), listing.sellingStatus, listing.constructionStatus) if s)
    place = " · ".join(runs_html(runs) for runs in [place_runs, *neighbourhood] if runs)
    title = (
        f'<a href="{href}" target="_self"><b>{runs_html(name_runs)}</b></a>'
        if link
        else f"<b>{runs_html(name_runs)}</b>"
    )
    lines = [
        f'<div class="precon-card-title">{title}</div>',
        f'<div style="{MUTED}">{place}</div>',
        f'<div style="{MUTED}">{safe_text(status)}</div>' if status else "",
        f'<div style="{SMALL}">' + " · ".join(_facts(listing, builder_names or {})) + "</div>",
        f'<div style="{SMALL}"><b>{safe_text(matched)}</b></div>' if matched else "",
    ]
    summary = highlighted(listing, "summary", listing.summary)
    if summary:
        lines.append(f'<div style="{SMALLER}">{runs_html(summary, SUMMARY_CHARS)}</div>')
    amenities = matched_values(listing, "amenities")
    if amenities:
        lines.append(f'<div style="{SMALLER}">Amenities: ' + ", ".join(runs_html(r) for r in amenities) + "</div>")
    found = matched_summary(listing.highlight)
    if found:  # the street, the address, a summary's far end: not all of it is on the card
        lines.append(f'<div style="{SMALLER}">Matched in: {safe_text(found)}</div>')
    return "\n".join(line for line in lines if line)


def result_cards(
    listings: Sequence[Listing],
    builder_names: Mapping[str, str] | None = None,
    *,
    on_open: Callable[[str], None] | None = None,
    matched: Callable[[Any], str] | None = None,
) -> None:
    """The listings as bordered cards, two to a row: cover image beside the text. With ``on_open``, each card has
    an "Open listing" button that calls it (the listing opens in this tab, the session kept); else the name links."""
    for start in range(0, len(listings), CARDS_PER_ROW):
        row = st.columns(CARDS_PER_ROW)
        for column, listing in zip(row, listings[start : start + CARDS_PER_ROW], strict=False):
            with column, st.container(border=True):
                picture, text = st.columns([1, 2.2], vertical_alignment="top")
                with picture:
                    draw_image(listing.coverPhoto.url if listing.coverPhoto else None)
                with text:
                    said = matched(listing.matched_floor_plans) if matched else ""
                    st.markdown(card_html(listing, builder_names, said, on_open is None), unsafe_allow_html=True)
                    if on_open is not None and listing.id:
                        opened = st.button(
                            "Open listing",
                            key=f"card_open_{listing.id}",
                            icon=":material/open_in_new:",
                            type="tertiary",
                        )
                        if opened:  # in the run, not a callback: a page switch is allowed only here
                            on_open(listing.id)
