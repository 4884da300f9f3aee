"""The embedded store: one SQLite file, for a single host with no AWS account.

Several threads (the engine calls the store through ``asyncio.to_thread``) and several
processes (a restarted server, the demo next to a running bot) share the file. WAL mode
lets readers proceed while one writer commits; the busy timeout makes a writer wait for
another process's write lock instead of failing at once. Every write that depends on
what is stored runs inside ``BEGIN IMMEDIATE``, which takes the write lock before the
read, so the read and the write form one atomic step across processes; the ``WHERE
version = ?`` on each UPDATE restates the condition so a mistake there shows up as a
conflict, never as a lost update.

The approvals inbox and App Home viewers live in tables of their own (``sqlite_inbox.py``),
written inside the same transactions as the runs they index.

Each thread gets its own connection: sqlite3 connections must not be used from two
threads at once, and one connection per thread lets WAL readers run in parallel.
"""

from __future__ import annotations

import functools
import json
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, ParamSpec, TypeVar, cast

from engine import metrics
from engine.audit import AuditEvent
from engine.records import Ask, Decision, MessageRef, Run, RunStatus
from engine.start_limits import StartBook
from engine.store import (
    RECENT_LIMIT,
    Delivery,
    Lease,
    RunExists,
    RunNotFound,
    StoreBroken,
    StoreUnavailable,
    VersionConflict,
)
from engine.store_rules import apply_delivery, decided, lease_free, noted
from persistence import snapshots, sqlite_inbox, sqlite_starts

P = ParamSpec("P")
T = TypeVar("T")

_BUSY_TIMEOUT_S = 30.0
_CLOSE_WAIT_S = 10.0
"""How long ``close`` waits for statements in flight on other threads to finish."""

