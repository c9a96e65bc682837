"""The code's shape, held as the developers' guide asks: no module past about 600 lines, no function past about 60.
A change that passes them splits the module or the function by what it does (docs/architecture.md)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CODE = [ROOT / "app.py", *sorted((ROOT / "precon").rglob("*.py")), *sorted((ROOT / "views").rglob("*.py"))]
CODE += sorted((ROOT / "components").rglob("*.py"))

MOST_LINES = 600
MOST_FUNCTION_LINES = 60

DATA_MODULES = {ROOT / "precon" / "service" / "catalogue" / "canada.py"}
"""Tables of reference geography, not logic."""


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


SCRIPTS = sorted((ROOT / "bench").glob("*.py")) + sorted((ROOT / "tools").rglob("*.py"))
"""The benches and tools: held to the module length (a bench's parts are modules the others share: bench/mix.py,
serving.py, load.py, naive.py), not to the function length (a bench's ``main`` runs its phases in order)."""


@pytest.mark.parametrize("path", [p for p in CODE + SCRIPTS if p not in DATA_MODULES], ids=_name)
def test_no_module_is_past_600_lines(path: Path) -> None:
    lines = len(path.read_text().splitlines())
    assert lines <= MOST_LINES, f"{_name(path)} has {lines} lines: split it by what it does"


def test_no_function_is_past_60_lines() -> None:
    long: list[str] = []
    for path in CODE:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MOST_FUNCTION_LINES:
                    long.append(f"{_name(path)}:{node.lineno} {node.name} ({lines} lines)")
    assert not long, long


def test_the_data_modules_are_data() -> None:
    """What is exempt holds no function longer than a few lines: it stays tables."""
    for path in DATA_MODULES:
        functions = [n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.FunctionDef)]
        assert all((f.end_lineno or f.lineno) - f.lineno < 20 for f in functions), _name(path)


def test_the_library_holds_no_streamlit() -> None:
    """precon/ (the client, the dashboard's logic, the service) runs without Streamlit: the pages and components
    draw what it computes (README.md's layout, docs/architecture.md)."""
    found: list[str] = []
    for path in sorted((ROOT / "precon").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            found += [f"{_name(path)}:{node.lineno}" for n in names if n.split(".")[0] == "streamlit"]
    assert not found, found
