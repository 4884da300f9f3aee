"""Every live mention, broadcast and link in what the bot sent: the proof that text is inert.

Slack turns ``<@U…>``, ``<!subteam^S…>``, ``<!here>``, ``<!channel>``, ``<!everyone>``,
``<#C…>`` and ``<https://…|label>`` into pings and links wherever it parses markup: a
message's ``text``, ``mrkdwn`` text objects, ``markdown`` blocks, streamed markdown, and the
matching rich text elements. ``plain_text`` objects (headers, labels, an input's
pre-filled value) are never parsed. Text the bot escaped (``&lt;@U…&gt;``) shows as text
and pings nobody, so it is not counted. ``link_names`` (or ``parse=full``) on a call
would make Slack find bare ``@here`` and ``@name`` too, so such a call counts as a token.

:func:`sent_mentions` walks every Web API call, every response_url post and every
ephemeral (slash command answers included) of a :class:`~localslack.server.LocalSlack`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

from localslack.state import SlackState

# Markup as Slack parses it: ``<`` then anything but angle brackets, then ``>``. Escaped text
# holds no raw ``<``, so every match is markup the sender meant (or failed to escape).
_TOKEN: Final = re.compile(r"<([^<>]+)>")
_DATE: Final = re.compile(r"!date\^")  # a localized date: shown, never a ping
_PARSED_KEYS: Final = ("text", "markdown_text")
# Rich text elements that ping or link: (the key that holds the target, the token they amount to).
_RICH: Final = {
    "user": ("user_id", "<@{}>"),
    "usergroup": ("usergroup_id", "<!subteam^{}>"),
    "broadcast": ("range", "<!{}>"),
    "channel": ("channel_id", "<#{}>"),
    "link": ("url", "<{}>"),
}


@dataclass(frozen=True)
class Sent:
    """One live token: where it was sent (``chat.postMessage``, ``ephemeral``, …) and the token."""

    where: str
    token: str

    @property
    def target(self) -> str:
        """``@U0ALICE``, ``!here``, ``!subteam^S0OPS``, ``https://…``: the token without its label."""
        return self.token[1:-1].split("|", 1)[0]


def live_tokens(text: str) -> list[str]:
    """The markup tokens Slack would turn into a ping or a link in ``text`` (dates left out)."""
    return [m.group(0) for m in _TOKEN.finditer(text) if not _DATE.match(m.group(1))]


def message_tokens(payload: Any) -> list[str]:
    """Live tokens of a message, a view or a call's params (top-level text, blocks, chunks)."""
    found: list[str] = []
    if isinstance(payload, dict):
        if payload.get("mrkdwn") is not False:
            found += [t for key in _PARSED_KEYS if isinstance(payload.get(key), str) for t in live_tokens(payload[key])]
        for key in ("blocks", "view", "chunks", "attachments"):
            found += _nested(payload.get(key))
    return found


def sent_mentions(slack: SlackState) -> list[Sent]:
    """Every live token in everything the bot sent to ``slack``, in order of sending."""
    found: list[Sent] = []
    for call in slack.calls:
        method, params = call
        found += [Sent(method, t) for t in message_tokens(params)]
        if _truthy(params.get("link_names")) or params.get("parse") == "full":
            found.append(Sent(method, f"<link_names={params.get('link_names')} parse={params.get('parse')}>"))
    for response in slack.responses:
        found += [Sent("response_url", t) for t in message_tokens(response.get("body"))]
    for ephemeral in slack.ephemerals():
        found += [Sent("ephemeral", t) for t in message_tokens(ephemeral)]
    return found


def _nested(node: Any) -> list[str]:
    """Live tokens inside blocks, views and chunks: parsed texts scanned, rich text elements as they are."""
    found: list[str] = []
    if isinstance(node, dict):
        kind = node.get("type")
        if kind in ("mrkdwn", "markdown", "markdown_text") and isinstance(node.get("text"), str):
            found += live_tokens(node["text"])
        elif kind in _RICH and node.get(_RICH[kind][0]):
            found.append(_RICH[kind][1].format(node[_RICH[kind][0]]))
        for key, value in node.items():
            if not (key == "text" and isinstance(value, str)):
                found += _nested(value)
    elif isinstance(node, list):
        for item in node:
            found += _nested(item)
    return found


def _truthy(value: Any) -> bool:
    return value in (True, 1, "1", "true", "True")
