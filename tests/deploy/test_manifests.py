"""The Slack app manifests: HTTP (Lambda or `approval-bot serve`) and Socket Mode.

Both ask for exactly the scopes the Web API methods the bot calls need, and nothing
for features it does not have (one event, app_home_opened; no user scopes).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.settings import Settings

REPO = Path(__file__).resolve().parents[2]
HTTP = REPO / "slack-app-manifest.yaml"
SOCKET = REPO / "slack-app-manifest.socket.yaml"

Manifest = dict[str, Any]

# Every Slack Web API method the bot calls, with the bot scope it needs (None: no scope).
# A call the bot starts making that is not listed here fails the test below, so its
# scope is decided on purpose rather than found missing in production.
METHOD_SCOPES: dict[str, str | None] = {
    "chat_postMessage": "chat:write",
    "chat_update": "chat:write",
    "chat_delete": "chat:write",
    "conversations_history": "channels:history",  # and groups:history in private channels
    "conversations_replies": "channels:history",  # likewise
    "views_open": None,  # needs only the trigger_id of a click
    "auth_test": None,
    "usergroups_users_list": "usergroups:read",  # members of a group a policy names
    "usergroups_list": "usergroups:read",  # the groups one person is in (their inbox)
    "users_conversations": "channels:read",  # the channels one person is in; groups:read for private ones
    "chat_startStream": "chat:write",  # the status message, streamed
    "chat_appendStream": "chat:write",
    "chat_stopStream": "chat:write",
    "views_publish": None,  # the App Home tab
}
PRIVATE_CHANNEL_TWIN = {"channels:history": "groups:history", "channels:read": "groups:read"}
EXPECTED_SCOPES = {
    "commands",
    "chat:write",
    "channels:history",
    "groups:history",
    "usergroups:read",
    "channels:read",
    "groups:read",
}

_API_CALL = re.compile(
    r"\.((?:chat|views|conversations|auth|users|reactions|files|pins|bookmarks|apps|bots|"
    r"emoji|dnd|search|stars|usergroups|admin|oauth|dialog|reminders)_[A-Za-z_]+)\b"
)


def _load(path: Path) -> Manifest:
    loaded = yaml.safe_load(path.read_text())
    assert isinstance(loaded, dict), path
    return loaded


@pytest.fixture(scope="module", params=[HTTP, SOCKET], ids=["http", "socket"])
def manifest(request: pytest.FixtureRequest) -> Manifest:
    path = request.param
    assert isinstance(path, Path)
    return _load(path)


def _called_methods() -> set[str]:
    """Web API methods named in the bot's own code (not the local Slack or the demo)."""
    called: set[str] = set()
    for path in (REPO / "bot").rglob("*.py"):
        if {"localslack", "demo"} & set(path.relative_to(REPO / "bot").parts):
            continue
        called |= set(_API_CALL.findall(path.read_text()))
    return called


def test_the_bot_calls_only_methods_whose_scopes_are_known() -> None:
    called = _called_methods()
    assert called, "found no Web API calls: has the code moved?"
    assert called <= set(METHOD_SCOPES), f"decide the scope of {sorted(called - set(METHOD_SCOPES))}"


def test_the_scopes_are_exactly_what_the_calls_need(manifest: Manifest) -> None:
    needed = {"commands"}  # the slash command itself
    for method in _called_methods():
        scope = METHOD_SCOPES[method]
        if scope is not None:
            needed |= {scope, PRIVATE_CHANNEL_TWIN.get(scope, scope)}
    assert needed == EXPECTED_SCOPES
    scopes = manifest["oauth_config"]["scopes"]
    assert set(scopes) == {"bot"}, "no user scopes"
    assert sorted(scopes["bot"]) == sorted(EXPECTED_SCOPES)


def test_the_slash_command_is_the_default_one(manifest: Manifest) -> None:
    (command,) = manifest["features"]["slash_commands"]
    assert command["command"] == Settings.model_fields["slack_command"].default == "/graph"
    assert command["should_escape"] is False
    assert manifest["features"]["bot_user"]["display_name"]


def test_no_features_the_bot_does_not_have(manifest: Manifest) -> None:
    settings = manifest["settings"]
    assert settings["event_subscriptions"]["bot_events"] == ["app_home_opened"]  # the one event it handles
    assert settings["interactivity"]["is_enabled"] is True
    assert settings["token_rotation_enabled"] is False
    assert set(manifest["features"]) == {"bot_user", "slash_commands", "app_home"}
    assert manifest["features"]["app_home"] == {"home_tab_enabled": True, "messages_tab_enabled": False}


def test_the_http_manifest_points_both_urls_at_the_bot() -> None:
    manifest = _load(HTTP)
    assert manifest["settings"]["socket_mode_enabled"] is False
    (command,) = manifest["features"]["slash_commands"]
    urls = [
        command["url"],
        manifest["settings"]["interactivity"]["request_url"],
        manifest["settings"]["event_subscriptions"]["request_url"],
    ]
    assert urls == ["https://YOUR-URL/slack/events"] * 3
    assert '"/slack/events"' in (REPO / "bot" / "server.py").read_text()


def test_the_socket_manifest_has_no_urls() -> None:
    manifest = _load(SOCKET)
    assert manifest["settings"]["socket_mode_enabled"] is True
    (command,) = manifest["features"]["slash_commands"]
    assert "url" not in command
    assert "request_url" not in manifest["settings"]["interactivity"]
    assert "https://" not in yaml.safe_dump(manifest)


def test_both_manifests_describe_the_same_app() -> None:
    http, socket = _load(HTTP), _load(SOCKET)
    (http_command,) = http["features"]["slash_commands"]
    (socket_command,) = socket["features"]["slash_commands"]
    assert {k: v for k, v in http_command.items() if k != "url"} == socket_command
    assert http["oauth_config"] == socket["oauth_config"]
