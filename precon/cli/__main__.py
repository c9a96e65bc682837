"""``python -m precon.cli``: the ``precon`` command."""

from precon.cli import main

main()
