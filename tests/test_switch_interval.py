"""``PRECON_SERVICE_SWITCH_INTERVAL_MS``: a serving process's threads take turns at that interval (Python's own
5 ms without it), set where the directory is served, and refused when it is no interval at all."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError

from precon.service.config import ServiceSettings
from precon.service.runtime import DataDirectory


@pytest.fixture
def interval() -> Iterator[float]:
    before = sys.getswitchinterval()
    yield before
    sys.setswitchinterval(before)


def serve(folder: Path, **settings: object) -> None:
    directory = DataDirectory.open(
        ServiceSettings(dev=True, data_dir=folder, default_listings=12, default_history_days=0, **settings)
    )
    try:
        directory.app()
    finally:
        directory.close()


def test_the_setting_shortens_the_serving_process_switch_interval(tmp_path: Path, interval: float) -> None:
    serve(tmp_path, switch_interval_ms=1)
    assert sys.getswitchinterval() == pytest.approx(0.001)


def test_without_it_python_keeps_its_own(tmp_path: Path, interval: float) -> None:
    serve(tmp_path)
    assert sys.getswitchinterval() == interval


def test_read_from_the_environment_and_refused_when_not_an_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRECON_SERVICE_SWITCH_INTERVAL_MS", "0.5")
    assert ServiceSettings().switch_interval_ms == 0.5
    for wrong in ("0", "-1", "1000"):
        monkeypatch.setenv("PRECON_SERVICE_SWITCH_INTERVAL_MS", wrong)
        with pytest.raises(ValidationError, match="switch_interval_ms"):
            ServiceSettings()
