"""Reading catalogue records from JSON or NDJSON, as the production service returns them.

Each record is classified as a listing or a profile and checked; a bad one is reported with its line and
skipped, and the rest still load.

Floor-plan ids are unique across the catalogue (clients name files after them): a listing whose plans repeat an
id, or that carries an id another listing holds (in the store, or earlier in the same file), is refused. So is one
whose units repeat a unit number within a plan (a unit is known by its plan and number).

:func:`import_file` writes a file's records into a store. Into PostgreSQL the whole import is one transaction,
under the store's write lock (imports from several replicas run one after the other, none losing the other's
writes): all of it is committed or none, and the webhook events of its changes are published once, by the
process that ran it, after the commit. Into SQLite each batch is a transaction of its own.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from precon.client.models import PROFILE_COLLECTIONS, Listing, Profile
from precon.service.stores.derived import with_plan_ids
from precon.service.stores.records import nul_in

if TYPE_CHECKING:
    from precon.service.stores.postgres.store import PostgresCatalogueStore
    from precon.service.stores.sqlite.store import SQLiteStore


@dataclass
class ImportReport:
    listings: list[dict[str, Any]] = field(default_factory=list)
    profiles: list[dict[str, Any]] = field(default_factory=list)
    problems: list[tuple[int, str]] = field(default_factory=list)
    """(line, what is wrong) for every record skipped, in line order."""


PlanHolders = Callable[[Iterable[str]], dict[str, list[str]]]
"""For some floor-plan ids, the ids of the stored listings holding each (``SQLiteStore.listings_holding_plans``)."""


def _plan_ids(listing: dict[str, Any]) -> list[tuple[int, str]]:
    """(position from 1, id) of every plan of a checked listing that carries a text id."""
    plans = listing.get("floorPlans")
    if not isinstance(plans, list):
        return []
    return [
        (position, plan["id"])
        for position, plan in enumerate(plans, start=1)
        if isinstance(plan, dict) and isinstance(plan.get("id"), str)
    ]


def _refuse_repeated_plan_ids(listing: dict[str, Any]) -> None:
    """Raises ValueError naming the first id two plans of the listing share, and their positions."""
    positions: dict[str, list[int]] = {}
    for position, plan_id in _plan_ids(listing):
        positions.setdefault(plan_id, []).append(position)
    for plan_id, where in positions.items():
        if len(where) > 1:
            raise ValueError(
                f"listing {listing['listingId']}: floor plan id {plan_id!r} is repeated "
                f"(floorPlans positions {', '.join(map(str, where))}); plan ids must be unique"
            )


def _refuse_repeated_unit_numbers(listing: dict[str, Any]) -> None:
    """Raises ValueError naming the first unit number two units of one floor plan share: a unit is known by its plan
    and its number (its history, its alerts), so two of them under one number could not be told apart."""
    plans = listing.get("floorPlans")
    for plan_position, plan in enumerate(plans if isinstance(plans, list) else [], start=1):
        units = plan.get("units") if isinstance(plan, dict) else None
        positions: dict[str, list[int]] = {}
        for unit_position, unit in enumerate(units if isinstance(units, list) else [], start=1):
            number = unit.get("unitNumber") if isinstance(unit, dict) else None
            if isinstance(number, str | int) and not isinstance(number, bool) and str(number).strip():
                positions.setdefault(str(number).strip(), []).append(unit_position)
        for number, where in positions.items():
            if len(where) > 1:
                name = plan.get("name") or plan.get("id") or ""
                raise ValueError(
                    f"listing {listing['listingId']}: floor plan {name!r} (floorPlans position {plan_position}) "
                    f"repeats unit number {number!r} (units positions {', '.join(map(str, where))}); a unit is "
                    "known by its plan and number, which must be unique within the plan"
                )


def classify(record: Any) -> tuple[str, dict[str, Any]]:
    """``("listing", record)`` or ``("profile", record)``; raises ValueError saying why neither."""
    if not isinstance(record, dict):
        raise ValueError(f"expected a JSON object, got {type(record).__name__}")
    holder = nul_in(record)
    if holder is not None:
        raise ValueError(f"{holder}: holds a NUL character, which no value may")
    path = record.get("path")
    if record.get("listingId") or (isinstance(path, str) and path.startswith("Listings/")):
        listing_id = record.get("listingId") or record.get("objectID") or path.split("/", 1)[1]
        if not isinstance(listing_id, str) or not listing_id.strip():
            raise ValueError("a listing needs a listingId")
        try:
            Listing.model_validate(record)
        except ValidationError as error:
            raise ValueError(_first_error(error)) from None
        checked = {**record, "listingId": listing_id.strip()}
        if "floorPlans" in checked:
            checked["floorPlans"] = with_plan_ids(checked["listingId"], checked["floorPlans"])
            _refuse_repeated_plan_ids(checked)
        return "listing", checked
    if isinstance(path, str) and "/" in path:
        collection, profile_id = path.split("/", 1)
        if collection not in PROFILE_COLLECTIONS:
            raise ValueError(f"unknown profile collection {collection!r} in path {path!r}")
        if not profile_id:
            raise ValueError(f"profile path {path!r} has no id")
        try:
            Profile.model_validate(record)
        except ValidationError as error:
            raise ValueError(_first_error(error)) from None
        return "profile", record
    raise ValueError("neither a listing (no listingId) nor a profile (no '<Collection>/<id>' path)")


def _first_error(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    return f"{where}: {first['msg']}"


ENVELOPE_ARRAYS = ("results", "listings", "profiles")
"""Keys of an object whose array values hold the records (a search answer, or an export of both kinds)."""


def _is_envelope(document: dict[str, Any]) -> bool:
    """An object around record arrays, as opposed to one record (a profile has a ``listings`` array too)."""
    is_record = bool(document.get("listingId") or document.get("path"))
    return not is_record and any(isinstance(document.get(key), list) for key in ENVELOPE_ARRAYS)


def _records(text: str) -> Iterator[tuple[int, Any | ValueError]]:
    """(line, record) pairs from a JSON document or from NDJSON; a record that is not JSON is a ValueError."""
    stripped = text.lstrip()
    if stripped.startswith(("[", "{")):
        try:
            document = json.loads(text)
        except json.JSONDecodeError as error:
            if stripped.startswith("["):
                yield (
                    error.lineno,
                    ValueError(f"not valid JSON: {error.msg} at line {error.lineno} column {error.colno}"),
                )
                return
            document = None  # several objects, one a line: NDJSON
        if isinstance(document, list) or (isinstance(document, dict) and _is_envelope(document)):
            yield from _elements(text)
            return
        if isinstance(document, dict):
            yield text[: len(text) - len(stripped)].count("\n") + 1, document
            return
    # NDJSON: records end at "\n" only (a JSON string may hold U+2028 and other line separators raw).
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            try:
                yield number, json.loads(line)
            except json.JSONDecodeError as error:
                yield number, ValueError(f"not valid JSON: {error.msg} at column {error.colno}")


def _elements(text: str) -> Iterator[tuple[int, Any]]:
    """The elements of a top-level array, or of an envelope's record arrays, each with the line it starts on.

    The text is walked value by value with the JSON decoder, so brackets inside strings or other arrays of the
    envelope are never mistaken for the records' array.
    """
    decoder = json.JSONDecoder()
    position = _skip(text, 0)

    def array_at(position: int) -> Iterator[tuple[int, Any]]:
        position = _skip(text, position + 1)  # past "["
        while text[position] != "]":
            record, end = decoder.raw_decode(text, position)
            yield text.count("\n", 0, position) + 1, record
            position = _skip(text, end)
            if text[position] == ",":
                position = _skip(text, position + 1)

    if text[position] == "[":
        yield from array_at(position)
        return
    position = _skip(text, position + 1)  # past "{"
    while text[position] != "}":
        key, end = decoder.raw_decode(text, position)
        position = _skip(text, _skip(text, end) + 1)  # past ":"
        if key in ENVELOPE_ARRAYS and text[position] == "[":
            yield from array_at(position)
        _, end = decoder.raw_decode(text, position)
        position = _skip(text, end)
        if text[position] == ",":
            position = _skip(text, position + 1)


def _skip(text: str, position: int) -> int:
    while position < len(text) and text[position] in " \t\r\n":
        position += 1
    return position


def _refuse_plan_ids_of_other_listings(
    listings: list[tuple[int, dict[str, Any]]], holders: PlanHolders | None, report: ImportReport
) -> None:
    """Adds to ``report`` the listings whose plan ids no other listing holds, in file order; reports the others.

    A plan id belongs to the last listing given it: one earlier in this file, else one in the store (unless that
    listing comes again earlier in this file, its stored plans replaced). A listing may keep its own ids.
    """
    stored = holders({plan_id for _, listing in listings for _, plan_id in _plan_ids(listing)}) if holders else {}
    claimed: dict[str, str] = {}
    """Plan id -> the listing of this file that holds it now."""
    replaced: set[str] = set()
    for line, listing in listings:
        listing_id = listing["listingId"]
        conflict = _plan_id_taken(listing, claimed, stored, replaced)
        if conflict is not None:
            position, plan_id, other = conflict
            report.problems.append(
                (
                    line,
                    f"listing {listing_id}: floor plan id {plan_id!r} (floorPlans position {position}) is already "
                    f"used by listing {other}; plan ids must be unique across listings",
                )
            )
            continue
        if listing_id in replaced:
            claimed = {plan_id: owner for plan_id, owner in claimed.items() if owner != listing_id}
        replaced.add(listing_id)
        claimed.update((plan_id, listing_id) for _, plan_id in _plan_ids(listing))
        report.listings.append(listing)


def _plan_id_taken(
    listing: dict[str, Any], claimed: dict[str, str], stored: dict[str, list[str]], replaced: set[str]
) -> tuple[int, str, str] | None:
    """(position, id, other listing) of the listing's first plan id that another listing holds, or None."""
    listing_id = listing["listingId"]
    for position, plan_id in _plan_ids(listing):
        owner = claimed.get(plan_id)
        if owner is None:
            others = [held for held in stored.get(plan_id, ()) if held != listing_id and held not in replaced]
            owner = others[0] if others else None
        if owner is not None and owner != listing_id:
            return position, plan_id, owner
    return None


