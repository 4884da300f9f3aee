"""Who is in a Slack user group or channel: the facts a policy's decisions rest on.

Policies name groups (``S…``) as approvers or starters, and an ask that names no approvers
is open to anyone in the run's channel. Slack's ``usergroups.users.list`` (scope
``usergroups:read``) and ``users.conversations`` are rate-limited and asked on a person's
click, so answers are cached for ``ttl`` seconds, and lookups that arrive together for one
group or person share one call.

A decision must never rest on a stale fact: someone removed from a group or channel loses
its rights within ``ttl``, however long Slack fails. So nothing is served older than
``ttl``; a lookup that fails raises, and the caller counts the person as not in the group
or channel (fail closed). One warning is logged per outage, not one per click.
``DIRECTORY_TTL_SECONDS`` overrides the default ``ttl`` (tests shorten it).
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from slack_sdk.web.async_client import AsyncWebClient

logger = logging.getLogger(__name__)

DEFAULT_TTL = 60.0
MAX_CHANNEL_PAGES = 5  # of 200 channels: the channels looked in for one person


def ttl_from_environment() -> float:
    """``DIRECTORY_TTL_SECONDS`` when it is a positive number, else ``DEFAULT_TTL``."""
    try:
        value = float(os.environ.get("DIRECTORY_TTL_SECONDS", DEFAULT_TTL))
    except ValueError:
        return DEFAULT_TTL
    return value if 0 < value < math.inf else DEFAULT_TTL


@dataclass(frozen=True)
class _Seen:
    at: float  # when Slack answered
    found: frozenset[str]


class SlackDirectory:
    """``engine.policy.Directory`` over Slack's user groups and channels, briefly cached;
    also the groups and channels one person is in (``engine.inbox.Memberships``)."""

    def __init__(
        self, client: AsyncWebClient, ttl: float | None = None, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._client = client
        self._ttl = ttl_from_environment() if ttl is None else ttl
        self._clock = clock
        self._seen: dict[str, _Seen] = {}
        self._pending: dict[str, asyncio.Task[frozenset[str]]] = {}
        self._failing: set[str] = set()

    async def members(self, group: str) -> frozenset[str]:
        """The user ids in ``group``, at most ``ttl`` seconds old.

        Raises:
            slack_sdk.errors.SlackApiError (or a connection error): the lookup failed
                (e.g. ``no_such_subteam``, ``missing_scope``, Slack down); the caller
                counts the person as not in the group.
        """
        return await self._cached(f"group:{group}", lambda: self._group_members(group))

    async def channels_of(self, user: str) -> frozenset[str]:
        """The channels ``user`` is in that the bot can see (``users.conversations``), at
        most ``ttl`` seconds old; raises as ``members`` does."""
        return await self._cached(f"channels:{user}", lambda: self._channels_of(user))

    async def in_channel(self, user: str, channel: str) -> bool:
        """Whether ``user`` is in ``channel``; raises when Slack cannot say (not in it, then)."""
        return channel in await self.channels_of(user)

    async def groups_of(self, user: str) -> frozenset[str]:
        """The user groups ``user`` is in: one ``usergroups.list`` for all groups, cached."""
        listed = await self._cached("groups", self._all_groups)
        return frozenset(entry.split(":", 1)[1] for entry in listed if entry.split(":", 1)[0] == user)

    async def _cached(self, key: str, fetch: Callable[[], Awaitable[frozenset[str]]]) -> frozenset[str]:
        seen = self._seen.get(key)
        if seen is not None and self._clock() - seen.at < self._ttl:
            return seen.found
        task = self._pending.get(key)
        if task is None or task.done() or task.get_loop() is not asyncio.get_running_loop():
            # (A task of another, finished event loop, say a previous Lambda invocation's, is
            # not awaited: it would never complete here.)
            task = asyncio.ensure_future(self._refresh(key, fetch))
            self._pending[key] = task
            task.add_done_callback(lambda done: self._settled(key, done))
        # Shielded: a caller that gives up does not cancel the lookup the others wait for.
        return await asyncio.shield(task)

    def _settled(self, key: str, task: asyncio.Task[frozenset[str]]) -> None:
        if self._pending.get(key) is task:
            del self._pending[key]
        if not task.cancelled():
            task.exception()  # retrieved, even when every waiter gave up

    async def _refresh(self, key: str, fetch: Callable[[], Awaitable[frozenset[str]]]) -> frozenset[str]:
        try:
            found = await fetch()
        except Exception as error:
            self._seen.pop(key, None)  # what was known is past its ttl: never served again
            kind = key.split(":", 1)[0]
            if kind not in self._failing:
                self._failing.add(kind)
                logger.warning(
                    "could not look up %s (%s: %s); counting people as not in them until Slack answers",
                    {"group": "user group members", "channels": "channel memberships"}.get(kind, "user groups"),
                    type(error).__name__,
                    error,
                )
            raise
        self._seen[key] = _Seen(at=self._clock(), found=found)
        self._failing.discard(key.split(":", 1)[0])
        return found

    async def _group_members(self, group: str) -> frozenset[str]:
        response = await self._client.usergroups_users_list(usergroup=group)
        return frozenset(str(user) for user in response.get("users") or ())

    async def _all_groups(self) -> frozenset[str]:
        """Every (member, group) pair, as ``"<user>:<group>"``."""
        response = await self._client.usergroups_list(include_users=True)
        return frozenset(
            f"{user}:{g['id']}"
            for g in response.get("usergroups") or ()
            if isinstance(g, dict) and g.get("id")
            for user in g.get("users") or ()
        )

    async def _channels_of(self, user: str) -> frozenset[str]:
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
        return frozenset(channels)
