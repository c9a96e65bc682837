"""(ours) A replica's follower applies each write with a short switch interval, and sets Python's back after."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator

import pytest

from precon.service.stores.prompt_switch import PROMPT_SWITCH_S, prompt_switching
from precon.service.stores.replica import CatalogueCopy


@pytest.fixture()
def default_interval() -> Iterator[float]:
    before = sys.getswitchinterval()
    sys.setswitchinterval(0.005)
    yield 0.005
    sys.setswitchinterval(before)


def test_the_interval_is_short_inside_and_set_back_after_the_last_block_of_several_threads(
    default_interval: float,
) -> None:
    first_inside, second_inside, release_first = threading.Event(), threading.Event(), threading.Event()
    seen: list[float] = []

    def first() -> None:
        with prompt_switching():
            first_inside.set()
            release_first.wait(10)
            seen.append(sys.getswitchinterval())

    thread = threading.Thread(target=first)
    thread.start()
    assert first_inside.wait(10)
    with prompt_switching():
        second_inside.set()
        assert sys.getswitchinterval() == pytest.approx(PROMPT_SWITCH_S)
    # The second block ended first: the first is still running, so the interval stays short.
    assert sys.getswitchinterval() == pytest.approx(PROMPT_SWITCH_S)
    release_first.set()
    thread.join(10)
    assert seen == [pytest.approx(PROMPT_SWITCH_S)]
    assert sys.getswitchinterval() == pytest.approx(default_interval)


def test_an_interval_already_shorter_is_kept_and_one_raised_inside_is_restored(default_interval: float) -> None:
    sys.setswitchinterval(0.0001)  # an operator's PRECON_SERVICE_SWITCH_INTERVAL_MS=0.1
    with prompt_switching():
        assert sys.getswitchinterval() == pytest.approx(0.0001, rel=0.05)
    assert sys.getswitchinterval() == pytest.approx(0.0001, rel=0.05)
    sys.setswitchinterval(default_interval)
    with pytest.raises(RuntimeError), prompt_switching():
        raise RuntimeError("the apply failed")
    assert sys.getswitchinterval() == pytest.approx(default_interval)


def test_a_copy_catches_up_with_the_short_interval(default_interval: float, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[float] = []

    def catch_up(self: CatalogueCopy, local: object) -> int:
        seen.append(sys.getswitchinterval())
        return 7

    monkeypatch.setattr(CatalogueCopy, "_catch_up", catch_up)
    copy = CatalogueCopy.__new__(CatalogueCopy)  # no database: what it applies is not the point here
    copy.local = None  # type: ignore[assignment]
    assert copy.catch_up() == 7
    assert seen == [pytest.approx(PROMPT_SWITCH_S)]
    assert sys.getswitchinterval() == pytest.approx(default_interval)
