"""What ``serve``, ``socket`` and ``sweep`` check before they start working.

A process that starts with a setting it cannot work with looks healthy and fails later,
once a minute, in a log nobody reads. So the cheap checks run first and a failure ends
the command with one line naming what to set (``bot.cli_errors`` words it, as for every
other command): the Slack tokens' shapes (no network), then one read of the store
(``bot.health.probe_store``: credentials, region and table in one ``GetItem``), one
query of the sweep index (``RunEngine.due``), and one ``HeadBucket`` when
``SNAPSHOT_BUCKET`` is set. Graph modules are imported after these,
so a bad token or table fails before Strands is imported.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from bot.health import probe_store, store_reason
from bot.slack_access import ConfigError

if TYPE_CHECKING:
    from bot.services import Services


async def check_store(services: Services) -> None:
    """One read of the store, one look at the sweep index, and ``HeadBucket`` when ``SNAPSHOT_BUCKET`` is set.

    Raises:
        ConfigError, StoreError, botocore's errors: what ``bot.cli_errors.explain`` words as
            one line (no credentials, a region that does not exist, a missing table or bucket).
    """
    store = services.store
    try:
        await asyncio.to_thread(probe_store, store)
    except Exception as error:
        if store_reason(error).startswith("the store did not answer"):  # nothing more precise to say
            raise ConfigError(_where(services) + store_reason(error)) from error
        raise
    await services.engine.due(limit=1)  # the sweep index (one Query): the sweeper's first round would need it
    bucket = services.settings.snapshot_bucket
    if services.settings.dynamodb_table and bucket:
        await asyncio.to_thread(_head_bucket, bucket)


def _where(services: Services) -> str:
    table = services.settings.dynamodb_table
    return f"DYNAMODB_TABLE={table!r}: " if table else f"SQLITE_PATH={services.settings.sqlite_path!r}: "


def _head_bucket(bucket: str) -> None:
    from persistence.aws import s3_client

    s3_client().head_bucket(Bucket=bucket)
