"""Turning stored records into answers: version projection, retrieveAttributes, referrences, media URLs."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from precon.schema import (
    LISTING_FIELDS,
    LISTING_REFERENCE_FIELDS,
    LITE_FIELDS,
    PROFILES_OF_LISTING_FIELDS,
)
from precon.service.api.visibility import visible_attribute
from precon.service.errors import bad_request
from precon.service.media_links import MediaLinks
from precon.service.search.text import TextQuery, highlight_record
from precon.service.stores.records import reference_values
from precon.service.stores.types import CatalogueStore

ProfileTrim = Callable[[list[dict[str, Any]]], object]
"""Trims the ``listings`` of expanded profiles to the listings a call may see (see :mod:`precon.service.api.scope`)."""


def profile_object(record: dict[str, Any], media: MediaLinks) -> dict[str, Any]:
    """A profile as the ``profile`` operation answers it: ``id`` first, no ``objectID``."""
    out = {"id": record.get("id"), **{k: v for k, v in record.items() if k not in ("id", "objectID")}}
    media.profile(out)
    return out


def profile_search_object(record: dict[str, Any], media: MediaLinks) -> dict[str, Any]:
    """A profile as search results carry it: ``objectID`` first, no ``id``."""
    out = {"objectID": record.get("id"), **{k: v for k, v in record.items() if k not in ("id", "objectID")}}
    media.profile(out)
    return out


def reference_fields(names: Sequence[str], allowed: dict[str, str]) -> list[str]:
    """The fields ``referrences`` expands; other names are ignored, on every operation: real clients send
    ``referrences=neighbourhood,cityOrDistrict,...`` on every page load and read the results."""
    fields = [allowed[name] for name in names if name in allowed]
    return list(dict.fromkeys(fields))


def retrieved_names(names: Sequence[str]) -> list[str]:
    """``retrieveAttributes`` as names; ``*`` (alone or among others) means every attribute: no names."""
    return [] if "*" in names else list(names)


def expand_references(
    records: Iterable[dict[str, Any]],
    fields: Sequence[str],
    store: CatalogueStore,
    media: MediaLinks,
    trim_profiles: ProfileTrim | None = None,
) -> None:
    """Replaces each reference path in ``fields`` with the profile it names (a dangling path stays a path);
    ``trim_profiles``, when given, trims the ``listings`` of the profiles put in."""
    records = list(records)
    if not fields:
        return
    paths = {
        path
        for record in records
        for field in fields
        for path in reference_values(record.get(field))
        if isinstance(path, str)
    }
    profiles = {path: profile_object(record, media) for path, record in store.get_profiles(sorted(paths)).items()}
    if trim_profiles is not None:
        trim_profiles(list(profiles.values()))
    for record in records:
        for field in fields:
            if isinstance(record.get(field), list):
                record[field] = [
                    dict(profiles[p]) if isinstance(p, str) and p in profiles else p for p in record[field]
                ]


def project_listing(
    record: dict[str, Any], media: MediaLinks, lite: bool = False, retrieve: frozenset[str] | None = None
) -> dict[str, Any]:
    """A stored listing as answered: the version's and the requested fields, ``objectID`` after ``listingId``
    (first where there is none), media paths as URLs on the serving host."""
    out: dict[str, Any] = {}
    listing_id = record.get("listingId")
    for key, value in record.items():
        if (lite and key not in LITE_FIELDS) or (retrieve is not None and key not in retrieve):
            if key == "listingId":
                out["objectID"] = listing_id
            continue
        out[key] = value
        if key == "listingId":
            out["objectID"] = listing_id
    if "objectID" not in out:
        out = {"objectID": listing_id, **out}
    media.listing(out)
    return out


class ListingShaper:
    """Shapes the listings of one answer: the version's fields, the requested attributes and references."""

    def __init__(
        self,
        *,
        version: str,
        store: CatalogueStore,
        media: MediaLinks,
        retrieve: Sequence[str] = (),
        references: Sequence[str] = (),
        trim_profiles: ProfileTrim | None = None,
    ) -> None:
        self.lite = version == "v1-lite"
        self.trim_profiles = trim_profiles
        """Trims the ``listings`` of the profiles ``references`` expand (see ``scope.listing_shaper``)."""
        self.store = store
        self.media = media
        for name in retrieve:
            if name != "*":
                visible_attribute(version, name, "retrieveAttributes")
        known = set(LISTING_FIELDS) | store.listing_attribute_names()
        known.add("*")
        unknown = [name for name in retrieve if name not in known]
        if unknown:
            scope = "a v1-lite listing" if self.lite else "a listing"
            raise bad_request(
                f"retrieveAttributes: {', '.join(repr(n) for n in unknown)} "
                f"{'is not an attribute' if len(unknown) == 1 else 'are not attributes'} of {scope}"
            )
        retrieve = retrieved_names(retrieve)
        self.retrieve = frozenset(retrieve) if retrieve else None
        self.references = reference_fields(references, LISTING_REFERENCE_FIELDS)

    @property
    def whole(self) -> bool:
        """Whether listings are answered whole: every field (not ``v1-lite``, no ``retrieveAttributes``) and no
        references expanded, so that an answer can be made of the stored bytes (see
        :mod:`precon.service.api.splice`)."""
        return not self.lite and self.retrieve is None and not self.references

    @property
    def fields(self) -> frozenset[str] | None:
        """The top-level attributes of a stored listing its answers show (``listingId`` among them, for
        ``objectID``); None: all."""
        return None if self.retrieve is None else self.retrieve | {"listingId"}

    def _project(self, record: dict[str, Any]) -> dict[str, Any]:
        return project_listing(record, self.media, self.lite, self.retrieve)

    def shape(
        self,
        records: Sequence[dict[str, Any]],
        scores: Sequence[float | None] | None = None,
        highlight: TextQuery | bool | None = False,
        searchable: Sequence[str] = (),
    ) -> list[dict[str, Any]]:
        shaped = [self._project(record) for record in records]
        expand_references(shaped, self.references, self.store, self.media, self.trim_profiles)
        for index, out in enumerate(shaped):
            if scores is not None and scores[index] is not None:
                out["_score"] = scores[index]
            if highlight is not False:
                query = highlight if isinstance(highlight, TextQuery) else None
                out["_highlightResult"] = highlight_record(out, searchable, query)
        return shaped


def profiles_of_listing(record: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {name: list(reference_values(record.get(name))) for name in PROFILES_OF_LISTING_FIELDS}
    out["id"] = record.get("listingId")
    return out
