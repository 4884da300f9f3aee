"""``bot.payloads.inspect``: the allow-list every Slack payload passes before Bolt or a listener reads it.

The shapes are Slack's own (after the samples in bolt-python's scenario tests), then broken
one field at a time: each broken one must be refused with a one-line reason, each kind the
bot does not handle must be recognised and ignored, and nothing may raise.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.payloads import Inspection, Kind, inspect

COMMAND = "/graph"
INJECTED_USER = "U123><!channel> <https://evil.example|x>"

Payload = dict[str, Any]


def slash_command(**changes: Any) -> Payload:
    """A slash command's form fields, as Slack posts them (all text)."""
    form: Payload = {
        "token": "verification_token",
        "team_id": "T0111",
        "team_domain": "test-domain",
        "enterprise_id": "E0111",
        "enterprise_name": "Org Name",
        "channel_id": "C0111",
        "channel_name": "random",
        "user_id": "W0111",
        "user_name": "primary-owner",
        "command": COMMAND,
        "text": "run deploy billing 1.2.3",
        "api_app_id": "A0111",
        "is_enterprise_install": "false",
        "response_url": "https://hooks.slack.com/commands/T0111/111/xxxxx",
        "trigger_id": "111.111.xxx",
    }
    form.update(changes)
    return {k: v for k, v in form.items() if v is not _DROP}


def block_actions(**changes: Any) -> Payload:
    """A click on a card's button in a channel."""
    body: Payload = {
        "type": "block_actions",
        "user": {"id": "W0111", "username": "primary-owner", "name": "primary-owner", "team_id": "T0111"},
        "api_app_id": "A0111",
        "token": "verification_token",
        "container": {"type": "message", "message_ts": "1712345678.123456", "channel_id": "C0111"},
        "trigger_id": "111.222.valid",
        "team": {"id": "T0111", "domain": "workspace-domain", "enterprise_id": "E0111", "enterprise_name": "Org"},
        "enterprise": None,
        "is_enterprise_install": False,
        "channel": {"id": "C0111", "name": "test-channel"},
        "message": {"type": "message", "ts": "1712345678.123456", "text": "card", "blocks": []},
        "state": {"values": {}},
        "response_url": "https://hooks.slack.com/actions/T0111/111/random-value",
        "actions": [
            {
                "action_id": "ask:approve",
                "block_id": "card:a1",
                "text": {"type": "plain_text", "text": "Approve", "emoji": False},
                "value": '{"r":"run1","a":"a1"}',
                "type": "button",
                "action_ts": "1712345680.194939",
            }
        ],
    }
    body.update(changes)
    return {k: v for k, v in body.items() if v is not _DROP}


def view_submission(**view_changes: Any) -> Payload:
    """The submission of the Reply modal."""
    view: Payload = {
        "id": "V0111",
        "team_id": "T0111",
        "type": "modal",
        "blocks": [],
        "private_metadata": '{"r":"run1","a":"a1","c":"C0111","t":"1712345678.123456"}',
        "callback_id": "ask:reply",
        "state": {"values": {"ask_text": {"ask_text_input": {"type": "plain_text_input", "value": "use the canary"}}}},
        "hash": "1596530361.3wRYuk3R",
        "title": {"type": "plain_text", "text": "Reply"},
        "previous_view_id": None,
        "root_view_id": "V0111",
        "app_id": "A0111",
        "external_id": "",
        "app_installed_team_id": "T0111",
        "bot_id": "B0111",
    }
    view.update(view_changes)
    return {
        "type": "view_submission",
        "team": {"id": "T0111", "domain": "workspace-domain"},
        "user": {"id": "U0111", "username": "bob", "name": "bob", "team_id": "T0111"},
        "api_app_id": "A0111",
        "token": "verification_token",
        "trigger_id": "111.222.xxx",
        "view": {k: v for k, v in view.items() if v is not _DROP},
        "response_urls": [],
        "is_enterprise_install": False,
    }


class _Drop:
    def __repr__(self) -> str:
        return "<dropped>"


_DROP: Any = _Drop()


