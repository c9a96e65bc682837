"""A listing's inventory never contradicts itself: where units are available but the builder publishes no unit
prices, the lowest available price says "Not published", per plan and for the building, instead of the "—" that
reads as "nothing available" beside a count of available units. Checked against the service's units."""

from __future__ import annotations

import pytest

from components import api
from components.formatting import cad
from tests.dashboard_support import open_page

LISTING = "views/listing.py"


@pytest.mark.usefixtures("embedded_dashboard")
def test_available_units_without_prices_read_not_published_not_a_dash() -> None:
    open_page(LISTING)
    client = api.connection().client
    unpriced = [
        found
        for found in client.iter_listings(per_page=300, retrieve_attributes=["listingId", "floorPlans"])
        if any(
            plan.available_units and all(u.price is None for u in plan.available_units)
            for plan in found.floorPlans or []
        )
    ]
    assert unpriced, "the catalogue has a listing whose available units have no published price"
    listing = unpriced[0]
    app = open_page(LISTING, {"id": listing.id or ""})
    assert not app.exception, [e.value for e in app.exception]
    [summary] = [frame.value for frame in app.dataframe if "lowest" in frame.value.columns]
    by_plan = dict(zip(summary["plan"], zip(summary["available"], summary["lowest"], strict=True), strict=True))
    for plan in listing.floorPlans or []:
        if not plan.units:
            continue
        available, lowest = by_plan[plan.name or plan.id]
        prices = [u.price for u in plan.available_units if u.price is not None]
        assert available == len(plan.available_units)
        assert lowest == (cad(min(prices)) if prices else "Not published" if available else "—"), plan.name
    units = [u for plan in listing.floorPlans or [] for u in plan.available_units]
    prices = [u.price for u in units if u.price is not None]
    metrics = {metric.label: metric.value for metric in app.metric}
    assert metrics["Lowest available (CAD)"] == (cad(min(prices)) if prices else "Not published")
    assert any(value == "Not published" for value in summary["lowest"])
