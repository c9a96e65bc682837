"""(ours) The answer of ``market_stats``, as the typed client reads it (beside :mod:`.models`): the market's
figures per month or quarter, one series per value of the attribute grouped by (docs/api.md, "Market
statistics")."""

from __future__ import annotations

from pydantic import Field

from precon.client.models import Record


class MarketPoint(Record):
    """One interval's figures. The unit figures are None under a version that shows no floor plans (``v1-lite``);
    the medians and ``sellThrough`` are None where no unit counts."""

    start: str
    """The interval's start, an ISO time in UTC."""
    unitsSold: int | None = None
    unitsAvailable: int | None = None
    sellThrough: float | None = None
    launches: int = 0
    medianPrice: float | None = None
    medianPricePerSqFt: float | None = None
    priceIncreases: int | None = None
    priceCuts: int | None = None


class MarketSeries(Record):
    group: str | None = None
    """The value of the attribute grouped by; None without one."""
    points: list[MarketPoint] = Field(default_factory=list)


class MarketStats(Record):
    interval: str = "month"
    groupBy: str | None = None
    series: list[MarketSeries] = Field(default_factory=list)