def _with(base: Payload, path: str, value: Any) -> Payload:
    """A deep copy of ``base`` with ``path`` (dot-separated; digits index lists) set, or dropped."""
    body = copy.deepcopy(base)
    *parents, last = path.split(".")
    node: Any = body
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if value is _DROP:
        del node[last]
    elif isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return body


def _check(inspection: Inspection) -> Inspection:
    """Whatever the verdict, a reason is one short line and an ignore says what was ignored."""
    if inspection.problem is not None:
        assert inspection.kind is None
        assert "\n" not in inspection.problem and 0 < len(inspection.problem) <= 200, inspection.problem
    if inspection.kind is Kind.IGNORED:
        assert inspection.note and len(inspection.note) <= 60, inspection.note
    return inspection


# -- accepted ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        (slash_command(), Kind.COMMAND),
        (slash_command(text="", enterprise_id=""), Kind.COMMAND),  # Slack sends empty fields as ""
        (slash_command(enterprise_id=_DROP, enterprise_name=_DROP, team_id=_DROP), Kind.COMMAND),
        (slash_command(trigger_id=_DROP, response_url=_DROP), Kind.COMMAND),
        (block_actions(), Kind.BLOCK_ACTIONS),
        (block_actions(enterprise={"id": "E0111", "name": "Org"}, is_enterprise_install=True), Kind.BLOCK_ACTIONS),
        (block_actions(enterprise="E0111"), Kind.BLOCK_ACTIONS),
        (
            block_actions(authorizations=[{"enterprise_id": None, "team_id": "T0111", "is_bot": True}]),
            Kind.BLOCK_ACTIONS,
        ),
        (block_actions(container={"type": "message", "is_ephemeral": True}, message=_DROP), Kind.BLOCK_ACTIONS),
        (block_actions(channel=_DROP, team=_DROP, container=_DROP, message=_DROP), Kind.BLOCK_ACTIONS),
        (block_actions(actions=[{"action_id": "some:other"}]), Kind.BLOCK_ACTIONS),
        (block_actions(item=None, assistant_thread=None), Kind.BLOCK_ACTIONS),  # null is as good as absent
        (  # a click inside a modal carries the view
            block_actions(view={"id": "V1", "type": "modal", "callback_id": "ask:edit", "state": {"values": {}}}),
            Kind.BLOCK_ACTIONS,
        ),
        (view_submission(), Kind.VIEW_SUBMISSION),
        (view_submission(state={}), Kind.VIEW_SUBMISSION),  # an empty modal's state, as Slack sends it
        (view_submission(private_metadata="x" * 3000), Kind.VIEW_SUBMISSION),
        ({"token": "Jhj5dZrV", "challenge": "3eZbrw1aBm2rZgRNFdxV", "type": "url_verification"}, Kind.URL_VERIFICATION),
    ],
    ids=lambda value: value.name if isinstance(value, Kind) else "",
)
def test_accepted_shapes(body: Payload, kind: Kind) -> None:
    inspection = _check(inspect(body, command=COMMAND))
    assert (inspection.kind, inspection.problem) == (kind, None)


@pytest.mark.parametrize("user", ["U0123ABCD", "W012ABC", "U1"])
@pytest.mark.parametrize("channel", ["C0123", "G01", "D01"])
def test_real_shaped_ids_are_accepted_everywhere_they_appear(user: str, channel: str) -> None:
    assert _check(inspect(slash_command(user_id=user, channel_id=channel), command=COMMAND)).kind is Kind.COMMAND
    click = block_actions(
        user={"id": user, "team_id": "T0123"},
        channel={"id": channel},
        container={"channel_id": channel, "message_ts": "1.2"},
        team={"id": "T0123"},
        enterprise={"id": "E0123"},
    )
    assert _check(inspect(click, command=COMMAND)).kind is Kind.BLOCK_ACTIONS


