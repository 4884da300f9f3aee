"""Who is in a Slack user group, for policies that name groups (``S…``) as approvers or starters.

Slack's ``usergroups.users.list`` (scope ``usergroups:read``) is rate-limited (Tier 2) and
is asked on a person's click, so members are cached per group for ``ttl`` seconds, and
clicks that arrive together for one group share one call. Membership changes rarely and
a minute's delay is harmless; refusing every click while Slack has a bad moment is not,
so a failed refresh keeps serving the members last seen for another ``ttl`` before it
tries again (with one warning per outage), for at most ``MAX_STALE`` seconds: someone
removed from a group must not keep its rights through a long outage. Past that, and for
a group never fetched, the error reaches the caller (who counts the person as not in it).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from slack_sdk.web.async_client import AsyncWebClient

logger = logging.getLogger(__name__)

DEFAULT_TTL = 60.0
MAX_STALE = 900.0  # seconds members last read from Slack may stand in while it fails
MAX_CHANNEL_PAGES = 5  # of 200 channels: the channels one person's inbox looks in


@dataclass(frozen=True)
class _Seen:
    at: float  # when Slack was last asked (successfully or not)
    members: frozenset[str]
    fetched: float  # when Slack last answered


class SlackDirectory:
    """``engine.policy.Directory`` over Slack's user groups, briefly cached; also the
    groups and channels one person is in (``engine.inbox.Memberships``), for their inbox."""

    def __init__(
        self, client: AsyncWebClient, ttl: float = DEFAULT_TTL, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._client = client
        self._ttl = ttl
        self._clock = clock
        self._seen: dict[str, _Seen] = {}
        self._pending: dict[str, asyncio.Task[frozenset[str]]] = {}
        self._warned: set[str] = set()
        self._all_groups: tuple[float, dict[str, frozenset[str]]] | None = None
        self._channels: dict[str, tuple[float, frozenset[str]]] = {}

    async def groups_of(self, user: str) -> frozenset[str]:
        """The user groups ``user`` is in: one ``usergroups.list`` for all groups, cached."""
        if self._all_groups is None or self._clock() - self._all_groups[0] >= self._ttl:
            response = await self._client.usergroups_list(include_users=True)
            groups = {
                str(g["id"]): frozenset(str(u) for u in g.get("users") or ())
                for g in response.get("usergroups") or ()
                if isinstance(g, dict) and g.get("id")
            }
            self._all_groups = (self._clock(), groups)
        return frozenset(group for group, members in self._all_groups[1].items() if user in members)

    async def channels_of(self, user: str) -> frozenset[str]:
        """The channels ``user`` is in that the bot can see (``users.conversations``), cached."""
        seen = self._channels.get(user)
        if seen is not None and self._clock() - seen[0] < self._ttl:
            return seen[1]
        channels: set[str] = set()
        cursor = None
        for _ in range(MAX_CHANNEL_PAGES):
            page = await self._client.users_conversations(
                user=user,
                types="public_channel,private_channel",
                exclude_archived=True,
                limit=200,
                **({"cursor": cursor} if cursor else {}),
            )
            channels.update(str(c["id"]) for c in page.get("channels") or () if isinstance(c, dict) and c.get("id"))
            cursor = (page.get("response_metadata") or {}).get("next_cursor")
            if not cursor:
                break
        found = frozenset(channels)
        self._channels[user] = (self._clock(), found)
        return found

    async def members(self, group: str) -> frozenset[str]:
        """The user ids in ``group``; cached for ``ttl`` seconds, stale while Slack fails.

        Raises:
            slack_sdk.errors.SlackApiError (or a connection error): the lookup failed and
                the group was never fetched before (e.g. ``no_such_subteam``, ``missing_scope``).
        """
        seen = self._seen.get(group)
        if seen is not None and self._clock() - seen.at < self._ttl:
            return seen.members
        task = self._pending.get(group)
        if task is None or task.done() or task.get_loop() is not asyncio.get_running_loop():
            # (A task of another, finished event loop, say a previous Lambda invocation's, is
            # not awaited: it would never complete here.)
            task = asyncio.ensure_future(self._refresh(group))
            self._pending[group] = task
            task.add_done_callback(lambda done: self._settled(group, done))
        # Shielded: a caller that gives up does not cancel the lookup the others wait for.
        return await asyncio.shield(task)

    def _settled(self, group: str, task: asyncio.Task[frozenset[str]]) -> None:
        if self._pending.get(group) is task:
            del self._pending[group]
        if not task.cancelled():
            task.exception()  # retrieved, even when every waiter gave up

    async def _refresh(self, group: str) -> frozenset[str]:
        try:
            response = await self._client.usergroups_users_list(usergroup=group)
        except Exception as error:
            seen = self._seen.get(group)
            if seen is None or self._clock() - seen.fetched > MAX_STALE:
                raise
            if group not in self._warned:
                self._warned.add(group)
                logger.warning(
                    "could not refresh the members of user group %s (%s: %s); using the ones last seen",
                    group,
                    type(error).__name__,
                    error,
                )
            # Not asked again for another ttl: each try may wait out Slack's retries.
            self._seen[group] = _Seen(at=self._clock(), members=seen.members, fetched=seen.fetched)
            return seen.members
        members = frozenset(str(user) for user in response.get("users") or ())
        now = self._clock()
        self._seen[group] = _Seen(at=now, members=members, fetched=now)
        self._warned.discard(group)
        return members
