"""docs/api.md documents the API as the service serves it: every operation and every parameter in the service's
own OpenAPI document appears in it, and it points nowhere outside the project."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from precon.service.config import ServiceSettings
from tests.conftest import Api

DOCS = Path(__file__).resolve().parent.parent / "docs" / "api.md"
PATH_PARAMETERS = {"version", "province"}


@pytest.fixture(scope="module")
def documented() -> str:
    return DOCS.read_text(encoding="utf-8")


def test_every_operation_and_parameter_of_the_openapi_document_is_documented(api: Api, documented: str) -> None:
    spec = api.get("/openapi.json", key=None).json()
    assert len(spec["paths"]) >= 14, "the service's own document lists its operations"
    missing = []
    for path, operations in spec["paths"].items():
        operation = path.removeprefix("/{version}/{province}/")
        for method, details in operations.items():
            if not re.search(rf"\b{method.upper()}\b[^\n]*`{re.escape(operation)}`", documented):
                missing.append(f"{method.upper()} {operation}")
            for parameter in details.get("parameters", []):
                name = parameter["name"]
                if (
                    name not in PATH_PARAMETERS
                    and f"`{name}`" not in documented
                    and not re.search(rf"\b{re.escape(name)}\b", documented)
                ):
                    missing.append(f"{method.upper()} {operation}: {name}")
    assert missing == []


def test_the_docs_point_nowhere_outside_the_project(documented: str) -> None:
    root = DOCS.parent.parent.resolve()
    for target in re.findall(r"\]\(([^)\s]+)\)", documented):
        if target.startswith(("http://", "https://", "#", "mailto:")):
            continue
        resolved = (DOCS.parent / target.split("#", 1)[0]).resolve()
        assert resolved.is_relative_to(root) and resolved.exists(), target
    assert "contract.md" not in documented and "interface.md" not in documented


def test_every_service_setting_is_in_the_readme_table() -> None:
    readme = (Path(__file__).parent.parent / "README.md").read_text()
    for name in ServiceSettings.model_fields:
        assert f"| `PRECON_SERVICE_{name.upper()}` |" in readme, name
