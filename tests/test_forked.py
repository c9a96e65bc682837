"""Work done by a forked copy of the process (:mod:`precon.service.stores.forked`): its answer comes back, its
failure is told, and a copy whose answer is not wanted is stopped."""

from __future__ import annotations

import os
import threading
import time

import pytest

from precon.service.stores.forked import ForkFailed, can_fork, forked


def test_the_copy_works_on_what_the_process_had_and_answers() -> None:
    built = {"listings": list(range(1000))}
    with forked(lambda: (os.getpid(), sum(built["listings"]))) as copy:
        built["listings"].append(10**6)  # after the fork: the copy does not see it
        pid, total = copy.result()
    assert pid != os.getpid()
    assert total == sum(range(1000))


def test_a_copy_that_raises_is_told_with_its_reason() -> None:
    def fails() -> None:
        raise ValueError("no such day")

    with forked(fails) as copy, pytest.raises(ForkFailed, match="ValueError: no such day"):
        copy.result()


def test_a_copy_that_stops_without_answering_is_told() -> None:
    with forked(lambda: os._exit(3)) as copy, pytest.raises(ForkFailed, match="without answering"):
        copy.result()


class Unreadable:
    """Pickled by the copy, but not read back here."""

    def __reduce__(self) -> tuple[object, tuple[()]]:
        return _cannot_be_read, ()


def _cannot_be_read() -> None:
    raise ValueError("not here")


def test_an_answer_that_cannot_be_read_back_is_told() -> None:
    with forked(Unreadable) as copy, pytest.raises(ForkFailed, match=r"could not be read.*not here"):
        copy.result()


def test_a_copy_whose_answer_is_not_read_is_stopped_on_the_way_out() -> None:
    with pytest.raises(RuntimeError, match="this process failed"), forked(lambda: time.sleep(60)) as copy:
        pid = copy._pid
        raise RuntimeError("this process failed")
    assert pid is not None
    with pytest.raises(ChildProcessError):  # reaped: no such child any more
        os.waitpid(pid, os.WNOHANG)


def test_no_fork_while_another_thread_runs() -> None:
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        assert can_fork() is False
    finally:
        release.set()
        other.join()
