"""The SQLite store's approvals inbox and App Home viewers (see ``RunStore.index_asks``).

The inbox is a table of (principal, created_at, run_id, ask_key) rows, one per pending
ask and principal, with an index on (principal, created_at): ``pending_for`` reads a
person's rows newest first without touching other rows. Unlike DynamoDB's entries these
rows are kept exact: every write that can change an ask's status or its principals
(create, save, decide) rewrites the run's rows inside its own transaction, which costs
SQLite two small statements and spares the listing its stale rows. ``index_asks`` then
only re-derives the rows from the record as stored (a file made before the inbox, a
caller's out-of-date copy).

App Home viewers are one row per person, forgotten 30 days after their last visit.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from engine.records import Ask, Run, RunStatus
from engine.store_rules import HOME_KEPT_SECONDS, InboxEntry, inbox_ask, inbox_entries

_UNFINISHED = ", ".join(f"'{s.value}'" for s in RunStatus if not s.terminal)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS inbox (
    principal  TEXT NOT NULL,
    created_at REAL NOT NULL,
    run_id     TEXT NOT NULL,
    ask_key    TEXT NOT NULL,
    PRIMARY KEY (run_id, ask_key, principal)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS inbox_by_principal ON inbox (principal, created_at, run_id, ask_key);
CREATE TABLE IF NOT EXISTS home_viewers (
    user      TEXT PRIMARY KEY,
    opened_at REAL NOT NULL
) WITHOUT ROWID;
"""


def migrate(conn: sqlite3.Connection) -> None:
    """Create the inbox (filled from the runs already there) and the viewers table.

    Runs inside the store's opening write transaction, so two processes opening a file
    made before the inbox fill it once. The fill reads every unfinished run, once.
    """
    had_inbox = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'inbox'").fetchone()
    for statement in _SCHEMA.split(";"):
        if statement.strip():
            conn.execute(statement)
    if had_inbox:
        return
    rows = conn.execute(f"SELECT doc FROM runs WHERE json_extract(doc, '$.status') IN ({_UNFINISHED})")
    for (doc,) in rows.fetchall():
        reindex(conn, _run(doc))


def reindex(conn: sqlite3.Connection, run: Run) -> None:
    """Make the run's rows its pending asks under their principals, exactly (same transaction)."""
    conn.execute("DELETE FROM inbox WHERE run_id = ?", (run.run_id,))
    conn.executemany(
        "INSERT OR IGNORE INTO inbox (principal, created_at, run_id, ask_key) VALUES (?, ?, ?, ?)",
        [(e.principal, e.created_at, e.run_id, e.ask_key) for e in inbox_entries(run)],
    )


def pending(conn: sqlite3.Connection, principals: Sequence[str], *, limit: int) -> list[tuple[Run, Ask]]:
    """The pending asks under ``principals``, newest first, each with its run (no state)."""
    who = list(dict.fromkeys(principals))
    if not who or limit < 1:
        return []
    # One read of the index per principal, newest first, stopping after ``limit`` rows (a
    # covering index: no sort, no table row), then merged: what one listing reads does
    # not grow with the table, nor with a principal's older asks. An ask appears once
    # per principal it is under; the merge lists it once.
    rows = sorted(
        (
            InboxEntry(principal=principal, created_at=at, run_id=run_id, ask_key=key)
            for principal in who
            for at, run_id, key in conn.execute(
                "SELECT created_at, run_id, ask_key FROM inbox WHERE principal = ?"
                " ORDER BY created_at DESC, run_id DESC, ask_key DESC LIMIT ?",
                (principal, limit),
            )
        ),
        key=lambda e: (e.created_at, e.run_id, e.ask_key),
        reverse=True,
    )
    entries: dict[tuple[str, str], list[InboxEntry]] = {}
    for entry in rows:
        entries.setdefault((entry.run_id, entry.ask_key), []).append(entry)
    order = list(entries)
    found: list[tuple[Run, Ask]] = []
    stale: list[InboxEntry] = []
    while order and len(found) < limit:
        batch, order = order[: limit - len(found)], order[limit - len(found) :]
        run_ids = list(dict.fromkeys(run_id for run_id, _ in batch))
        marks = ", ".join("?" * len(run_ids))
        docs = conn.execute(f"SELECT run_id, doc FROM runs WHERE run_id IN ({marks})", run_ids)
        runs = {run_id: _run(doc) for run_id, doc in docs}
        for ask_id in batch:
            judged = [(e, inbox_ask(runs.get(e.run_id), e)) for e in entries[ask_id]]
            stale += [e for e, ask in judged if ask is None]
            live = next((ask for _, ask in judged if ask is not None), None)
            if live is not None:
                found.append((runs[ask_id[0]], live))
    if stale:
        _forget(conn, stale)
    return found


def _forget(conn: sqlite3.Connection, stale: list[InboxEntry]) -> None:
    """Drop rows a listing found stale (none, unless a write path missed its ``reindex``)."""
    with contextlib.suppress(sqlite3.Error):  # best effort: the next listing skips them again
        conn.executemany(
            "DELETE FROM inbox WHERE principal = ? AND run_id = ? AND ask_key = ?",
            [(e.principal, e.run_id, e.ask_key) for e in stale],
        )


def saw_home(conn: sqlite3.Connection, user: str, *, at: float) -> None:
    conn.execute(
        "INSERT INTO home_viewers (user, opened_at) VALUES (?, ?)"
        " ON CONFLICT (user) DO UPDATE SET opened_at = MAX(opened_at, excluded.opened_at)",
        (user, at),
    )
    conn.execute("DELETE FROM home_viewers WHERE opened_at < ?", (at - HOME_KEPT_SECONDS,))


def home_viewers(conn: sqlite3.Connection, *, since: float) -> dict[str, float]:
    rows = conn.execute("SELECT user, opened_at FROM home_viewers WHERE opened_at >= ?", (since,))
    return {user: float(at) for user, at in rows}


def _run(doc: str) -> Run:
    data: dict[str, Any] = json.loads(doc)
    return Run.from_dict(data)
