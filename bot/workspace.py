"""What the bot knows of its workspace from ``auth.test``: its own bot id, the team, the URL.

Asked of Slack once per process and kept: the bot id tells the bot's own messages from
others' (``find_posted``), the team id is what a streamed message names as its
recipient's team, and the workspace URL makes message links without a
``chat.getPermalink`` call per message (a rate-limited call for every link on a Home tab).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from slack_sdk.web.async_client import AsyncWebClient

from engine.records import MessageRef


@dataclass(frozen=True)
class Identity:
    bot_id: str
    team_id: str
    url: str  # "https://<workspace>.slack.com/", "" when Slack did not say


class Workspace:
    def __init__(self, *, client: AsyncWebClient) -> None:
        self._client = client
        self._identity: Identity | None = None
        self._lock = asyncio.Lock()

    async def identity(self) -> Identity:
        if self._identity is None:
            async with self._lock:
                if self._identity is None:
                    answer = await self._client.auth_test()
                    self._identity = Identity(
                        bot_id=str(answer.get("bot_id") or ""),
                        team_id=str(answer.get("team_id") or ""),
                        url=str(answer.get("url") or ""),
                    )
        return self._identity

    def link(self, ref: MessageRef, *, thread_ts: str | None = None) -> str | None:
        """A link to ``ref`` (a reply in ``thread_ts``'s thread, when given), once the URL is known."""
        return message_link(self._identity.url if self._identity else "", ref, thread_ts=thread_ts)


def message_link(url: str, ref: MessageRef, *, thread_ts: str | None = None) -> str | None:
    """Slack's permalink form: ``<url>archives/<channel>/p<ts without the dot>``."""
    if not url.startswith("https://"):
        return None
    link = f"{url.rstrip('/')}/archives/{ref.channel}/p{ref.ts.replace('.', '')}"
    if thread_ts and thread_ts != ref.ts:
        link += f"?thread_ts={thread_ts}&cid={ref.channel}"
    return link