@pytest.mark.parametrize(("team", "enterprise"), [("T0123", "E0123"), ("T1", "E1"), ("T0123ABCDEFGHIJKLMNOP", "")])
def test_real_shaped_team_and_enterprise_ids_are_accepted(team: str, enterprise: str) -> None:
    command = slash_command(team_id=team, enterprise_id=enterprise)
    assert _check(inspect(command, command=COMMAND)).kind is Kind.COMMAND
    click = block_actions(team={"id": team}, enterprise=enterprise or None, user={"id": "U1", "team_id": team})
    assert _check(inspect(click, command=COMMAND)).kind is Kind.BLOCK_ACTIONS


# -- ignored: kinds the bot does not handle ---------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(
            {
                "token": "verification_token",
                "team_id": "T0111",
                "api_app_id": "A0111",
                "event": {"type": "app_mention", "user": "U0111", "channel": "C0111", "text": "hi"},
                "type": "event_callback",
                "event_id": "Ev0111",
                "event_time": 1599616881,
                "authorizations": [{"team_id": "T0111", "user_id": "U0BOT", "is_bot": True}],
            },
            id="event_callback",
        ),
        pytest.param(
            {"type": "view_closed", "user": {"id": "U0111"}, "view": {"id": "V1"}, "is_cleared": False},
            id="view_closed",
        ),
        pytest.param(
            {
                "type": "shortcut",
                "token": "verification_token",
                "action_ts": "111.111",
                "team": {"id": "T0111", "domain": "workspace-domain"},
                "user": {"id": "W0111", "username": "primary-owner", "team_id": "T0111"},
                "callback_id": "test-shortcut",
                "trigger_id": "111.111.xxxxxx",
            },
            id="shortcut",
        ),
        pytest.param(
            {
                "type": "message_action",
                "callback_id": "x",
                "user": {"id": "U0111"},
                "channel": {"id": "C0111"},
                "message": {"ts": "1.2"},
            },
            id="message_action",
        ),
        pytest.param(
            {"type": "block_suggestion", "action_id": "a", "block_id": "b", "value": "x", "user": {"id": "U1"}},
            id="block_suggestion",
        ),
        pytest.param({"type": "interactive_message", "callback_id": "x", "actions": "?"}, id="legacy attachment"),
        pytest.param({"type": "app_rate_limited", "minute_rate_limited": 1518467820}, id="app_rate_limited"),
        pytest.param(slash_command(command="/other", user_id=INJECTED_USER, channel_id="C1;DROP"), id="/other"),
        # Interactions that carry parts of events or workflow steps never come from the bot's cards.
        pytest.param(block_actions(event={"type": "x"}), id="block_actions+event"),
        pytest.param(block_actions(item={"type": "message"}), id="block_actions+item"),
        pytest.param(block_actions(assistant_thread={"channel_id": "D1"}), id="block_actions+assistant_thread"),
        pytest.param(block_actions(function_data={"execution_id": "Fx1"}), id="block_actions+function_data"),
        pytest.param(block_actions(previous_message={"ts": "1.2"}), id="block_actions+previous_message"),
        pytest.param(_with(view_submission(), "event", {"type": "x"}), id="view_submission+event"),
    ],
)
def test_kinds_the_bot_does_not_handle_are_ignored(body: Payload) -> None:
    inspection = _check(inspect(body, command=COMMAND))
    assert inspection.kind is Kind.IGNORED and inspection.problem is None, inspection


@pytest.mark.parametrize("body", [block_actions(event=None), _with(view_submission(), "event", None)])
def test_a_null_event_never_reaches_bolt(body: Payload) -> None:
    """Bolt's IgnoringSelfEvents middleware reads ``body.get("event", {}).get("bot_id")``: for a
    present ``"event": null`` that is ``None.get``, a 500 with a traceback."""
    inspection = _check(inspect(body, command=COMMAND))
    assert inspection.kind in (None, Kind.IGNORED), inspection


def test_an_ignored_note_is_short_even_for_a_huge_type() -> None:
    inspection = _check(inspect({"type": "x" * 10_000}, command=COMMAND))
    assert inspection.kind is Kind.IGNORED and inspection.note == "x" * 40


# -- refused ---------------------------------------------------------------------------------------

_Refused = tuple[object, str]


