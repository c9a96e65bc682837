"""The ``precon`` command: serve the listings service, manage keys, build and import catalogues. One module per
group of commands; what they share is in :mod:`precon.cli.common`."""

from __future__ import annotations

import click

from precon.cli.catalogue import catalogue
from precon.cli.common import redact, scrub
from precon.cli.keys import keys
from precon.cli.serve import serve

__all__ = ["main", "redact", "scrub"]


@click.group()
def main() -> None:
    """Precon Explorer: Canada's pre-construction listings, served and explored."""


main.add_command(serve)
main.add_command(keys)
main.add_command(catalogue)
