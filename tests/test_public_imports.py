"""The imports README.md and docs/ give integrators keep working wherever the code lives: ``from precon import
Client``, ``precon.models`` and ``precon.errors`` name the client package's own objects, and the names people
import from ``precon.client`` are there, without the service paying for the client's imports."""

from __future__ import annotations

import subprocess
import sys

import pytest

import precon
import precon.client
import precon.client.errors
import precon.client.models
import precon.errors
import precon.models


@pytest.mark.parametrize(
    ("public", "home"), [(precon.models, precon.client.models), (precon.errors, precon.client.errors)]
)
def test_the_public_modules_name_the_client_packages_objects(public: object, home: object) -> None:
    names = public.__all__  # type: ignore[attr-defined]
    assert names, "a public module with nothing to import"
    for name in names:
        assert getattr(public, name) is getattr(home, name), name
    records = {"Listing", "Profile", "ListingPage", "HistoryEntry", "WebhookSubscription"}
    errors = {"PreconError", "APIStatusError", "BadRequest", "NotFound", "RateLimited", "TransportError", "Timeout"}
    assert (records if public is precon.models else errors) <= set(names)


def test_the_client_is_importable_by_its_documented_names() -> None:
    from precon.client import PRODUCTION_URL, Client, ClientSettings, Filter
    from precon.client.client import Client as Home

    assert precon.Client is Client is Home
    assert PRODUCTION_URL.startswith("https://")
    assert ClientSettings(api_url="http://127.0.0.1:1").api_url == "http://127.0.0.1:1"
    assert Filter is precon.client.query_values.Filter
    with pytest.raises(AttributeError):
        precon.client.NoSuchName  # noqa: B018


def test_reading_the_models_does_not_import_the_client() -> None:
    probe = "import sys, precon.models, precon.errors; print('precon.client.client' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
