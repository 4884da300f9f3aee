"""The SQLite store's start limits: each person's book (``RunStore.take_start``).

Two small tables stand for DynamoDB's one item per person: the starts counted per
person and clock minute, and each person's open runs (run id -> when it started). The
store runs each function inside its ``BEGIN IMMEDIATE`` transaction, which takes the
write lock before the read, so the read, the check and the write are one step for every
process: simple and exact. The rule (what is counted, when a start is refused, the lazy
clean-up of finished runs) is ``engine.start_limits``'s; these are its primitives.

Minutes before the last go in every start's write, for everyone: the table stays a minute
or two of starts (the last is kept for a process whose clock is a little behind). Open
runs leave when a start finds the book full and the engine forgets the finished ones.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from engine.records import RunStatus
from engine.start_limits import StartBook

SCHEMA = """
CREATE TABLE IF NOT EXISTS start_minutes (
    user   TEXT NOT NULL,
    minute INTEGER NOT NULL,
    count  INTEGER NOT NULL,
    PRIMARY KEY (user, minute)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS start_minutes_by_minute ON start_minutes (minute);
CREATE TABLE IF NOT EXISTS open_starts (
    user   TEXT NOT NULL,
    run_id TEXT NOT NULL,
    at     REAL NOT NULL,
    PRIMARY KEY (user, run_id)
) WITHOUT ROWID;
"""


def create(conn: sqlite3.Connection) -> None:
    for statement in SCHEMA.split(";"):
        if statement.strip():
            conn.execute(statement)


def take(conn: sqlite3.Connection, user: str, *, run_id: str, at: float, per_minute: int, open_limit: int) -> StartBook:
    """``RunStore.take_start``, inside the caller's write transaction."""
    minute = int(at // 60)
    conn.execute("DELETE FROM start_minutes WHERE minute < ?", (minute - 1,))
    if conn.execute("SELECT 1 FROM open_starts WHERE user = ? AND run_id = ?", (user, run_id)).fetchone():
        return StartBook(taken=True)  # this very start, retried: counted once already
    row = conn.execute("SELECT count FROM start_minutes WHERE user = ? AND minute = ?", (user, minute)).fetchone()
    counted = int(row[0]) if row else 0
    opened = {str(r): float(a) for r, a in conn.execute("SELECT run_id, at FROM open_starts WHERE user = ?", (user,))}
    if (per_minute and counted >= per_minute) or len(opened) >= open_limit:
        return StartBook(taken=False, this_minute=counted, open=opened)
    conn.execute("INSERT INTO open_starts (user, run_id, at) VALUES (?, ?, ?)", (user, run_id, at))
    conn.execute(
        "INSERT INTO start_minutes (user, minute, count) VALUES (?, ?, 1)"
        " ON CONFLICT (user, minute) DO UPDATE SET count = count + 1",
        (user, minute),
    )
    return StartBook(taken=True)


def forget(conn: sqlite3.Connection, user: str, *, run_ids: Sequence[str]) -> None:
    """``RunStore.forget_starts``, inside the caller's write transaction."""
    conn.executemany("DELETE FROM open_starts WHERE user = ? AND run_id = ?", [(user, r) for r in run_ids])


def statuses(conn: sqlite3.Connection, run_ids: Sequence[str]) -> dict[str, RunStatus]:
    """``RunStore.run_statuses``: one SELECT of the runs' statuses."""
    if not run_ids:
        return {}
    marks = ", ".join("?" for _ in run_ids)
    rows = conn.execute(
        f"SELECT run_id, json_extract(doc, '$.status') FROM runs WHERE run_id IN ({marks})", tuple(run_ids)
    )
    return {str(r): RunStatus(s) for r, s in rows}