def _refused_cases() -> list[Any]:
    """``(body, words the reason must contain)``, one broken thing each."""
    cases: list[tuple[str, object, str]] = [
        # not an object at all
        ("a list", [block_actions()], "not an object"),
        ("a string", "payload", "not an object"),
        ("a number", 12, "not an object"),
        ("null", None, "not an object"),
        ("true", True, "not an object"),
        ("no type", {"user": {"id": "U1"}}, "no type"),
        ("type a number", {"type": 1}, "no type"),
        ("type a list", {"type": ["block_actions"]}, "no type"),
        # slash commands
        ("text a list", slash_command(text=["run"]), "'text' is not text"),
        ("user_id a number", slash_command(user_id=1), "'user_id' is not text"),
        ("command null", slash_command(command=None), "'command' is not text"),
        ("user injection", slash_command(user_id=INJECTED_USER), "user_id is not a Slack id"),
        ("user lower case", slash_command(user_id="u0111"), "user_id is not a Slack id"),
        ("user a channel", slash_command(user_id="C0111"), "user_id is not a Slack id"),
        ("user missing", slash_command(user_id=_DROP), "user_id is not a Slack id"),
        ("channel injection", slash_command(channel_id="C1;DROP"), "channel_id is not a Slack id"),
        ("channel missing", slash_command(channel_id=_DROP), "channel_id is not a Slack id"),
        ("channel a user", slash_command(channel_id="U0111"), "channel_id is not a Slack id"),
        ("team wrong", slash_command(team_id="X0111"), "team_id is not a Slack id"),
        ("enterprise wrong", slash_command(enterprise_id="E<!here>"), "enterprise_id is not a Slack id"),
        ("trigger too long", slash_command(trigger_id="1" * 301), "trigger_id is not text"),
        ("response_url javascript", slash_command(response_url="javascript:alert(1)"), "response_url is not a URL"),
        ("response_url with space", slash_command(response_url="https://a.example/x y"), "response_url is not a URL"),
        ("response_url markup", slash_command(response_url="https://a|<!channel>"), "response_url is not a URL"),
    ]
    for shady in (
        "authorizations",
        "enterprise",
        "team",
        "user",
        "channel",
        "view",
        "event",
        "item",
        "message",
        "container",
    ):
        cases.append((f"command with {shady}", slash_command(**{shady: "x"}), f"does not carry {shady!r}"))
    cases += [
        # url_verification
        ("challenge missing", {"type": "url_verification"}, "challenge is not text"),
        ("challenge a list", {"type": "url_verification", "challenge": ["x"]}, "challenge is not text"),
        ("challenge too long", {"type": "url_verification", "challenge": "x" * 301}, "challenge is not text"),
        # interactions: who
        ("user missing", block_actions(user=_DROP), "user is not an object"),
        ("user a string", block_actions(user="U0111"), "user is not an object"),
        ("user injection", block_actions(user={"id": INJECTED_USER}), "user.id is not a Slack id"),
        ("user id a number", block_actions(user={"id": 111}), "user.id is not a Slack id"),
        ("user team wrong", block_actions(user={"id": "U1", "team_id": "T-1"}), "user.team_id is not a Slack id"),
        ("team a list", block_actions(team=["T0111"]), "team is not an object"),
        ("team id wrong", block_actions(team={"id": "T0111 <!channel>"}), "team.id is not a Slack id"),
        ("team nested", block_actions(team={"id": "T0111", "x": {"id": "T1"}}), "team.x is not a plain value"),
        ("enterprise wrong", block_actions(enterprise="Enope!"), "enterprise is not a Slack id"),
        ("enterprise a list", block_actions(enterprise=["E1"]), "enterprise is not an object"),
        (
            "enterprise id a number",
            block_actions(enterprise={"id": 5, "name": "Org"}),
            "enterprise.id is not a Slack id",
        ),
        ("authorizations a string", block_actions(authorizations="all"), "authorizations is not a list of objects"),
        ("authorizations of strings", block_actions(authorizations=["T1"]), "authorizations is not a list of objects"),
        ("authorizations an object", block_actions(authorizations={"team_id": "T1"}), "authorizations is not a list"),
        ("authorizations nested", block_actions(authorizations=[{"team": {"id": "T1"}}]), "not a plain value"),
        ("enterprise install a string", block_actions(is_enterprise_install="true"), "is_enterprise_install"),
        ("ext shared a number", block_actions(is_ext_shared_channel=1), "is_ext_shared_channel"),
        # interactions: where
        ("channel injection", block_actions(channel={"id": "C1;DROP"}), "channel.id is not a Slack id"),
        ("channel a string", block_actions(channel="C0111"), "channel is not an object"),
        ("container a list", block_actions(container=[]), "container is not an object"),
        ("container channel", block_actions(container={"channel_id": "#general"}), "container.channel_id"),
        ("container ts", block_actions(container={"message_ts": "1712345678"}), "container.message_ts"),
        ("container ts markup", block_actions(container={"message_ts": "1.2<!here>"}), "container.message_ts"),
        ("message a list", block_actions(message=[]), "message is not an object"),
        ("trigger a number", block_actions(trigger_id=1), "trigger_id is not text"),
        ("token a dict", block_actions(token={}), "token is not text"),
        ("api_app_id too long", block_actions(api_app_id="A" * 301), "api_app_id is not text"),
        ("response_url ftp", block_actions(response_url="ftp://x.example/"), "response_url is not a URL"),
        ("response_url a list", block_actions(response_url=["https://x.example/"]), "response_url is not a URL"),
        # interactions: what was clicked
        ("actions empty", block_actions(actions=[]), "no actions"),
        ("actions missing", block_actions(actions=_DROP), "no actions"),
        ("actions a string", block_actions(actions="ask:approve"), "no actions"),
        ("actions an object", block_actions(actions={"action_id": "ask:approve"}), "no actions"),
        ("actions 26", block_actions(actions=[{"action_id": "a"}] * 26), "no actions"),
        ("action a string", block_actions(actions=["ask:approve"]), "an action is not an object"),
        ("action_id missing", block_actions(actions=[{"value": "x"}]), "action.action_id is not text"),
        ("action_id a list", block_actions(actions=[{"action_id": ["ask:approve"]}]), "action.action_id is not text"),
        ("action_id long", block_actions(actions=[{"action_id": "a" * 256}]), "action.action_id is not text"),
        ("value an object", _with(block_actions(), "actions.0.value", {"r": "run1"}), "action.value is not text"),
        ("value long", _with(block_actions(), "actions.0.value", "x" * 2001), "action.value is not text"),
        ("view a string on a click", block_actions(view="V1"), "view is not an object"),
        # view submissions
        ("view missing", _with(view_submission(), "view", _DROP), "view is not an object"),
        ("view a list", _with(view_submission(), "view", []), "view is not an object"),
        ("view without callback_id", view_submission(callback_id=_DROP), "view.callback_id is not text"),
        ("callback_id a number", view_submission(callback_id=1), "view.callback_id is not text"),
        # Bolt reads ``view["type"]`` unchecked (is it a workflow step?): without it, a KeyError
        ("view without type", view_submission(type=_DROP), "view.type is not text"),
        ("view type a list", view_submission(type=["modal"]), "view.type is not text"),
        ("metadata too long", view_submission(private_metadata="x" * 3001), "view.private_metadata is not text"),
        ("metadata an object", view_submission(private_metadata={"r": "run1"}), "view.private_metadata is not text"),
        ("view id a number", view_submission(id=5), "view.id is not text"),
        ("state a list", view_submission(state=[]), "view.state is not an object"),
        ("values a list", view_submission(state={"values": []}), "view.state.values is not an object"),
        ("values of strings", view_submission(state={"values": {"b": "x"}}), "not an object of objects"),
        ("values of lists", view_submission(state={"values": {"b": {"a": []}}}), "not an object of objects"),
        ("user of a submission", _with(view_submission(), "user.id", "U1 <!channel>"), "user.id is not a Slack id"),
    ]
    return [pytest.param(body, words, id=name) for name, body, words in cases]