@dataclass
class ParsedFile:
    """A file's records, each checked on its own (not yet against the store's floor-plan ids)."""

    listings: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    """(line, listing) in file order."""
    profiles: list[dict[str, Any]] = field(default_factory=list)
    problems: list[tuple[int, str]] = field(default_factory=list)


def parse_file(path: str | Path) -> ParsedFile:
    """The records of a file, each classified and checked; what is wrong with the others, by line."""
    parsed = ParsedFile()
    text = Path(path).read_text(encoding="utf-8")
    for line, record in _records(text):
        if isinstance(record, ValueError):
            parsed.problems.append((line, str(record)))
            continue
        try:
            kind, checked = classify(record)
            if kind == "listing":
                _refuse_repeated_unit_numbers(checked)
        except ValueError as error:
            parsed.problems.append((line, str(error)))
            continue
        if kind == "listing":
            parsed.listings.append((line, checked))
        else:
            parsed.profiles.append(checked)
    return parsed


def check_plan_ids(parsed: ParsedFile, plan_holders: PlanHolders | None = None) -> ImportReport:
    """The report of a parsed file: its listings refused where a floor-plan id is another listing's (one earlier
    in the file, or one ``plan_holders`` finds stored)."""
    report = ImportReport(profiles=list(parsed.profiles), problems=list(parsed.problems))
    _refuse_plan_ids_of_other_listings(parsed.listings, plan_holders, report)
    report.problems.sort(key=lambda problem: problem[0])
    return report


