"""What a version may name of a listing: under ``v1-lite``, only the lite fields (a filter, a facet or a retrieved
attribute on a hidden field would reveal it). The one check every listing operation's parameters go through (see
:mod:`precon.service.api.scope`), and the shaping of answers too."""

from __future__ import annotations

from precon import filters
from precon.filters import Expr
from precon.schema import LITE_FIELDS
from precon.service.errors import bad_request
from precon.service.search.sql_filter import PATH_ALIASES

LITE_VERSION = "v1-lite"


def is_visible(version: str, name: str) -> bool:
    """Whether a listing attribute path may be named under ``version``: under ``v1-lite`` its top-level field
    (``floorPlans`` of ``floorPlans.startPrice``, after aliases such as ``marketers``) must be a lite field."""
    if version != LITE_VERSION:
        return True
    top = name.split(".", 1)[0]
    return PATH_ALIASES.get(top, top) in LITE_FIELDS


def visible_attribute(version: str, name: str, where: str) -> str:
    """``name``, when ``version`` may name it; else a 400 that names the parameter ``where`` and the name.

    The one check of what a listing request may name: filters, unit filters, facets and retrieved attributes."""
    if not is_visible(version, name):
        raise bad_request(f"{where}: {name!r} is not an attribute of a v1-lite listing")
    return name


def check_expression(version: str, expr: Expr | None, where: str) -> Expr | None:
    """``expr``, when every attribute path it names is visible under ``version`` (the first hidden one, in
    sorted order, is the 400)."""
    for name in sorted(filters.attributes(expr)):
        visible_attribute(version, name, where)
    return expr
