"""App Home: publishing a person's Home tab, and refreshing it when a run changes for them.

A Home tab is published when its owner opens it (``app_home_opened``) and again when a
run changes for them: a new ask they may decide, a decision or approval on one, a run of
theirs ending. Only people who have opened Home in the last ``VIEWER_DAYS`` are
refreshed (the store keeps who did, read at most once a ``VIEWERS_TTL`` per process), so
a run never publishes tabs nobody looks at. Each refresh reads the store, never Slack's
messages, so the tab shows saved state only; one person's tab is published at most once
a ``MIN_INTERVAL``, which keeps within ``views.publish``'s rate limit.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Final

from slack_sdk.web.async_client import AsyncWebClient

from bot.render.home import home_view
from bot.workspace import Workspace
from engine.inbox import Inbox
from engine.policy import Directory, deciders
from engine.records import Ask, Run
from engine.store import RunStore, StoreError
from engine.threads import in_thread

logger = logging.getLogger(__name__)

VIEWER_DAYS: Final = 30
VIEWERS_TTL: Final = 60.0
MIN_INTERVAL: Final = 1.0
MAX_REFRESHED: Final = 25  # tabs one change refreshes at most
MAX_RUNS_SHOWN: Final = 10
SEEN_AGAIN_AFTER: Final = 3600.0  # seconds before an open is written to the viewers item again


class RunViews:
    def __init__(
        self,
        *,
        client: AsyncWebClient,
        store: RunStore,
        inbox: Inbox,
        directory: Directory | None,
        workspace: Workspace,
        command: str = "/graph",
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._client = client
        self._store = store
        self._inbox = inbox
        self._directory = directory
        self._workspace = workspace
        self._command = command
        self._clock = clock
        self._viewers: tuple[float, dict[str, float]] | None = None
        self._published: dict[str, float] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def opened(self, user: str) -> None:
        """``user`` opened their Home tab: remember them as a viewer, and publish it."""
        try:
            known = (await self._current_viewers()).get(user)
        except StoreError:
            known = None
        if known is None or self._clock() - known > SEEN_AGAIN_AFTER:
            # One shared item records everyone: not rewritten on every open (it is billed by
            # its size), only when this person's last visit is not recent.
            try:
                await in_thread(self._store.saw_home, user, at=self._clock())
            except StoreError:
                logger.warning("home: could not record that a person opened Home")
            if self._viewers is not None:
                self._viewers[1][user] = self._clock()
        await self.publish(user)

    async def publish(self, user: str, *, note: str | None = None) -> bool:
        """Publish ``user``'s Home tab as the store has it now; whether Slack took it."""
        lock = self._locks.setdefault(user, asyncio.Lock())
        async with lock:  # one person's refreshes in order, at Slack's pace
            wait = self._published.get(user, -float("inf")) + MIN_INTERVAL - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            try:
                with_links = await self._workspace_ready()
                waiting = await self._inbox.waiting_for(user)
                runs = await in_thread(self._store.started_by, user, limit=MAX_RUNS_SHOWN)
                view = home_view(
                    waiting=waiting,
                    runs=runs,
                    link=self._link if with_links else _no_link,
                    note=note,
                    command=self._command,
                )
                await self._client.views_publish(user_id=user, view=view)
            except Exception as error:  # a view: the next change or open publishes it again
                logger.warning("home: publishing a Home tab failed (%s)", type(error).__name__, exc_info=True)
                return False
            finally:
                self._published[user] = time.monotonic()
            return True

    async def run_changed(self, run: Run) -> None:
        """Refresh the Home tabs of the people ``run``'s change concerns and who use Home."""
        try:
            viewers = await self._current_viewers()
            concerned = await self._concerned(run, viewers)
        except Exception as error:
            logger.warning("home: could not tell whose Home to refresh (%s)", type(error).__name__)
            return
        for user in sorted(concerned)[:MAX_REFRESHED]:
            await self.publish(user)

    async def _concerned(self, run: Run, viewers: dict[str, float]) -> set[str]:
        people = {run.started_by}
        open_to_channel = False
        for ask in run.asks.values():
            named = deciders(ask)
            if named is None:
                open_to_channel = True
                continue
            for principal in named:
                if principal.startswith("S") and self._directory is not None:
                    try:
                        people |= await self._directory.members(principal)
                    except Exception:
                        logger.info("home: could not read the members of a user group")
                else:
                    people.add(principal)
        if open_to_channel:
            # Anyone in the channel may decide: refresh the viewers seen lately (their
            # inbox shows it if they are in the channel).
            recent = self._clock() - 3600
            people |= {u for u, at in viewers.items() if at >= recent}
        return people & set(viewers)

    async def _current_viewers(self) -> dict[str, float]:
        now = self._clock()
        if self._viewers is None or time.monotonic() - self._viewers[0] >= VIEWERS_TTL:
            seen = await in_thread(self._store.home_viewers, since=now - VIEWER_DAYS * 86400)
            self._viewers = (time.monotonic(), dict(seen))
        return self._viewers[1]

    async def _workspace_ready(self) -> bool:
        try:
            await self._workspace.identity()
        except Exception:
            return False
        return True

    def _link(self, run: Run, ask: Ask | None) -> str | None:
        if ask is not None and ask.card is not None:
            return self._workspace.link(ask.card, thread_ts=run.thread.ts if run.thread else None)
        return self._workspace.link(run.thread) if run.thread is not None else None


def _no_link(run: Run, ask: Ask | None) -> str | None:
    return None
