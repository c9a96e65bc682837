"""Work done by a forked copy of this process, on the second core, while this one does its own share: the copy has
everything this process had built (nothing is sent to it), and sends back only its answer, pickled through a pipe.

Only where no other thread runs (:func:`can_fork`): a fork copies the locks other threads hold, never released in
the copy. The copy leaves with ``os._exit``, so it neither flushes this process's buffers a second time nor closes
the files and connections it inherited. :func:`available_cores` is also what ``precon serve`` and a simulation's
helper process count on.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import threading
import traceback
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


class ForkFailed(RuntimeError):
    """The forked copy raised, or stopped without answering."""


def available_cores() -> int:
    """The cores this process may run on (its affinity, which a container or ``taskset`` may narrow)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def can_fork() -> bool:
    """Whether a fork is safe here (no other thread) and worth it (a second core to run on)."""
    return hasattr(os, "fork") and threading.active_count() == 1 and available_cores() > 1


class Forked(Generic[T]):
    """``work()`` running in a forked copy of this process: :meth:`result` waits for its answer."""

    def __init__(self, work: Callable[[], T]) -> None:
        readable, writable = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            os.close(readable)
            os.close(writable)
            raise
        if pid == 0:  # the copy: work, answer, leave
            os.close(readable)
            _answer(work, writable)
        os.close(writable)
        self._pid: int | None = pid
        self._answers = os.fdopen(readable, "rb")

    def result(self) -> T:
        """The copy's answer (its exception, if it raised one, as :class:`ForkFailed`)."""
        try:
            with self._answers:
                answered, answer = pickle.load(self._answers)
        except EOFError:
            answered, answer = False, "it stopped without answering"
        except Exception as error:  # an answer cut short, or one that cannot be unpickled here
            answered, answer = False, f"its answer could not be read ({type(error).__name__}: {error})"
        self._reap()
        if not answered:
            raise ForkFailed(f"the forked process failed: {answer}")
        return answer  # type: ignore[no-any-return]

    def stop(self) -> None:
        """The copy stopped, if it has not answered yet (this process failed before it asked for the answer)."""
        if self._pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._pid, signal.SIGKILL)
            self._answers.close()
            self._reap()

    def _reap(self) -> None:
        if self._pid is not None:
            os.waitpid(self._pid, 0)
            self._pid = None


@contextlib.contextmanager
def forked(work: Callable[[], T]) -> Iterator[Forked[T]]:
    """:class:`Forked`, stopped on the way out of the block if its answer was not read."""
    copy = Forked(work)
    try:
        yield copy
    finally:
        copy.stop()


def _answer(work: Callable[[], T], writable: int) -> None:
    code = 0
    try:
        try:
            answer: tuple[bool, object] = (True, work())
        except BaseException:  # whatever it was, the process that forked is told, and this one leaves
            answer, code = (False, traceback.format_exc(limit=8)), 1
        with os.fdopen(writable, "wb") as answers:
            pickle.dump(answer, answers, protocol=pickle.HIGHEST_PROTOCOL)
    except BaseException:  # the reader sees the pipe close and says so
        code = 1
    finally:
        os._exit(code)
