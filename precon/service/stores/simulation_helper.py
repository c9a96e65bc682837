"""A simulation's helper process (``python -m precon.service.stores.simulation_helper``): decides most of a long
simulation's days while the process that started it writes them (see
:class:`precon.service.stores.simulation._Helper`). Its standard output carries only its answers: whatever else
would print there goes to standard error."""

from __future__ import annotations

import os
import sys

from precon.service.stores.simulation import decide_days


def main() -> None:
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    with answers:
        decide_days(sys.stdin.buffer, answers)


if __name__ == "__main__":
    main()
