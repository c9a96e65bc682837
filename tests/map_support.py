"""What the Map page's tests share: the page, reading its pydeck chart (layers, grid cells, the table's ids), moving
its view and picking on it as a click does, and the service's own answer to compare with."""

from __future__ import annotations

import json
from typing import Any

from streamlit.testing.v1 import AppTest

from components import api
from components import map_centre as mc
from components import map_layers as ml

PAGE = "views/map.py"
TORONTO = (43.65, -79.38)


# -- helpers ---------------------------------------------------------------------------------------------------


def client():
    """The embedded service's client, as the page uses it (the oracle the page is checked against)."""
    return api.connection().client


def deck_spec(app: AppTest) -> dict[str, Any]:
    charts = app.get("deck_gl_json_chart")
    assert len(charts) == 1, charts
    return json.loads(charts[0].proto.json)


def layer(spec: dict[str, Any], layer_id: str) -> dict[str, Any]:
    return next(item for item in spec["layers"] if item["id"] == layer_id)


def grid_cells(spec: dict[str, Any]) -> list[dict[str, float]]:
    """Where the browser draws each click-grid row: the layer's position expression, evaluated for the row."""
    grid = layer(spec, ml.GRID_LAYER)
    expression = grid["getPosition"].removeprefix("@@=")
    cells = []
    for row in grid["data"]:
        lng, lat = eval(expression, {"__builtins__": {}}, {"i": row["i"], "j": row["j"]})
        cells.append({"lat": lat, "lng": lng})
    return cells


def table_ids(app: AppTest) -> list[str]:
    return list(app.dataframe[0].value["id"]) if app.dataframe else []


def service_ids_within(centre: tuple[float, float], radius_km: float, **params: Any) -> list[str]:
    page = client().search_listings(nearby=centre, radius=radius_km * 1000, per_page=1000, **params)
    return [listing.id for listing in page.results]


def set_view(app: AppTest, centre: str, radius_km: float) -> AppTest:
    app.text_input(key=mc.W_CENTRE).set_value(centre)
    app.select_slider(key=mc.W_RADIUS).set_value(radius_km)
    return app.run()


def pick(app: AppTest, layer_id: str, index: int) -> AppTest:
    """A click on the map that picks row ``index`` of a layer, as the browser reports it to the page.

    AppTest has no driver for a pydeck chart, so the selection is sent as the chart's widget value (what the
    frontend sends: ``{"selection": {"indices": ..., "objects": ...}}``) with the other widgets' values.
    """
    chart = app.get("deck_gl_json_chart")[0]
    row = layer(json.loads(chart.proto.json), layer_id)["data"][index]
    states = app._tree.get_widget_states()
    state = states.widgets.add()
    state.id = chart.proto.id
    state.string_value = json.dumps({"selection": {"indices": {layer_id: [index]}, "objects": {layer_id: [row]}}})
    return app._run(states)


def chip_labels(app: AppTest) -> list[str]:
    """The labels of the filter chips (buttons keyed ``map_chip_*``)."""
    return [b.label for b in app.button if b.key and b.key.startswith("map_chip_")]


def assert_sorted_by_distance(app: AppTest, radius_km: float) -> None:
    distances = list(app.dataframe[0].value["distance_km"])
    assert distances == sorted(distances)
    assert all(d <= radius_km + 0.01 for d in distances)
