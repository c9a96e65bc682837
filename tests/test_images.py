"""Images the dashboard draws come only from web addresses or small inline pictures: never a file on this
machine, never ``javascript:``, and a bad address never breaks the page."""

from __future__ import annotations

import base64
import string
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from streamlit.elements.lib import image_utils

from components.images import MAX_DATA_URL_CHARS, MAX_URL_CHARS, safe_image_source
from precon.service.config import ServiceSettings
from precon.service.runtime import load
from precon.service.stores.sqlite.store import SQLiteStore
from tests.catalogues import generated_catalogue
from tests.dashboard_support import open_page, reset_caches

PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082"
    )
).decode()


# -- the one check -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        "https://cdn.example.com/a/cover.jpg",
        "http://localhost:8000/media/listings/x/cover.svg",
        "https://[2001:db8::1]:8443/p.png?w=400&h=300#x",
        "HTTPS://CDN.EXAMPLE.COM/A.PNG",
        f"data:image/png;base64,{PNG}",
        "data:image/jpeg;base64,/9j/4AAQ",
        "data:image/gif;base64,R0lGODlhAQABAAAAACw=",
        "data:image/webp;base64,UklGRg==",
    ],
)
def test_web_addresses_and_small_inline_pictures_are_drawn(value: str) -> None:
    assert safe_image_source(value) == value
    assert safe_image_source(f"  {value}\n") == value  # surrounding whitespace is not part of it


@pytest.mark.parametrize(
    "value",
    [
        None,
        "",
        "   ",
        42,
        {"url": "https://x.example/a.png"},
        "/etc/passwd",
        "etc/passwd",
        "./cover.png",
        "~/secret.png",
        "C:\\Windows\\win.ini",
        "\\\\server\\share\\a.png",
        "file:///etc/passwd",
        "FILE:///etc/passwd",
        "javascript:alert(1)",
        "JavaScript:alert(1)",
        " javascript:alert(1)",
        "vbscript:msgbox(1)",
        "data:text/html;base64,PHNjcmlwdD4=",
        "data:image/svg+xml;base64,PHN2Zz48L3N2Zz4=",
        "data:image/png,rawbytes",
        "data:image/png;base64,not base64!",
        "<svg onload=alert(1)></svg>",
        "https:/cdn.example.com/a.png",
        "https:cdn.example.com/a.png",
        "//cdn.example.com/a.png",
        "https://",
        "https:///a.png",
        "https://user:pw@cdn.example.com/a.png",
        "https://cdn.example.com:99999/a.png",
        "https://cdn.example.com/a b.png",
        "https://cdn.example.com/a\nb.png",
        "https://cdn.example.com/a\x00.png",
        "https://cdn.example.com/a\x7f.png",
        "https://cdn.example.com/\u202egnp.exe",
        'https://cdn.example.com/a".png',
        "https://cdn.example.com/<a>.png",
        "https://cdn.example.com/" + "a" * MAX_URL_CHARS,
        "data:image/png;base64," + "A" * MAX_DATA_URL_CHARS,
        "ftp://cdn.example.com/a.png",
        "blob:https://cdn.example.com/uuid",
        "media/listings/x/cover.svg",
    ],
)
def test_everything_else_is_not(value: Any) -> None:
    assert safe_image_source(value) is None


URL_CHARS = string.ascii_letters + string.digits + "-._~!$&()*+,;=:@/%?#"
hosts = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?(\.[a-z]{2,8}){1,3}", fullmatch=True)


@settings(max_examples=500, deadline=None)
@given(text=st.text(max_size=80))
def test_property_any_text_is_either_refused_or_a_web_address_or_inline_picture(text: str) -> None:
    source = safe_image_source(text)
    if source is None:
        return
    assert source == text.strip()
    assert source.startswith(("http://", "https://", "data:image/")) or source[:8].lower() in ("http://", "https://")
    assert all(32 < ord(c) < 127 for c in source)


@settings(max_examples=300, deadline=None)
@given(host=hosts, path=st.text(alphabet=URL_CHARS, max_size=60), scheme=st.sampled_from(["http", "https"]))
def test_property_plain_web_addresses_are_kept(host: str, path: str, scheme: str) -> None:
    url = f"{scheme}://{host}/{path}"
    assert safe_image_source(url) == url


@settings(max_examples=500, deadline=None)
@given(
    host=hosts,
    path=st.text(alphabet=URL_CHARS, max_size=40),
    bad=st.sampled_from([chr(c) for c in range(33)] + ["\x7f", "\x85", "\xa0", "\u2028", "\u202e", "\ufeff", '"']),
    where=st.floats(0.05, 1),
)
def test_property_a_control_character_or_space_inside_refuses_the_address(
    host: str, path: str, bad: str, where: float
) -> None:
    url = f"https://{host}/{path}"
    position = max(1, int(where * len(url)))
    poisoned = url[:position] + bad + url[position:]
    if poisoned.strip() != poisoned:
        poisoned = "x" + poisoned  # whitespace at an end is trimmed; keep the bad character inside
    assert safe_image_source(poisoned) is None


