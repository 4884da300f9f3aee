"""What a Slack payload must look like before anything of ours, or Bolt, reads it.

Input from Slack is signed, but signed is not the same as well-formed: Bolt's context
extraction and listener matching index into ``user``, ``team``, ``actions`` and ``view``
unchecked, so a signed body of the wrong shape used to end as a 500 with a traceback.
``inspect`` is an allow-list: the kinds the bot handles are checked field by field
(ids against Slack's id shapes, so a user id can never smuggle ``<!channel>`` into a
message), kinds it does not handle are recognised and answered quietly, and anything
else is refused with a one-line reason.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

# ASCII only, matched whole (``fullmatch``): ``$`` would let a trailing newline through,
# and ``\d`` takes any Unicode digit.
USER_ID: Final = re.compile(r"[UW][A-Z0-9]{1,20}", re.ASCII)
CHANNEL_ID: Final = re.compile(r"[CGD][A-Z0-9]{1,20}", re.ASCII)
TEAM_ID: Final = re.compile(r"T[A-Z0-9]{1,20}", re.ASCII)
ENTERPRISE_ID: Final = re.compile(r"E[A-Z0-9]{1,20}", re.ASCII)
MESSAGE_TS: Final = re.compile(r"[0-9]{1,12}\.[0-9]{1,8}", re.ASCII)
_URL: Final = re.compile(r"https?://[^\s<>|]{1,1000}", re.ASCII)
_MAX_SHORT: Final = 300  # trigger ids, view ids, action ids: Slack's are well under this
# In a Python string from ``json.loads`` every surrogate code point is unpaired (a valid
# pair is decoded into one character): text no UTF-8 store, log or Slack call can take.
_SURROGATE: Final = re.compile("[\ud800-\udfff]")

# Keys Bolt follows into nested objects to find a team, user or channel. Slack never sends
# them with a slash command; a payload that has them is not a slash command.
_NOT_IN_COMMANDS: Final = frozenset(
    {"authorizations", "enterprise", "team", "user", "channel", "view", "event", "item", "message", "container"}
)
# Parts of events and workflow steps: never in an interaction with one of the bot's own
# cards or modals, and Bolt would recurse into them.
_NOT_OURS: Final = ("event", "item", "assistant_thread", "previous_message", "function_data")


class Kind(enum.Enum):
    COMMAND = "slash command"
    BLOCK_ACTIONS = "block_actions"
    VIEW_SUBMISSION = "view_submission"
    URL_VERIFICATION = "url_verification"
    HOME_OPENED = "app_home_opened"
    IGNORED = "ignored"


@dataclass(frozen=True)
class Inspection:
    """``kind`` when the payload may go on; ``problem`` (one line) when it must be refused."""

    kind: Kind | None
    problem: str | None = None
    note: str = ""  # what an ignored payload was, for one debug line

    @classmethod
    def refuse(cls, problem: str) -> Inspection:
        return cls(kind=None, problem=problem)

    @classmethod
    def ignore(cls, note: str) -> Inspection:
        return cls(kind=Kind.IGNORED, note=note)


class _Bad(ValueError):
    pass


def not_text(value: str) -> str | None:
    """Why ``value`` is not text a person could have typed (an unpaired surrogate), or None.

    Slack's JSON may carry ``\\ud800`` on its own; Python decodes it into a string that no
    UTF-8 encoder takes, so it would fail later in the store or a log, far from the input.
    """
    found = _SURROGATE.search(value)
    if found is None:
        return None
    return f"it holds a character that is not text (an unpaired surrogate, U+{ord(found.group(0)):04X})"


def inspect(body: object, *, command: str) -> Inspection:
    """Classify and check a parsed payload (form fields, or JSON) from Slack."""
    if not isinstance(body, dict):
        return Inspection.refuse("the payload is not an object")
    try:
        if "command" in body:
            return _command(body, expected=command)
        kind = body.get("type")
        if not isinstance(kind, str) or not kind:
            return Inspection.refuse("the payload has no type")
        if kind == "url_verification":
            _text(body, "challenge", limit=_MAX_SHORT, required=True)
            return Inspection(kind=Kind.URL_VERIFICATION)
        if kind in ("block_actions", "view_submission"):
            return _interaction(body, kind)
        if kind == "event_callback":
            return _event(body)
        return Inspection.ignore(kind[:40])
    except _Bad as bad:  # ASCII: it is logged, and a key may hold what no encoder takes
        return Inspection.refuse(str(bad).encode("ascii", "backslashreplace").decode("ascii"))


def _event(body: Mapping[str, Any]) -> Inspection:
    """Events API envelopes: only ``app_home_opened`` is handled; every other event is acked."""
    event = _object(body, "event", required=True)
    if event.get("type") != "app_home_opened" or event.get("tab", "home") != "home":
        return Inspection.ignore(f"event {str(event.get('type'))[:40]} ({str(event.get('tab'))[:20]})")
    _id(event, "user", USER_ID, required=True, where="event")
    for key in ("tab", "channel", "event_ts"):
        _text(event, key, limit=_MAX_SHORT, where="event")
    for key in ("team_id", "api_app_id", "event_id", "token"):
        _text(body, key, limit=_MAX_SHORT)
    return Inspection(kind=Kind.HOME_OPENED)


def _command(body: Mapping[str, Any], *, expected: str) -> Inspection:
    for key, value in body.items():
        if not isinstance(value, str) or not_text(value) or not_text(str(key)):
            raise _Bad(f"slash command field {str(key)[:40]!a} is not text")
    if body["command"] != expected:
        return Inspection.ignore(f"command {body['command'][:40]}")
    shady = _NOT_IN_COMMANDS.intersection(body)
    if shady:
        raise _Bad(f"a slash command does not carry {sorted(shady)[0]!r}")
    _id(body, "user_id", USER_ID, required=True)
    _id(body, "channel_id", CHANNEL_ID, required=True)
    _id(body, "team_id", TEAM_ID)
    if body.get("enterprise_id"):
        _id(body, "enterprise_id", ENTERPRISE_ID)
    _text(body, "trigger_id", limit=_MAX_SHORT)
    _url(body, "response_url")
    return Inspection(kind=Kind.COMMAND)


def _interaction(body: Mapping[str, Any], kind: str) -> Inspection:
    # ``event`` even when null: Bolt reads ``payload.get("event", {})`` as an object.
    if "event" in body or any(body.get(key) is not None for key in _NOT_OURS):
        return Inspection.ignore(f"{kind} from something other than the bot's cards")
    user = _object(body, "user", required=True)
    _id(user, "id", USER_ID, required=True, where="user")
    if user.get("team_id") is not None:
        _id(user, "team_id", TEAM_ID, where="user")
    team = _object(body, "team")
    if team:
        _id(team, "id", TEAM_ID, where="team")
        _plain_fields(team, "team")
    enterprise = body.get("enterprise")
    if isinstance(enterprise, str):
        _id(body, "enterprise", ENTERPRISE_ID)
    elif enterprise is not None:
        _id(_object(body, "enterprise"), "id", ENTERPRISE_ID, where="enterprise")
    authorizations = body.get("authorizations")
    if authorizations is not None:
        if not isinstance(authorizations, list) or not all(isinstance(a, dict) for a in authorizations):
            raise _Bad("authorizations is not a list of objects")
        for authorization in authorizations:
            _plain_fields(authorization, "authorizations")
    for flag in ("is_enterprise_install", "is_ext_shared_channel"):
        if body.get(flag) is not None and not isinstance(body[flag], bool):
            raise _Bad(f"{flag} is not true or false")
    channel = _object(body, "channel")
    if channel:
        _id(channel, "id", CHANNEL_ID, where="channel")
    container = _object(body, "container")
    if container.get("channel_id") is not None:
        _id(container, "channel_id", CHANNEL_ID, where="container")
    if container.get("message_ts") is not None:
        _id(container, "message_ts", MESSAGE_TS, where="container")
    _object(body, "message")
    for key in ("trigger_id", "api_app_id", "token"):
        _text(body, key, limit=_MAX_SHORT)
    _url(body, "response_url")
    if kind == "block_actions":
        _actions(body)
        if body.get("view") is not None:
            _view(body)
    else:
        _view(body, required=True)
    return Inspection(kind=Kind(kind))


def _actions(body: Mapping[str, Any]) -> None:
    actions = body.get("actions")
    if not isinstance(actions, list) or not actions or len(actions) > 25:
        raise _Bad("no actions")
    for action in actions:
        if not isinstance(action, dict):
            raise _Bad("an action is not an object")
        _text(action, "action_id", limit=255, required=True, where="action")
        for key in ("block_id", "value", "type", "action_ts"):
            _text(action, key, limit=2000, where="action")


def _view(body: Mapping[str, Any], *, required: bool = False) -> None:
    view = _object(body, "view", required=required)
    _text(view, "callback_id", limit=255, required=required, where="view")
    _text(view, "type", limit=40, required=bool(view), where="view")  # Bolt reads it unchecked
    for key in ("id", "private_metadata", "hash", "team_id", "app_installed_team_id"):
        _text(view, key, limit=3000, where="view")
    state = _object(view, "state", where="view")
    values = _object(state, "values", where="view.state")
    for block in values.values():
        if not isinstance(block, dict) or not all(isinstance(element, dict) for element in block.values()):
            raise _Bad("view.state.values is not an object of objects")


def _object(body: Mapping[str, Any], key: str, *, required: bool = False, where: str = "") -> dict[str, Any]:
    value = body.get(key)
    if value is None and not required:
        return {}
    if not isinstance(value, dict):
        raise _Bad(f"{_name(where, key)} is not an object")
    return value


def _text(body: Mapping[str, Any], key: str, *, limit: int, required: bool = False, where: str = "") -> None:
    value = body.get(key)
    if value is None and not required:
        return
    if not isinstance(value, str) or len(value) > limit:
        raise _Bad(f"{_name(where, key)} is not text of at most {limit} characters")


def _id(body: Mapping[str, Any], key: str, shape: re.Pattern[str], *, required: bool = False, where: str = "") -> None:
    value = body.get(key)
    if value is None and not required:
        return
    if not isinstance(value, str) or not shape.fullmatch(value):
        raise _Bad(f"{_name(where, key)} is not a Slack id")


def _url(body: Mapping[str, Any], key: str) -> None:
    value = body.get(key)
    if value is not None and (not isinstance(value, str) or not _URL.fullmatch(value)):
        raise _Bad(f"{key} is not a URL")


def _plain_fields(body: Mapping[str, Any], where: str) -> None:
    """Objects Bolt searches for ids must hold plain values (it recurses into nested ones)."""
    for key, value in body.items():
        if value is not None and not isinstance(value, str | bool | int):
            raise _Bad(f"{where}.{str(key)[:40]} is not a plain value")


def _name(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key
