"""Running the ``precon`` command in the tests: the real console script in a subprocess, as a user runs it, or the
command in process (quicker), with the environment cleared of settings that would change what it does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from precon.cli import main
from precon.client.models import PROVINCES

PRECON = Path(sys.executable).with_name("precon")
EVERY_PROVINCE = frozenset([*PROVINCES, "all"])
NEITHER = "neither a listing (no listingId) nor a profile (no '<Collection>/<id>' path)"


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without any ``PRECON_SERVICE_*`` setting that would change what the command does."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRECON_SERVICE_")}
    return {**env, **extra}


def run_precon(*args: str | Path, timeout: float = 120, **env: str) -> subprocess.CompletedProcess[str]:
    """The real console script, as a user runs it."""
    return subprocess.run(
        [str(PRECON), *map(str, args)], capture_output=True, text=True, env=clean_env(**env), timeout=timeout
    )


def invoke(*args: str | Path) -> Result:
    """The command in process (quicker than a subprocess); stdout and stderr are kept apart."""
    env = {"PRECON_SERVICE_DATA_DIR": None, "PRECON_SERVICE_DATABASE_URL": None}
    return CliRunner().invoke(main, [str(a) for a in args], env=env)


def write_ndjson(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def listing(listing_id: str, name: str, **fields: Any) -> dict[str, Any]:
    return {
        "listingId": listing_id,
        "path": f"Listings/{listing_id}",
        "name": name,
        "state": "Ontario",
        "cityOrDistrict": "Toronto",
        "type": ["Condo"],
        **fields,
    }


def profile(path: str, name: str) -> dict[str, Any]:
    return {"id": path.split("/", 1)[1], "path": path, "name": name, "listings": []}
