"""Who is in the workspace: people, user groups, channel names and channel membership.

The bot asks Slack who may approve (``usergroups.list``, ``usergroups.users.list``), who a
person is (``users.info``) and where a person is (``users.conversations``). Tests shape the
answers as an admin would (``set_usergroup``, ``set_members``); anything a test never set
stays permissive, so tests that do not care about the directory need not describe it.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Mapping
from typing import Any, Final

from localslack.conversations import ConversationsApi, page_limit
from localslack.params import required
from localslack.state import ApiError

# users.conversations: Slack's default page (100) and default ``types`` (public channels only).
CONVERSATIONS_LIMIT: Final = 100
_KINDS: Final = {"C": "public_channel", "G": "private_channel", "D": "im"}
_TYPES: Final = frozenset({"public_channel", "private_channel", "mpim", "im"})
_CURSOR_PREFIX: Final = "next_id:"


class DirectoryApi(ConversationsApi):
    """The directory state and its handlers; ``WebApi`` registers them by method name."""

    def __init__(
        self,
        *,
        team_id: str,
        bot_user_id: str,
        bot_id: str,
        app_id: str,
        users: Mapping[str, str] | None,
        channels: Mapping[str, str] | None,
    ) -> None:
        super().__init__(team_id=team_id, bot_user_id=bot_user_id, bot_id=bot_id, app_id=app_id)
        self._user_names = dict(users or {})
        self._channel_names = dict(channels or {})
        self._usergroups: dict[str, list[str]] = {}
        self._usergroup_labels: dict[str, tuple[str, str]] = {}
        self._members: dict[str, list[str]] = {}
        self._dms: dict[str, str] = {}

    # -- people and channels ---------------------------------------------------------------------

    def user_name(self, user_id: str) -> str:
        return self._user_names.get(user_id, f"user-{user_id.lower()}")

    def channel_name(self, channel_id: str) -> str:
        return self._channel_names.get(channel_id, f"channel-{channel_id.lower()}")

    def knows_user(self, user_id: str) -> bool:
        """Whether Slack would find this user: a ``U``/``W`` id, and on the roster when one was given.

        With ``LocalSlack(users={...})`` the workspace is those people, the bot, and anyone a
        test put in a user group or a channel; without a roster every ``U``/``W`` id exists.
        """
        if not user_id.startswith(("U", "W")):
            return False
        if not self._user_names:
            return True
        listed = {*self._user_names, self.bot_user_id}
        listed.update(u for users in (*self._usergroups.values(), *self._members.values()) for u in users)
        return user_id in listed

    def set_members(self, channel: str, users: Iterable[str]) -> None:
        """Make ``channel`` have exactly ``users`` as members, as people joining and leaving would.

        A channel whose members were never set counts every known user as a member.
        """
        if isinstance(users, str):
            raise TypeError(f"set_members({channel!r}, ...) takes a list of user ids, not the string {users!r}")
        if not channel.startswith(("C", "G", "D")):
            raise ValueError(f"{channel!r} is not a conversation id (C…, G… or D…)")
        self._members[channel] = list(users)

    def is_member(self, channel: str, user_id: str) -> bool:
        members = self._members.get(channel)
        return self.knows_user(user_id) if members is None else user_id in members

    def dm_channel(self, user_id: str) -> str:
        """The ``D…`` id of the bot's DM with ``user_id`` (the App Home's Messages tab), made on first use."""
        channel = f"D{user_id[1:]}"
        if channel not in self._dms:
            self._dms[channel] = user_id
            self._members.setdefault(channel, [user_id, self.bot_user_id])
        return channel

    def conversation(self, channel_id: str) -> dict[str, Any]:
        """A conversation object as ``users.conversations`` lists it."""
        if channel_id.startswith("D"):
            members = self._members.get(channel_id) or []
            user = self._dms.get(channel_id) or next((u for u in members if u != self.bot_user_id), None)
            return {"id": channel_id, "created": 0, "is_im": True, "is_org_shared": False, "user": user}
        kind = channel_id[0]
        return {
            "id": channel_id,
            "name": self.channel_name(channel_id),
            "is_channel": kind == "C",
            "is_group": kind == "G",
            "is_im": False,
            "is_mpim": False,
            "is_private": kind == "G",
            "is_archived": False,
            "created": 0,
        }

    def _channel_ids(self) -> list[str]:
        """Every conversation this workspace has shown: named, posted in, or given members."""
        known = {*self._channel_names, *self._channels, *self._members}
        return sorted(c for c in known if c[:1] in _KINDS)

    # -- user groups -----------------------------------------------------------------------------

    def set_usergroup(
        self, group: str, users: Iterable[str], *, handle: str | None = None, name: str | None = None
    ) -> None:
        """Make user group ``group`` (an ``S…`` id) have exactly ``users``, as an admin would;
        ``usergroups.users.list`` and ``usergroups.list`` answer with them from now on.

        ``handle`` (what people type after ``@``) defaults to the id in lower case, ``name`` to the handle.
        """
        if isinstance(users, str):
            raise TypeError(f"set_usergroup({group!r}, ...) takes a list of user ids, not the string {users!r}")
        self._usergroups[group] = list(users)
        old_handle, old_name = self._usergroup_labels.get(group, (group.lower(), ""))
        handle = handle or old_handle
        self._usergroup_labels[group] = (handle, name or old_name or handle)

    def remove_usergroup(self, group: str) -> None:
        """Forget ``group``: ``usergroups.users.list`` answers ``no_such_subteam`` for it."""
        self._usergroups.pop(group, None)
        self._usergroup_labels.pop(group, None)

    def usergroup_members(self, group: str) -> list[str] | None:
        """The members of ``group``, or None for a group that does not exist."""
        users = self._usergroups.get(group)
        return list(users) if users is not None else None

    # -- Web API methods -------------------------------------------------------------------------

    def _users_info(self, params: dict[str, Any]) -> dict[str, Any]:
        user_id = str(params.get("user", ""))
        if not user_id.startswith(("U", "W")):
            raise ApiError("user_not_found")
        name = self.user_name(user_id)
        profile = {"display_name": name, "real_name": name, "real_name_normalized": name}
        user = {"id": user_id, "team_id": self.team_id, "name": name, "real_name": name}
        return {"user": user | {"tz": "UTC", "is_bot": user_id == self.bot_user_id, "profile": profile}}

    def _usergroups_users_list(self, params: dict[str, Any]) -> dict[str, Any]:
        members = self.usergroup_members(required(params, "usergroup", "no_such_subteam"))
        if members is None:
            raise ApiError("no_such_subteam")
        return {"users": members}

    def _usergroups_list(self, params: dict[str, Any]) -> dict[str, Any]:
        """Every group; ``users`` only with ``include_users``, ``user_count`` only with ``include_count``."""
        groups = []
        for group, users in self._usergroups.items():
            handle, name = self._usergroup_labels[group]
            shown: dict[str, Any] = {
                "id": group,
                "team_id": self.team_id,
                "is_usergroup": True,
                "is_subteam": True,
                "name": name,
                "description": "",
                "handle": handle,
                "is_external": False,
                "date_create": 0,
                "date_update": 0,
                "date_delete": 0,
                "auto_type": None,
                "created_by": self.bot_user_id,
                "updated_by": self.bot_user_id,
                "deleted_by": None,
                "prefs": {"channels": [], "groups": []},
            }
            if params.get("include_users"):
                shown["users"] = list(users)
            if params.get("include_count"):
                shown["user_count"] = len(users)
            groups.append(shown)
        return {"usergroups": groups}

    def _users_conversations(self, params: dict[str, Any]) -> dict[str, Any]:
        """The conversations ``user`` (default: the bot) is a member of, by id, a page at a time.

        ``types`` defaults to ``public_channel`` as on Slack; here ``C…`` ids are public
        channels, ``G…`` private ones and ``D…`` DMs.
        """
        user = params.get("user") or self.bot_user_id
        if not isinstance(user, str) or not self.knows_user(user):
            raise ApiError("user_not_found")
        types = _types(params.get("types"))
        listing = [c for c in self._channel_ids() if _KINDS[c[0]] in types and self.is_member(c, user)]
        limit = page_limit(params.get("limit"), default=CONVERSATIONS_LIMIT)
        cursor = params.get("cursor")
        start = 0
        if cursor:
            after = _cursor_id(cursor)
            start = next((i for i, c in enumerate(listing) if c >= after), len(listing))
        page, rest = listing[start : start + limit], listing[start + limit :]
        next_cursor = base64.b64encode(f"{_CURSOR_PREFIX}{rest[0]}".encode()).decode() if rest else ""
        return {"channels": [self.conversation(c) for c in page], "response_metadata": {"next_cursor": next_cursor}}


def _types(value: Any) -> frozenset[str]:
    if value in (None, ""):
        return frozenset({"public_channel"})
    types = frozenset(t.strip() for t in str(value).split(","))
    if not types <= _TYPES:
        raise ApiError("invalid_types", [f"unknown types: {sorted(types - _TYPES)}"])
    return types


def _cursor_id(cursor: Any) -> str:
    try:
        decoded = base64.b64decode(str(cursor), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        raise ApiError("invalid_cursor") from None
    if not decoded.startswith(_CURSOR_PREFIX):
        raise ApiError("invalid_cursor")
    return decoded.removeprefix(_CURSOR_PREFIX)
