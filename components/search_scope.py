"""What a filter state asks of the deployment in the sidebar's version: the listing filter, the unit-level filter
and whether the deployment applies the latter itself (else :mod:`precon.dashboard.listing_search` does, exactly)."""

from __future__ import annotations

from dataclasses import dataclass

from components import api
from precon.dashboard.filter_state import FilterState
from precon.filters import Expr

LITE_VERSION = "v1-lite"


@dataclass(frozen=True)
class SearchScope:
    text: str
    filter: Expr | None
    unit_filter: Expr | None
    unit_level: bool
    """False where floor plans are not served (v1-lite): bedrooms, size and price then match the listing's spans."""
    unit_supported: bool

    @property
    def local(self) -> bool:
        """The dashboard checks floor plans itself."""
        return self.unit_filter is not None and not self.unit_supported


def scope_of(state: FilterState, *, without: str | None = None) -> SearchScope:
    version, _ = api.scope()
    unit_level = version != LITE_VERSION
    unit = state.unit_expression() if unit_level else None
    supported = api.unit_filter_supported() if unit is not None else True
    return SearchScope(
        state.text, state.listing_expression(without=without, unit_level=unit_level), unit, unit_level, supported
    )


def local_note(candidates: int | None = None) -> str:
    """What the page says when it checked floor plans itself."""
    read = f" It read the floor plans of {candidates:,} candidate listings." if candidates else ""
    return (
        "This deployment cannot filter floor plans, so the dashboard checked them itself: each result has one floor "
        f"plan meeting every unit filter.{read}"
    )
