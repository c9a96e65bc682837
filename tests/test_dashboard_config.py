"""(ours) What README.md says of how the dashboard runs, as Streamlit reads this project's .streamlit/config.toml."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STREAMLIT = Path(sys.executable).parent / "streamlit"


def effective(**environment: str) -> dict[str, str]:
    """The options Streamlit runs this project with (``streamlit config show`` in its folder), by name."""
    shown = subprocess.run([str(STREAMLIT), "config", "show"], cwd=ROOT, capture_output=True, text=True, check=True,
                           env={**os.environ, **environment}).stdout  # fmt: skip
    return dict(re.findall(r"^(\w+) = (.*)$", shown, re.MULTILINE))


def test_the_dashboard_watches_its_code_only_when_told() -> None:
    """README.md: the dashboard does not watch its own code for edits; the command it gives turns that on (its
    options, given in the environment here, are the same options)."""
    readme = (ROOT / "README.md").read_text()
    command = re.search(r"`\.venv/bin/streamlit run app\.py ([^`]+)`", readme)
    assert command is not None
    options = dict(re.findall(r"--server\.(\w+) (\S+)", command.group(1)))
    assert options == {"fileWatcherType": "auto", "runOnSave": "true"}
    shown = effective()
    assert shown["fileWatcherType"] == '"none"' and shown["runOnSave"] == "false"
    told = effective(STREAMLIT_SERVER_FILE_WATCHER_TYPE="auto", STREAMLIT_SERVER_RUN_ON_SAVE="true")
    assert told["fileWatcherType"] == '"auto"' and told["runOnSave"] == "true"