@pytest.mark.parametrize(("body", "words"), _refused_cases())
def test_refused_shapes_get_a_one_line_reason(body: object, words: str) -> None:
    inspection = _check(inspect(body, command=COMMAND))
    assert inspection.kind is None and inspection.problem is not None, inspection
    assert words in inspection.problem, inspection.problem


@pytest.mark.parametrize(
    "bad",
    [
        INJECTED_USER,
        "U0111 ",
        " U0111",
        "U0111\n",  # ``$`` matches before a final newline: ids must be matched to their very end
        "U0111\r\n<!channel>",
        "U\uff10\uff11\uff11\uff11",  # full-width digits
        "Ü0111",
        "U",
        "U" + "1" * 21,
        "",
        "<@U0111>",
        "U0111|x",
    ],
)
def test_user_ids_that_are_not_slack_ids_are_refused(bad: str) -> None:
    for body in (
        slash_command(user_id=bad),
        block_actions(user={"id": bad}),
        _with(view_submission(), "user", {"id": bad}),
    ):
        inspection = _check(inspect(body, command=COMMAND))
        assert inspection.kind is None, f"{bad!r} was accepted as a user id in a {body.get('type', 'command')}"


@pytest.mark.parametrize("bad", ["C1;DROP", "C0111\n", "c0111", "#general", "C", "C0111 ", "C\uff11"])
def test_channel_ids_that_are_not_slack_ids_are_refused(bad: str) -> None:
    for body in (slash_command(channel_id=bad), block_actions(channel={"id": bad}, container={"channel_id": bad})):
        inspection = _check(inspect(body, command=COMMAND))
        assert inspection.kind is None, f"{bad!r} was accepted as a channel id in a {body.get('type', 'command')}"