# Finished runs by when they finished (``purge``): an index on the document's own fields,
# so no column needs keeping in step, and a file made before it gets it on open.
_FINISHED = ", ".join(f"'{s.value}'" for s in RunStatus if s.terminal)
_IS_FINISHED = f"json_extract(doc, '$.status') IN ({_FINISHED})"
_UPDATED_AT = "json_extract(doc, '$.updated_at')"
# A channel's runs, newest first (``recent``).
_CHANNEL = "json_extract(doc, '$.channel')"
_CREATED_AT = "json_extract(doc, '$.created_at')"
# A person's runs, newest first (``started_by``).
_STARTED_BY = "json_extract(doc, '$.started_by')"

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS runs (
    run_id   TEXT PRIMARY KEY,
    version  INTEGER NOT NULL,
    doc      TEXT NOT NULL,
    snapshot BLOB,
    sweep_at REAL
);
CREATE INDEX IF NOT EXISTS runs_sweep_at ON runs (sweep_at) WHERE sweep_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS runs_finished ON runs ({_UPDATED_AT}) WHERE {_IS_FINISHED};
CREATE INDEX IF NOT EXISTS runs_by_channel ON runs ({_CHANNEL}, {_CREATED_AT});
CREATE INDEX IF NOT EXISTS runs_by_starter ON runs ({_STARTED_BY}, {_CREATED_AT});
"""


def _mapped(method: Callable[P, T]) -> Callable[P, T]:
    """sqlite3's errors as the store's: a locked or busy file is transient, the rest is not.

    Every call is also counted in flight, so that ``close`` never closes a connection a
    statement is running on (sqlite3 crashes the process when that happens)."""

    @functools.wraps(method)
    def call(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            with cast("SqliteRunStore", args[0])._in_use():
                return method(*args, **kwargs)
        except sqlite3.Error as exc:
            metrics.add(metrics.STORE_ERRORS)
            if isinstance(exc, sqlite3.OperationalError):
                raise StoreUnavailable(f"sqlite: {exc}") from exc
            raise StoreBroken(f"sqlite: {exc}") from exc

    return call


class SqliteRunStore:
    def __init__(self, path: str) -> None:
        if path != ":memory:":
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)  # the default lives in a new folder
        self._path = path
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: list[sqlite3.Connection] = []
        self._idle = threading.Condition()
        self._active = 0
        self._closing = False
        self._calling = threading.local()  # a call's depth on this thread: a call within a call never waits
        self._create_schema()

    @_mapped
    def _create_schema(self) -> None:
        with self._write() as conn:
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)
            sqlite_inbox.migrate(conn)
            sqlite_starts.create(conn)

    # -- connections ---------------------------------------------------------------

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            # isolation_level=None: no implicit transactions; we say BEGIN IMMEDIATE ourselves.
            conn = sqlite3.connect(self._path, timeout=_BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
            conn.execute(f"PRAGMA busy_timeout = {int(_BUSY_TIMEOUT_S * 1000)}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")  # durable at checkpoints; WAL keeps it consistent
            self._local.conn = conn
            with self._lock:
                self._connections.append(conn)
        return conn

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    @contextmanager
    def _in_use(self) -> Iterator[None]:
        depth: int = getattr(self._calling, "depth", 0)
        with self._idle:
            if depth == 0:
                self._idle.wait_for(lambda: not self._closing)
            self._active += 1
        self._calling.depth = depth + 1
        try:
            yield
        finally:
            self._calling.depth = depth
            with self._idle:
                self._active -= 1
                self._idle.notify_all()

    def close(self) -> None:
        """Close every connection this store opened (tests, process shutdown).

        A call still running on another thread (a worker thread its task was cancelled
        away from) is waited for, and calls that come meanwhile wait for the close; if one
        still runs after ``_CLOSE_WAIT_S``, the connections stay open rather than be
        closed under it (and a close from inside a call waits that long, then gives up). A
        file's store opens new connections if used again; ``:memory:`` gives each connection
        a database of its own, so a store on it is for one thread and ends at ``close``.
        """
        with self._idle:
            self._closing = True
            try:
                if not self._idle.wait_for(lambda: self._active == 0, timeout=_CLOSE_WAIT_S):
                    return
                with self._lock:
                    connections, self._connections = self._connections, []
                for conn in connections:
                    conn.close()
                self._local = threading.local()
            finally:
                self._closing = False
                self._idle.notify_all()

    # -- RunStore ------------------------------------------------------------------

    @_mapped
    def create(self, run: Run) -> None:
        run, blob = _with_state(run, None)
        try:
            with self._write() as conn:
                conn.execute(
                    "INSERT INTO runs (run_id, version, doc, snapshot, sweep_at) VALUES (?, ?, ?, ?, ?)",
                    (run.run_id, run.version, _doc(run), blob, run.sweep_at),
                )
                sqlite_inbox.reindex(conn, run)
        except sqlite3.IntegrityError as exc:
            raise RunExists(run.run_id) from exc

    @_mapped
    def load(self, run_id: str, *, snapshot: bool = True) -> Run | None:
        if not snapshot:  # the snapshot column is not even read off the page
            row = self._conn().execute("SELECT doc FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            return _run(row[0], None) if row is not None else None
        row = self._conn().execute("SELECT doc, snapshot FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            return None
        return _run(row[0], row[1])

    @_mapped
    def fetch_state(self, run: Run) -> bytes | None:
        if run.state_ref is None:
            return None
        row = self._conn().execute("SELECT snapshot FROM runs WHERE run_id = ?", (run.run_id,)).fetchone()
        return _raw(row[0]) if row is not None else None

    @_mapped
    def decide(
        self,
        run_id: str,
        ask_key: str,
        decision: Decision,
        *,
        now: float,
        claim: Lease | None = None,
        card: MessageRef | None = None,
        member_of: frozenset[str] = frozenset(),
        event: AuditEvent | None = None,
        known: Run | None = None,
    ) -> Run:
        # ``known`` is not needed: the rules are judged on the row read under the write lock,
        # and a refused decision writes nothing, so there is no blind write to spare.
        with self._write() as conn:
            run = self._read(conn, run_id)
            new = decided(
                run,
                run_id,
                ask_key,
                decision,
                now=now,
                claim=claim,
                card=card,
                member_of=member_of,
                event=event,
            )  # raises (and rolls back, nothing written) when refused
            if run is not None and new is not run:
                self._update(conn, new, expected_version=run.version)
                sqlite_inbox.reindex(conn, new)
        return new

    @_mapped
    def note(self, run_id: str, event: AuditEvent) -> None:
        with self._write() as conn:
            run = self._read(conn, run_id)
            if run is None:
                raise RunNotFound(run_id)
            new = noted(run, event)
            if new is not None:
                self._update(conn, new, expected_version=run.version)

    @_mapped
    def claim(
        self,
        run_id: str,
        *,
        expected_version: int,
        status: RunStatus,
        owner: str,
        lease_until: float,
        now: float,
        handing: Sequence[str] = (),
        takeovers: int | None = None,
    ) -> int:
        _require_leased(status)
        with self._write() as conn:
            run = self._read(conn, run_id)
            if run is not None and run.lease_owner == owner:
                # The same call again (tokens name one claim): already done. The version it
                # made, so a caller holding an older copy conflicts and merges on save.
                return expected_version + 1
            if run is None or run.version != expected_version or not lease_free(run, now=now):
                raise VersionConflict(f"{run_id}: expected version {expected_version}, lease free")
            new = run.evolve(
                status=status,
                lease_owner=owner,
                lease_until=lease_until,
                updated_at=now,
                version=expected_version + 1,
                asks={k: replace(a, handed=owner) if k in handing else a for k, a in run.asks.items()},
                takeovers=run.takeovers if takeovers is None else takeovers,
            )
            self._update(conn, new, expected_version=expected_version)
        return new.version

    @_mapped
    def renew(self, run_id: str, *, owner: str, lease_until: float, now: float | None = None) -> bool:
        with self._write() as conn:
            run = self._read(conn, run_id)
            if run is None or run.lease_owner != owner or not run.status.leased:
                return False
            if now is not None and lease_free(run, now=now):  # ran out: it may be being claimed
                return False
            self._update(conn, run.evolve(lease_until=lease_until), expected_version=run.version)
        return True

    @_mapped
    def save(self, run: Run, *, expected_version: int, write_id: str | None = None) -> Run:
        # write_id: a local file has no lost responses; a failed commit did not happen.
        stored, blob = _with_state(run.evolve(version=expected_version + 1), run.state_ref)
        with self._write() as conn:
            if blob is _KEEP:
                cursor = conn.execute(
                    "UPDATE runs SET version = ?, doc = ?, sweep_at = ? WHERE run_id = ? AND version = ?",
                    (stored.version, _doc(stored), stored.sweep_at, run.run_id, expected_version),
                )
            else:
                cursor = conn.execute(
                    "UPDATE runs SET version = ?, doc = ?, snapshot = ?, sweep_at = ? WHERE run_id = ? AND version = ?",
                    (stored.version, _doc(stored), blob, stored.sweep_at, run.run_id, expected_version),
                )
            if cursor.rowcount != 1:
                raise VersionConflict(f"{run.run_id}: expected version {expected_version}")
            sqlite_inbox.reindex(conn, stored)
        return stored.evolve(snapshot=run.snapshot if stored.state_ref is not None else None)

    @_mapped
    def record_delivery(self, seen: Run, delivery: Delivery) -> Run:
        with self._write() as conn:
            run = self._read(conn, seen.run_id)
            if run is None:
                raise RunNotFound(seen.run_id)
            new = apply_delivery(run, delivery).evolve(version=run.version + 1)
            self._update(conn, new, expected_version=run.version)
        return new

    @_mapped
    def recent(self, *, channel: str, limit: int = 20, since: float | None = None) -> list[Run]:
        # The index on (channel, created_at) serves both bounds: no scan, whatever the table.
        bound, args = (f" AND {_CREATED_AT} >= ?", (since,)) if since is not None else ("", ())
        rows = self._conn().execute(
            f"SELECT doc FROM runs WHERE {_CHANNEL} = ?{bound} ORDER BY {_CREATED_AT} DESC LIMIT ?",
            (channel, *args, max(1, min(limit, RECENT_LIMIT))),
        )
        return [_run(r[0], None) for r in rows]

    @_mapped
    def started_by(self, user: str, *, limit: int = 20) -> list[Run]:
        rows = self._conn().execute(
            f"SELECT doc FROM runs WHERE {_STARTED_BY} = ? ORDER BY {_CREATED_AT} DESC LIMIT ?", (user, limit)
        )
        return [_run(r[0], None) for r in rows]

    @_mapped
    def take_start(self, user: str, *, run_id: str, at: float, per_minute: int, open_limit: int) -> StartBook:
        with self._write() as conn:  # BEGIN IMMEDIATE: the read, the check and the write are one step
            return sqlite_starts.take(conn, user, run_id=run_id, at=at, per_minute=per_minute, open_limit=open_limit)

    @_mapped
    def forget_starts(self, user: str, *, run_ids: Sequence[str]) -> None:
        with self._write() as conn:
            sqlite_starts.forget(conn, user, run_ids=run_ids)

    @_mapped
    def run_statuses(self, run_ids: Sequence[str]) -> dict[str, RunStatus]:
        return sqlite_starts.statuses(self._conn(), run_ids)

    @_mapped
    def index_asks(self, run: Run) -> None:
        # Every write that changes asks keeps the inbox exact already; this re-derives the
        # rows from the record as stored, not from the caller's copy (which may be older).
        with self._write() as conn:
            stored = self._read(conn, run.run_id)
            if stored is not None:
                sqlite_inbox.reindex(conn, stored)

    @_mapped
    def pending_for(self, principals: Sequence[str], *, limit: int = 50) -> list[tuple[Run, Ask]]:
        return sqlite_inbox.pending(self._conn(), principals, limit=limit)

    @_mapped
    def saw_home(self, user: str, *, at: float) -> None:
        with self._write() as conn:
            sqlite_inbox.saw_home(conn, user, at=at)

    @_mapped
    def home_viewers(self, *, since: float) -> dict[str, float]:
        return sqlite_inbox.home_viewers(self._conn(), since=since)

    @_mapped
    def stuck(self, *, now: float, limit: int = 25) -> list[str]:
        rows = self._conn().execute(
            "SELECT run_id FROM runs WHERE sweep_at IS NOT NULL AND sweep_at <= ? ORDER BY sweep_at LIMIT ?",
            (now, limit),
        )
        return [r[0] for r in rows]

    @_mapped
    def purge(self, *, now: float, older_than: float) -> int:
        """Delete the finished runs (completed, failed, rejected, cancelled) last changed
        more than ``older_than`` seconds before ``now``, snapshots included; returns how
        many. The SQLite counterpart of DynamoDB's TTL on finished runs (``RUN_RETENTION_DAYS``).
        """
        with self._write() as conn:
            # A finished run has no pending ask (its last save emptied its inbox rows);
            # the rows go with it all the same, should one have been left.
            purged = f"SELECT run_id FROM runs WHERE {_IS_FINISHED} AND {_UPDATED_AT} < ?"
            conn.execute(f"DELETE FROM inbox WHERE run_id IN ({purged})", (now - older_than,))
            cursor = conn.execute(
                f"DELETE FROM runs WHERE {_IS_FINISHED} AND {_UPDATED_AT} < ?",
                (now - older_than,),
            )
        return cursor.rowcount

    @staticmethod
    def _read(conn: sqlite3.Connection, run_id: str) -> Run | None:
        row = conn.execute("SELECT doc FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        return _run(row[0], None) if row else None

    @staticmethod
    def _update(conn: sqlite3.Connection, run: Run, *, expected_version: int) -> None:
        """Rewrite the document and index of ``run``, leaving the snapshot column alone."""
        cursor = conn.execute(
            "UPDATE runs SET version = ?, doc = ?, sweep_at = ? WHERE run_id = ? AND version = ?",
            (run.version, _doc(run), run.sweep_at, run.run_id, expected_version),
        )
        if cursor.rowcount != 1:
            raise VersionConflict(f"{run.run_id}: expected version {expected_version}")


_KEEP = b""  # sentinel: leave the snapshot column as it is


def _with_state(run: Run, stored_ref: dict[str, Any] | None) -> tuple[Run, bytes | None]:
    """The run as stored (its ``state_ref`` up to date) and what goes in the snapshot column."""
    step = snapshots.plan(run.snapshot, stored_ref)
    if step.action == "keep":
        return run.evolve(snapshot=None, state_ref=stored_ref), _KEEP
    if step.action == "drop":
        return run.evolve(snapshot=None, state_ref=None), None
    assert step.raw is not None
    blob = snapshots.encode(step.raw)
    ref = {"kind": "row", "sha256": step.sha256, "size": len(blob)}
    return run.evolve(snapshot=None, state_ref=ref), blob


def _require_leased(status: RunStatus) -> None:
    if not status.leased:
        raise ValueError(f"claim takes a lease: status must be running or resuming, not {status}")


def _doc(run: Run) -> str:
    return json.dumps(run.to_dict(), ensure_ascii=False, separators=(",", ":"))


def _raw(blob: bytes | None) -> bytes | None:
    return snapshots.decode(blob) if blob is not None else None


def _run(doc: str, blob: bytes | None) -> Run:
    data: dict[str, Any] = json.loads(doc)
    return Run.from_dict(data, snapshot=_raw(blob))