def read_file(path: str | Path, plan_holders: PlanHolders | None = None) -> ImportReport:
    """The records of a file, checked; ``plan_holders`` (the target store's) lets a listing be refused for a
    floor-plan id a stored listing holds."""
    return check_plan_ids(parse_file(path), plan_holders)


def import_file(store: SQLiteStore | PostgresCatalogueStore, path: str | Path) -> ImportReport:
    """Writes a file's good records into ``store`` (profiles first, then listings) and answers what was read.

    PostgreSQL: one transaction under the store's write lock, the floor-plan ids checked inside it (against what
    the imports that ran first committed); a failure anywhere leaves the catalogue as it was and publishes no
    event, and the store's listeners hear of every change once, after the commit (with the outbox in the same
    database, the changes are recorded in the store's journal in that transaction and their events published
    from it once, by this process or, if it dies first, by a replica:
    :mod:`precon.service.webhooks.journal`).
    SQLite: a transaction a batch.
    """
    from precon.service.stores.loading import load

    parsed = parse_file(path)  # the slow part, before the lock
    atomic = store.atomic() if store.engine == "postgres" else nullcontext()  # type: ignore[union-attr]
    with atomic:
        report = check_plan_ids(parsed, store.listings_holding_plans)
        if report.listings or report.profiles:
            load(store, report.listings, report.profiles)
    return report
