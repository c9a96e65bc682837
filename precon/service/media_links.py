"""Where a record keeps its media, and the two spellings of a media path.

The catalogue stores the paths of the media it serves itself as ``/media/...``; answers write them as absolute
URLs on the serving host (:class:`MediaLinks`), and a copy of one of our deployments (a mirror) turns them back
into paths (:class:`MediaPaths`), so that a record fetched from a deployment and the same record stored there
compare equal. Media anywhere else (another host's URLs) are left as they are, both ways.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

MEDIA_PREFIX = "/media/"

UrlMap = Callable[[Any], Any]


def map_image(value: Any, url: UrlMap) -> Any:
    """An image object (``{"url": ...}``) with its URL mapped; anything else as it is."""
    if isinstance(value, dict) and "url" in value:
        return {**value, "url": url(value["url"])}
    return value


def map_listing_media(record: dict[str, Any], url: UrlMap) -> None:
    """Maps, in place, the URL of each medium of a listing: logo, cover photo, photos and plan images."""
    for name in ("logo", "coverPhoto"):
        if name in record:
            record[name] = map_image(record[name], url)
    if isinstance(record.get("photos"), list):
        record["photos"] = [map_image(photo, url) for photo in record["photos"]]
    if isinstance(record.get("floorPlans"), list):
        record["floorPlans"] = [
            {**plan, "image": map_image(plan["image"], url)} if isinstance(plan, dict) and "image" in plan else plan
            for plan in record["floorPlans"]
        ]


def map_profile_media(record: dict[str, Any], url: UrlMap) -> None:
    """Maps, in place, a profile's logo URL."""
    if "logo" in record:
        record["logo"] = url(record["logo"])


class MediaLinks:
    """Stored media paths (``/media/...``) become absolute URLs on the serving host."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url.rstrip("/")

    def url(self, value: Any) -> Any:
        if isinstance(value, str) and value.startswith(MEDIA_PREFIX):
            return self.base_url + value
        return value

    def image(self, value: Any) -> Any:
        return map_image(value, self.url)

    def listing(self, record: dict[str, Any]) -> None:
        map_listing_media(record, self.url)

    def profile(self, record: dict[str, Any]) -> None:
        map_profile_media(record, self.url)


class MediaPaths:
    """The inverse of :class:`MediaLinks` for one deployment: its media URLs (``<base>/media/...``) become the
    paths its catalogue stores."""

    def __init__(self, base_url: str) -> None:
        self.prefix = base_url.rstrip("/") + MEDIA_PREFIX

    def url(self, value: Any) -> Any:
        if isinstance(value, str) and value.startswith(self.prefix):
            return MEDIA_PREFIX + value[len(self.prefix) :]
        return value

    def listing(self, record: dict[str, Any]) -> None:
        map_listing_media(record, self.url)

    def profile(self, record: dict[str, Any]) -> None:
        map_profile_media(record, self.url)
