"""Where a generated listing may stand: on land, as the dashboard's map draws it.

The mask is the map's own bundled outline (``static/basemap``: Natural Earth 1:50m, made by
``tools/make_basemap.py``): a point is on land inside one of Canada's provinces and territories and outside every
lake, so a listing never stands in Lake Ontario on the map that shows it. Without the outline (a checkout that
lacks ``static/``) every point counts as land.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

BASEMAP = Path(__file__).resolve().parents[3] / "static" / "basemap"

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Ring:
    """One closed ring of a polygon, as its edges (``x`` longitude, ``y`` latitude) and its bounding box."""

    x1: FloatArray
    y1: FloatArray
    x2: FloatArray
    y2: FloatArray
    box: tuple[float, float, float, float]

    @classmethod
    def of(cls, points: list[list[float]]) -> Ring:
        xy = np.asarray(points, dtype=np.float64)
        x, y = xy[:, 0], xy[:, 1]
        return cls(x, y, np.roll(x, -1), np.roll(y, -1), (x.min(), y.min(), x.max(), y.max()))

    def holds(self, lng: float, lat: float) -> bool:
        """Whether the point is inside the ring (an even-odd count of the edges a ray eastwards crosses)."""
        west, south, east, north = self.box
        if not (west <= lng <= east and south <= lat <= north):
            return False
        spans = (self.y1 > lat) != (self.y2 > lat)
        if not spans.any():
            return False
        x1, y1, x2, y2 = self.x1[spans], self.y1[spans], self.x2[spans], self.y2[spans]
        crossing = x1 + (lat - y1) * (x2 - x1) / (y2 - y1)
        return bool(np.count_nonzero(crossing > lng) % 2)


@dataclass(frozen=True)
class Polygon:
    outer: Ring
    holes: tuple[Ring, ...]

    def holds(self, lng: float, lat: float) -> bool:
        return self.outer.holds(lng, lat) and not any(hole.holds(lng, lat) for hole in self.holes)


def _polygons(features: list[dict[str, Any]], kinds: set[str]) -> tuple[Polygon, ...]:
    found: list[Polygon] = []
    for feature in features:
        if feature.get("properties", {}).get("kind") not in kinds:
            continue
        geometry = feature["geometry"]
        shapes = geometry["coordinates"] if geometry["type"] == "MultiPolygon" else [geometry["coordinates"]]
        for rings in shapes:
            found.append(Polygon(Ring.of(rings[0]), tuple(Ring.of(ring) for ring in rings[1:])))
    return tuple(found)


@dataclass(frozen=True)
class LandMask:
    land: tuple[Polygon, ...]
    water: tuple[Polygon, ...]

    @classmethod
    def of(cls, directory: Path) -> LandMask | None:
        """The mask of a basemap directory, None without one."""
        try:
            land = json.loads((directory / "land.json").read_text())["features"]
            lakes = json.loads((directory / "lakes.json").read_text())["features"]
        except (OSError, ValueError, KeyError):
            return None
        return cls(_polygons(land, {"province"}), _polygons(lakes, {"lake"}))

    @cached_property
    def _water_boxes(self) -> FloatArray:
        return _boxes(self.water)

    @cached_property
    def _land_boxes(self) -> FloatArray:
        return _boxes(self.land)

    def on_land(self, lat: float, lng: float) -> bool:
        # Only the polygons whose box holds the point are asked (the others cannot hold it): a few of hundreds.
        if any(self.water[k].holds(lng, lat) for k in _around(self._water_boxes, lng, lat)):
            return False
        return any(self.land[k].holds(lng, lat) for k in _around(self._land_boxes, lng, lat))


def _boxes(polygons: tuple[Polygon, ...]) -> FloatArray:
    """Each polygon's box (west, south, east, north), one row each."""
    return np.array([polygon.outer.box for polygon in polygons], dtype=np.float64).reshape(-1, 4)


def _around(boxes: FloatArray, lng: float, lat: float) -> list[int]:
    """The polygons (by position) whose box holds the point."""
    inside = (boxes[:, 0] <= lng) & (lng <= boxes[:, 2]) & (boxes[:, 1] <= lat) & (lat <= boxes[:, 3])
    return np.flatnonzero(inside).tolist()  # type: ignore[no-any-return]


@cache
def bundled_mask() -> LandMask | None:
    """The mask of the dashboard's bundled basemap (read once)."""
    return LandMask.of(BASEMAP)
