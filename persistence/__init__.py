"""Where runs are kept: the RunStore protocol, its records, and the two backends.

Importing this package stays cheap (no boto3): the Slack ack path imports it, and
Slack's 3-second ack budget includes a Lambda cold start. The DynamoDB backend is
imported only when a table is configured.
"""

from __future__ import annotations

from engine.records import (
    Ask,
    AskStatus,
    Decision,
    MessageRef,
    Run,
    RunStatus,
    Verdict,
)
from engine.store import (
    AskNotFound,
    AskNotPending,
    RunExists,
    RunNotFound,
    RunStore,
    StoreError,
    VerdictNotOffered,
    VersionConflict,
)
from persistence.sqlite import SqliteRunStore

__all__ = [
    "Ask",
    "AskNotFound",
    "AskNotPending",
    "AskStatus",
    "Decision",
    "MessageRef",
    "Run",
    "RunExists",
    "RunNotFound",
    "RunStatus",
    "RunStore",
    "SqliteRunStore",
    "StoreError",
    "Verdict",
    "VerdictNotOffered",
    "VersionConflict",
    "create_table",
    "open_store",
]


def open_store(
    *, table: str | None, sqlite_path: str, bucket: str | None = None, retention_days: float = 30.0
) -> RunStore:
    """The DynamoDB store when a table is named (``DYNAMODB_TABLE``), else the SQLite file.

    ``retention_days`` (``RUN_RETENTION_DAYS``): how long a finished run is kept. DynamoDB
    expires it by TTL; the SQLite file is purged by the sweeper (``SqliteRunStore.purge``).
    """
    if table:
        from persistence.dynamodb import DynamoRunStore

        return DynamoRunStore(table, bucket=bucket, retention_days=retention_days)
    return SqliteRunStore(sqlite_path)


def create_table(*, table: str, bucket: str | None = None) -> list[str]:
    """Create the DynamoDB table (and the snapshot bucket when named); idempotent.

    Returns one human-readable line per thing created or found already there.
    """
    from persistence.aws import create_table as create

    return create(table=table, bucket=bucket)
