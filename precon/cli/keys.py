"""``precon keys``: API keys and the data products they grant."""

from __future__ import annotations

from pathlib import Path

import click

from precon.cli.common import ManyValues, data_option, database_errors, database_option, open_accounts_of, split_values
from precon.service.config import ServiceSettings


@click.group()
def keys() -> None:
    """API keys and the data products they grant."""


@keys.command("create")
@click.option("--product", "product_id", required=True, help="The data product to grant (created if new).")
@click.option("--versions", cls=ManyValues, help="Versions to grant (default: all): v1 v1-lite v1-sandbox.")
@click.option("--provinces", cls=ManyValues, help="Provinces to grant (default: all): on bc ab ….")
@click.option("--label", default="", help="A note to remember the key by.")
@data_option
@database_option
def create_key(
    product_id: str,
    versions: tuple[str, ...],
    provinces: tuple[str, ...],
    label: str,
    data_dir: Path,
    database_url: str | None,
) -> None:
    """Create a key for a product; the key is printed once, alone on stdout."""
    with database_errors(database_url):
        accounts = open_accounts_of(ServiceSettings(data_dir=data_dir, database_url=database_url))
    try:
        key = accounts.create_key(product_id, split_values(versions), split_values(provinces), label=label)
    except ValueError as error:
        raise click.BadParameter(str(error)) from None
    finally:
        accounts.close()
    click.echo(key)


@keys.command("revoke")
@click.argument("key")
@data_option
@database_option
def revoke_key(key: str, data_dir: Path, database_url: str | None) -> None:
    """Revoke a key: it and its grants are removed, and every replica refuses it within a second."""
    with database_errors(database_url):
        accounts = open_accounts_of(ServiceSettings(data_dir=data_dir, database_url=database_url))
        try:
            revoked = accounts.revoke_key(key)
        finally:
            accounts.close()
    if not revoked:
        raise click.ClickException("no such key")
    click.echo("revoked", err=True)
