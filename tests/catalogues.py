"""Generated catalogues for the tests, made once per size and seed and kept on disk.

``generate(2500)`` takes seconds, and the tests ask for the same few catalogues again and again, in several
processes. :func:`generated` answers ``catalogue.generate(listings, seed, profiles)`` from a file under
``.test-cache/catalogues/`` (git ignores it), named by the arguments and by the generator's version: a digest of
the generator's sources and of the land mask it draws on, so that any change to them makes new files instead of
reading stale ones. Each call unpickles a fresh copy, which its caller may change at will.

The generator's own tests (tests/test_catalogue_consistency.py's determinism and pinned digests) call it directly.
"""

from __future__ import annotations

import copy
import hashlib
import os
import pickle
import platform
import random
import tempfile
from collections.abc import Callable
from datetime import date
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from precon.service import catalogue as generator
from precon.service.catalogue import Catalogue, sandbox
from precon.service.stores.loading import batched
from precon.service.stores.simulation import day_time
from precon.service.stores.sqlite.store import SQLiteStore

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".test-cache" / "catalogues"
GENERATOR_SOURCES = (
    "precon/service/catalogue",
    "precon/service/collector.py",
    "precon/client/models.py",
    "precon/schema.py",
    "static/basemap",
)


@cache
def generator_version() -> str:
    """A digest of every file the generator's output depends on."""
    digest = hashlib.sha256()
    for entry in GENERATOR_SOURCES:
        path = ROOT / entry
        files = (
            sorted(p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
            if path.is_dir()
            else [path]
        )
        for file in files:
            digest.update(str(file.relative_to(ROOT)).encode() + b"\0" + file.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def generated_catalogue(listings: int = 2500, seed: int = 0, profiles: int | None = None) -> Catalogue:
    """``catalogue.generate(listings, seed, profiles)``, from the disk cache when it was made before."""
    version = f"{generator_version()}-py{platform.python_version()}"
    path = CACHE / f"{version}-{listings}-{seed}-{profiles}.pickle"
    try:
        made: Catalogue = pickle.loads(path.read_bytes())
        return made
    except (OSError, EOFError, pickle.UnpicklingError):
        pass
    made = generator.generate(listings, seed, profiles)
    CACHE.mkdir(parents=True, exist_ok=True)
    # Written aside and renamed: a worker reading at the same time sees the whole file or none.
    handle, temporary = tempfile.mkstemp(dir=CACHE, suffix=".part")
    with os.fdopen(handle, "wb") as out:
        pickle.dump(made, out, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(temporary, path)
    return made


def stored_catalogue(path: Path, listings: int, seed: int, at: date) -> SQLiteStore:
    """A SQLite store at ``path`` holding a generated catalogue, written as created at the start of day ``at``."""
    built = generated_catalogue(listings, seed=seed)
    store = SQLiteStore(path)
    store.upsert_profiles(built.profiles)
    for batch in batched(built.listings):
        store.upsert_listings(batch, at=day_time(at))
    return store


def random_moves(
    rng: random.Random, drop_sizes: bool = False, move_floors: bool = False
) -> Callable[[str, dict[str, Any]], dict[str, Any]]:
    """An update for ``update_listings`` that moves a random part of a listing: a plan's size in three (taken away
    instead, half the time, with ``drop_sizes``), a unit's status and price in five (and floor, with
    ``move_floors``)."""

    def moved(_: str, doc: dict[str, Any]) -> dict[str, Any]:
        changed = copy.deepcopy(doc)
        for plan in changed.get("floorPlans") or []:
            if rng.random() < 0.3:
                size = rng.randint(400, 1500)
                plan["squareFeet"] = rng.choice([size, None]) if drop_sizes else size
            for unit in plan.get("units") or []:
                if rng.random() < 0.2:
                    unit["status"] = rng.choice(["Available", "Sold", "Reserved"])
                    unit["price"] = rng.choice([unit.get("price"), rng.randint(400_000, 2_000_000), None])
                    if move_floors:
                        unit["floor"] = rng.choice([unit.get("floor"), rng.randint(1, 40)])
        return changed

    return moved


def is_number(value: Any) -> bool:
    """A JSON number (``True`` is not one, though Python counts it an ``int``)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


# The generator's tests (tests/test_catalogue*.py) take these as module fixtures of their own (``default =
# catalogues.default``).


@pytest.fixture(scope="module")
def default() -> Catalogue:
    return generated_catalogue()


@pytest.fixture(scope="module")
def small() -> Catalogue:
    return generated_catalogue(300, seed=7)


@pytest.fixture(scope="module")
def box() -> Catalogue:
    return sandbox()


@pytest.fixture(params=["small", "box"])
def catalogue(request: pytest.FixtureRequest) -> Catalogue:
    return request.getfixturevalue(request.param)