@pytest.mark.parametrize(
    "bad", ["1712345678.12345\uff16", "\uff11\uff17\uff11\uff12.\uff11", "1712345678.123456\n", "1.2.3", ".5", "1."]
)
def test_message_timestamps_are_ascii_digits(bad: str) -> None:
    inspection = _check(inspect(block_actions(container={"channel_id": "C0111", "message_ts": bad}), command=COMMAND))
    assert inspection.kind is None, f"{bad!r} was accepted as a message ts"


def test_the_configured_command_is_the_one_checked() -> None:
    assert inspect(slash_command(command="/deploy"), command="/deploy").kind is Kind.COMMAND
    assert inspect(slash_command(), command="/deploy").kind is Kind.IGNORED


def test_inspect_leaves_the_payload_as_it_was() -> None:
    for body in (slash_command(), block_actions(), view_submission(), block_actions(actions=[])):
        before = copy.deepcopy(body)
        inspect(body, command=COMMAND)
        assert body == before


# -- whatever comes, inspect answers ---------------------------------------------------------------

_json_values: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20,
)
_SEEDS: list[Callable[[], Payload]] = [
    slash_command,
    block_actions,
    view_submission,
    lambda: {"type": "url_verification", "challenge": "c"},
]
_KEYS = ["type", "user", "team", "enterprise", "authorizations", "actions", "view", "container", "channel", "command"]


@settings(
    max_examples=300, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(
    seed=st.sampled_from(_SEEDS),
    changes=st.dictionaries(st.sampled_from([*_KEYS, "user_id", "channel_id", "text", "event"]), _json_values),
)
def test_inspect_never_raises_and_always_answers_in_one_line(seed: Callable[[], Payload], changes: Payload) -> None:
    body = seed() | changes
    inspection = _check(inspect(body, command=COMMAND))
    assert (inspection.kind is None) == (inspection.problem is not None)
    json.dumps(inspection.problem)  # a reason is plain text


def test_the_home_tab_opening_is_handled_and_checked() -> None:
    envelope = {
        "type": "event_callback",
        "team_id": "T0111",
        "event": {"type": "app_home_opened", "user": "U0111", "channel": "D0111", "tab": "home"},
    }
    assert inspect(envelope, command="/graph").kind is Kind.HOME_OPENED
    forged = {**envelope, "event": {**envelope["event"], "user": "<!channel>"}}
    assert inspect(forged, command="/graph").problem is not None
    messages_tab = {**envelope, "event": {**envelope["event"], "tab": "messages"}}
    assert inspect(messages_tab, command="/graph").kind is Kind.IGNORED