@settings(max_examples=300, deadline=None)
@given(
    prefix=st.sampled_from(["", "/", "./", "../", "~/", "file://", "file:///", "javascript:", "C:\\", "data:"]),
    rest=st.text(alphabet=URL_CHARS + "\\", max_size=40),
)
def test_property_paths_and_other_schemes_are_never_drawn(prefix: str, rest: str) -> None:
    assert safe_image_source(prefix + rest) is None


@settings(max_examples=200, deadline=None)
@given(kind=st.sampled_from(["png", "jpeg", "gif", "webp"]), payload=st.binary(max_size=300))
def test_property_inline_pictures_of_the_four_kinds_are_kept(kind: str, payload: bytes) -> None:
    encoded = base64.b64encode(payload).decode()
    value = f"data:image/{kind};base64,{encoded}"
    assert safe_image_source(value) == (value if encoded else None)
    assert safe_image_source(f"data:image/svg+xml;base64,{encoded}") is None


# -- the pages, over a catalogue whose pictures are hostile ---------------------------------------------------


SECRET_BYTES = base64.b64decode(PNG)


def hostile_values(secret: Path) -> list[str]:
    return [
        "/etc/passwd",
        "file:///etc/passwd",
        "javascript:alert(1)",
        str(secret),
        "<svg onload=alert(1)></svg>",
        "https://cdn.example.com/a\r\nb.png",
    ]


@pytest.fixture
def hostile_catalogue(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The dashboard on its embedded service over a catalogue of its own, where every listing's cover, photos
    and floor plans name a file on this machine or a ``javascript:`` address; the ids of the listings."""
    secret = tmp_path / "secret.png"
    secret.write_bytes(SECRET_BYTES)
    values = hostile_values(secret)
    data_dir = tmp_path / "data"
    made = generated_catalogue(24, 7)
    listings = []
    for number, record in enumerate(made.listings):
        bad = values[number % len(values)]
        record = dict(record)
        record["coverPhoto"] = {**(record.get("coverPhoto") or {}), "url": bad}
        record["photos"] = [{"name": "p.png", "url": value, "tags": ["x"]} for value in values]
        record["floorPlans"] = [
            {**plan, "image": {"name": "plan.png", "url": values[i % len(values)]}}
            for i, plan in enumerate(record.get("floorPlans") or [])
        ]
        listings.append(record)
    store = SQLiteStore(ServiceSettings(data_dir=data_dir).catalogue_path)
    load(store, listings, made.profiles)
    store.close()
    for name in ("PRECON_API_URL", "PRECON_API_KEY", "PRECON_PRODUCT_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PRECON_SERVICE_DATA_DIR", str(data_dir))
    monkeypatch.setenv("PRECON_CACHE_URL", "memory:")
    reset_caches()
    yield [str(r["listingId"]) for r in listings]
    reset_caches()


@pytest.fixture
def drawn_images(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every value Streamlit is asked to turn into an image address (where a path would be read from disk)."""
    asked: list[Any] = []
    real = image_utils.image_to_url

    def spy(image: Any, *args: Any, **kwargs: Any) -> str:
        asked.append(image)
        return real(image, *args, **kwargs)

    monkeypatch.setattr(image_utils, "image_to_url", spy)
    return asked


def assert_only_safe(asked: list[Any], frames: list[Any]) -> None:
    for value in asked:
        assert isinstance(value, str) and safe_image_source(value) == value, value
    for frame in frames:
        for column in ("cover", "image", "logo"):
            if column in frame.columns:
                for value in frame[column]:
                    assert value is None or value != value or safe_image_source(value) == value, value


def test_the_listing_page_draws_no_file_and_does_not_break(
    hostile_catalogue: list[str], drawn_images: list[Any]
) -> None:
    for listing_id in hostile_catalogue[:6]:  # one listing for each hostile cover
        app = open_page("views/listing.py", {"id": listing_id})
        assert not app.exception, [e.value for e in app.exception]
        assert app.title and app.title[0].value != "Listing not found"
        assert app.metric, "the page was drawn below its header"
        assert any("No photos of this listing yet" in i.value for i in app.info)
        assert_only_safe(drawn_images, [frame.value for frame in app.dataframe])
    assert drawn_images == []  # nothing hostile reached st.image, and nothing else was there to draw


@pytest.mark.usefixtures("hostile_catalogue")
def test_the_search_cards_draw_placeholders_and_no_file(drawn_images: list[Any]) -> None:
    app = open_page("views/search.py", {"view": "cards"})
    assert not app.exception, [e.value for e in app.exception]
    cards = [m.value for m in app.markdown if "precon-card-title" in m.value]
    assert cards, "no cards were drawn"
    assert sum(c.value == "No image" for c in app.caption) == len(cards)
    assert drawn_images == []
    table = open_page("views/search.py")
    assert not table.exception, [e.value for e in table.exception]
    assert_only_safe(drawn_images, [frame.value for frame in table.dataframe])
