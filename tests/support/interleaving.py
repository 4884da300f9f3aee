"""Plumbing for the interleavings test (``tests/engine/test_interleavings.py``): the stores
each example gets, the fake clock its processes share, and a publisher that checks, at each
call, that the store already has what Slack is about to show.
"""

from __future__ import annotations

import os
import time
import uuid
from collections import Counter
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from engine.ports import FINAL, Publisher, PublishError, PublishUnconfirmed
from engine.records import Ask, MessageRef, Run
from engine.store import RunStore
from persistence.sqlite import SqliteRunStore
from tests.support import invariants as inv

T = TypeVar("T")


@dataclass
class Backend:
    """Makes store clients for one example: every engine (process) gets its own."""

    name: str
    make: Callable[[], RunStore]
    drop: Callable[[], None] = lambda: None


def sqlite_backends(tmp_path: Path) -> Callable[[], Backend]:
    def make() -> Backend:
        path = str(tmp_path / f"runs-{uuid.uuid4().hex[:8]}.sqlite3")
        return Backend("sqlite", lambda: SqliteRunStore(path), lambda: _remove(path))

    return make


def _remove(path: str) -> None:
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)


def dynamodb_backends() -> Callable[[], Backend]:
    from persistence import create_table
    from persistence.aws import dynamodb_client
    from persistence.dynamodb import DynamoRunStore

    client = dynamodb_client()  # one for all: making one costs a third of a second

    def make() -> Backend:
        name = f"runs-{uuid.uuid4().hex[:12]}"
        create_table(table=name)
        return Backend("dynamodb", lambda: DynamoRunStore(name, client=client), lambda: drop(name))

    def drop(name: str) -> None:
        client.delete_table(TableName=name)

    return make


class Clock:
    def __init__(self) -> None:
        self.now = float(int(time.time()))

    def __call__(self) -> float:
        return self.now


class CheckedPublisher:
    """The recording publisher, checking before each call that the store already has what it shows.

    ``fail_next("refused")`` makes Slack refuse the next message or edit (nothing shown);
    ``fail_next("lost")`` makes it take the next one and give no verdict (``PublishUnconfirmed``,
    as after a timeout). ``duplicates()`` names the messages shown more than once.
    """

    def __init__(self, inner: Publisher, observer: RunStore, ledger: inv.Ledger) -> None:
        self.inner = inner
        self._observer = observer
        self._ledger = ledger
        self._fail: str | None = None
        self._visible: dict[str, tuple[str, str]] = {}  # ts -> (run id, what), until retracted

    def fail_next(self, kind: str | None) -> None:
        self._fail = kind

    def duplicates(self) -> list[str]:
        counts = Counter(self._visible.values())
        return [
            f"run {run_id}: {what or 'announcement'} shown {n} times" for (run_id, what), n in counts.items() if n > 1
        ]

    async def _show(
        self, what: str, run: Run, ask: Ask | None, call: Coroutine[Any, Any, T], key: str | None = None
    ) -> T:
        found = inv.shown_is_saved(self._observer.load(run.run_id, snapshot=False), what, ask, run)
        if found is not None:
            self._ledger.shown_unsaved.append(found)
        fail, self._fail = self._fail, None
        if fail == "refused":
            call.close()
            raise PublishError("Slack refused it (injected)")
        shown = await call
        if key is not None and isinstance(shown, MessageRef):
            self._visible[shown.ts] = (run.run_id, key)
        if fail == "lost":
            raise PublishUnconfirmed("Slack gave no verdict (injected)")
        return shown

    async def run_started(self, *, run: Run, channel: str) -> MessageRef:
        return await self._show("started", run, None, self.inner.run_started(run=run, channel=channel), "")

    async def post_card(self, *, run: Run, ask: Ask) -> MessageRef:
        return await self._show("card", run, ask, self.inner.post_card(run=run, ask=ask), ask.key)

    async def update_card(self, *, run: Run, ask: Ask) -> None:
        await self._show("update", run, ask, self.inner.update_card(run=run, ask=ask))

    async def post_final(self, *, run: Run) -> MessageRef:
        return await self._show("final", run, None, self.inner.post_final(run=run), FINAL)

    async def post_notice(self, *, run: Run, ask: Ask, index: int) -> MessageRef:
        call = self.inner.post_notice(run=run, ask=ask, index=index)
        return await self._show("notice", run, ask, call, f"{ask.key}:notice:{index}")

    async def find_posted(self, *, run: Run, what: str) -> MessageRef | None:
        return await self.inner.find_posted(run=run, what=what)

    async def retract(self, *, ref: MessageRef) -> None:
        await self.inner.retract(ref=ref)
        self._visible.pop(ref.ts, None)
