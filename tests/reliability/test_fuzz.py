"""Fuzzing the Slack edge of the real bot process: mutated, real-shaped requests, signed and not.

Seeds are requests as Slack sends them (shaped after the samples in bolt-python's own tests
and after ``LocalSlackUser``): a slash command, clicks on a card's buttons and on the same
buttons in App Home (a ``view`` container, a ``home`` view, no channel or ``response_url``),
submissions of the Reply, Reject and Edit modals, ``view_closed``, ``url_verification``,
events (``app_home_opened``, a mention), other apps' shortcuts and Slack's ``ssl_check``.
Hypothesis mutates their values (types swapped, ids with markup, huge strings, deep nesting),
their keys (deleted, or added where Bolt looks: ``team``, ``authorizations``, ``enterprise``,
``event``, ``item``, ``assistant_thread``...), their encoding (form or JSON, ``payload=``
that is not an object, broken percent-encoding, bytes that are not UTF-8) and their headers
(timestamps and signatures of every shape).

Every example goes to ONE bot process, started once for the test, and must be answered
below 500, and 401 whenever it is not validly signed (but for ``ssl_check``). Afterwards
the bot's log holds no ``ERROR`` and no traceback, and nothing changed: the store still
holds exactly the one run started (unfuzzed) before the fuzzing, unchanged, since every
fuzzed click and submission names either a run that does not exist or a question that
run does not have, and no fuzzed command names a graph that exists; and the bot posted
and updated no message and no open view (answers only the clicker sees, through
``response_url`` or a modal, and Home tabs re-rendered for their owner, are allowed).

The same mutations go as Socket Mode envelopes to ``approval-bot socket`` (a third as many)
and as Function URL events to ``bot.lambda_handler.handler`` in one warm Lambda container
(a quarter as many; work handed past the ack is recorded by ``LocalLambda``, not run).

``FUZZ_EXAMPLES`` sets the number of HTTP examples (default 2000: about 10 s on 2 cores, the
file about 25 s); ``-m long`` adds an HTTP run of ``FUZZ_LONG_EXAMPLES`` (default 20,000). Each
test prints its figures (examples, unsigned ones, 5xx, state changes from bad input); with
``RELIABILITY_REPORT=1`` they are also written to ``bench/results/fuzz.md`` and ``fuzz.json``.
The runs are derandomized (no example database): the same command line sees the same
examples every time. Hypothesis also draws on constants of the modules loaded,
so running other test files in the same session may change which examples are drawn.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import hmac
import http.client
import json
import os
import re
import sqlite3
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote, urlencode

import boto3
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.edge import MAX_BODY_BYTES
from bot.listeners.commands import UsageError, decode_entities, parse_command
from bot.render.cards import encode_action_value
from bot.render.modals import TEXT_ACTION_ID, TEXT_BLOCK_ID, ModalTarget, encode_modal_metadata
from engine.records import Ask, AskStatus, MessageRef, Run, RunStatus, ToolCall, Verdict
from engine.store import RunStore
from localslack import LOCAL_SIGNING_SECRET, LocalSlack
from persistence.dynamodb import DynamoRunStore
from tests.e2e.conftest import CHANNEL, Backend, BotProcess, StartBot, UserFor, cards, eventually, run_of
from tests.support.aws import REGION
from tests.support.lambda_ import LambdaError, LambdaPool, LocalLambda, bot_response, function_url_event

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES") or 2000)
STALE_BEYOND = 300 + 60  # seconds off the clock for a "stale" timestamp: the window and a minute's margin
LONG_EXAMPLES = int(os.environ.get("FUZZ_LONG_EXAMPLES") or 20_000)
SOCKET_EXAMPLES = max(EXAMPLES // 3, 10)
LAMBDA_EXAMPLES = max(EXAMPLES // 4, 10)

TRIGGER = "{{trigger_id}}"
RESPONSE_URL = "{{response_url}}"
NO_RUN = "r0fuzzgone"  # a run id no run has
NO_ASK = "zzfuzz"  # an ask key the seeded run does not have
INJECTED_USER = "U123><!channel> <https://evil.example|x>"

Encoding = Literal["form", "payload", "json"]


@dataclass(frozen=True)
class Seed:
    name: str
    encoding: Encoding
    body: Any
    armed: bool = False
    """Would change state if accepted: always sent without a valid signature, never disarmed."""


USER = {"id": "U0BOB", "username": "bob", "name": "bob", "team_id": "T0LOCAL"}
TEAM = {"id": "T0LOCAL", "domain": "local"}


def _command(text: str) -> dict[str, str]:
    """alice types ``/graph <text>``, as Slack posts it."""
    return {
        "token": "local-verification-token",
        "team_id": "T0LOCAL",
        "team_domain": "local",
        "channel_id": CHANNEL,
        "channel_name": "e2e",
        "user_id": "U0ALICE",
        "user_name": "alice",
        "command": "/graph",
        "text": text,
        "api_app_id": "A0LOCAL",
        "is_enterprise_install": "false",
        "response_url": RESPONSE_URL,
        "trigger_id": TRIGGER,
    }


def _seeds(run_id: str, card_ts: str) -> list[Seed]:
    """Requests as Slack sends them; ``run_id`` is the seeded run, asked about what it does not ask."""
    user, team = USER, TEAM
    seeds = [Seed(f"command {text!r}", "form", _command(text)) for text in SAFE_TEXTS]
    for action_id in ("ask:approve", "ask:reject", "ask:reply", "ask:edit", "ask:trust", "ask:retry", "some:other"):
        for target in (run_id, NO_RUN):
            click = _click(action_id, run_id=target, ask_key=NO_ASK, card_ts=card_ts)
            seeds.append(Seed(f"click {action_id} on {target}", "payload", click))
            seeds.append(Seed(f"click {action_id} on {target} in App Home", "payload", _from_home(click)))
    for callback_id, text in (("ask:reply", "use the canary"), ("ask:reject", None), ("ask:edit", '{"a": 1}')):
        for target in (run_id, NO_RUN):
            submission = _submission(callback_id, text, run_id=target, ask_key=NO_ASK, card_ts=card_ts)
            seeds.append(Seed(f"submit {callback_id} on {target}", "payload", submission))
    seeds += [
        Seed(
            "url_verification", "json", {"token": "t", "challenge": "3eZbrw1aBm2rZgRNFdxV", "type": "url_verification"}
        ),
        Seed(
            "event_callback",
            "json",
            {
                "token": "local-verification-token",
                "team_id": "T0LOCAL",
                "api_app_id": "A0LOCAL",
                "event": {"type": "app_mention", "user": "U0ALICE", "text": "<@U0LOCALBOT> hi", "channel": CHANNEL},
                "type": "event_callback",
                "event_id": "Ev0FUZZ",
                "event_time": 1599616881,
                "authorizations": [
                    {"enterprise_id": None, "team_id": "T0LOCAL", "user_id": "U0LOCALBOT", "is_bot": True}
                ],
            },
        ),
        Seed(
            "app_home_opened",
            "json",
            {
                "token": "local-verification-token",
                "team_id": "T0LOCAL",
                "api_app_id": "A0LOCAL",
                "event": {
                    "type": "app_home_opened",
                    "user": "U0BOB",
                    "channel": "D0BOB",
                    "tab": "home",
                    "event_ts": "1712345679.000200",
                    "view": _home_view(),
                },
                "type": "event_callback",
                "event_id": "Ev0FUZZHOME",
                "event_time": 1599616882,
                "authorizations": [
                    {"enterprise_id": None, "team_id": "T0LOCAL", "user_id": "U0LOCALBOT", "is_bot": True}
                ],
            },
        ),
        Seed(
            "shortcut",
            "payload",
            {"type": "shortcut", "callback_id": "s", "trigger_id": TRIGGER, "user": user, "team": team},
        ),
        Seed("view_closed", "payload", {"type": "view_closed", "user": user, "team": team, "view": {"id": "V1"}}),
        Seed("ssl_check", "form", {"ssl_check": "1", "token": "local-verification-token"}),
    ]
    return seeds


def _click(action_id: str, *, run_id: str, ask_key: str, card_ts: str) -> dict[str, Any]:
    """bob clicks ``action_id`` on the card of ``ask_key``, as Slack posts it."""
    click: dict[str, Any] = {
        "type": "block_actions",
        "user": USER,
        "api_app_id": "A0LOCAL",
        "token": "local-verification-token",
        "container": {"type": "message", "message_ts": card_ts, "channel_id": CHANNEL, "is_ephemeral": False},
        "trigger_id": TRIGGER,
        "team": TEAM,
        "enterprise": None,
        "is_enterprise_install": False,
        "channel": {"id": CHANNEL, "name": "e2e"},
        "message": {"type": "message", "ts": card_ts, "text": "card", "blocks": []},
        "state": {"values": {}},
        "response_url": RESPONSE_URL,
        "actions": [
            {
                "action_id": action_id,
                "block_id": f"card:{ask_key}",
                "text": {"type": "plain_text", "text": "Button", "emoji": False},
                "value": encode_action_value(run_id=run_id, ask_key=ask_key),
                "type": "button",
                "action_ts": "1712345680.194939",
            }
        ],
    }
    return click


def _from_home(click: dict[str, Any]) -> dict[str, Any]:
    """The same button clicked in App Home: a ``view`` container, no channel or response_url."""
    home_click = {key: value for key, value in click.items() if key not in ("channel", "message", "response_url")}
    home_click["container"] = {"type": "view", "view_id": "V0HOME"}
    home_click["view"] = _home_view()
    return home_click


def _submission(callback_id: str, text: str | None, *, run_id: str, ask_key: str, card_ts: str) -> dict[str, Any]:
    """bob submits a Reply, Reject or Edit modal opened from the card of ``ask_key``."""
    metadata = encode_modal_metadata(ModalTarget(run_id=run_id, ask_key=ask_key, channel=CHANNEL, message_ts=card_ts))
    submission = {
        "type": "view_submission",
        "team": TEAM,
        "user": USER,
        "api_app_id": "A0LOCAL",
        "token": "local-verification-token",
        "trigger_id": TRIGGER,
        "view": {
            "id": "V0FUZZ",
            "team_id": "T0LOCAL",
            "type": "modal",
            "blocks": [],
            "private_metadata": metadata,
            "callback_id": callback_id,
            "state": {"values": {TEXT_BLOCK_ID: {TEXT_ACTION_ID: {"type": "plain_text_input", "value": text}}}},
            "hash": "1596530361.3wRYuk3R",
            "title": {"type": "plain_text", "text": "Reply"},
            "previous_view_id": None,
            "root_view_id": "V0FUZZ",
            "app_id": "A0LOCAL",
            "external_id": "",
            "app_installed_team_id": "T0LOCAL",
            "bot_id": "B0LOCAL",
        },
        "response_urls": [],
        "is_enterprise_install": False,
    }
    return submission


def _armed_seeds(run: Run, card_ts: str) -> list[Seed]:
    """Requests that WOULD change state, aimed at the seeded run's real question: bob may
    decide it, so only their signature stands between them and a decision. They are always
    sent unsigned or badly signed (``_request``), so "nothing changed" tests the signature check."""
    (ask,) = run.pending_asks()
    where = {"run_id": run.run_id, "ask_key": ask.key, "card_ts": card_ts}
    approve = _click("ask:approve", **where)
    return [
        Seed("armed: Approve on the real card", "payload", approve, armed=True),
        Seed("armed: Approve on the real ask in App Home", "payload", _from_home(approve), armed=True),
        Seed("armed: Reply to the real ask", "payload", _submission("ask:reply", "go ahead", **where), armed=True),
        Seed("armed: Reject the real ask", "payload", _submission("ask:reject", None, **where), armed=True),
        Seed("armed: run a real graph", "form", _command("run guarded-write armed"), armed=True),
    ]


def _home_view() -> dict[str, Any]:
    """The App Home view as Slack sends it with a click on it or with ``app_home_opened``."""
    return {
        "id": "V0HOME",
        "team_id": "T0LOCAL",
        "type": "home",
        "blocks": [],
        "private_metadata": "",
        "callback_id": "",
        "state": {"values": {}},
        "hash": "1712345679.HoMe",
        "title": {"type": "plain_text", "text": "Home"},
        "previous_view_id": None,
        "root_view_id": "V0HOME",
        "app_id": "A0LOCAL",
        "external_id": "",
        "app_installed_team_id": "T0LOCAL",
        "bot_id": "B0LOCAL",
    }


# Commands that can never start a run: no graph of that name exists.
SAFE_TEXTS = ["help", "", "list", "frobnicate &lt;x&gt;", "run", "run nope-graph do it &amp; payload"]

MARKUP = [
    INJECTED_USER,
    "<!channel>",
    "<!here|here>",
    "<@U0ALICE>",
    "C1;DROP",
    "U0ALICE\n",
    "\uff11\uff12\uff13",
    "T0LOCAL ",
    "ask:approve",
    "ask:reply",
    '{"r":"' + NO_RUN + '","a":"' + NO_ASK + '"}',
    '{"r":"../x","a":1}',
    "[" * 1500,
    '{"a":' * 600,
    "http://127.0.0.1:9/nowhere",
    "javascript:alert(1)",
    "payload",
    "\x00",
    "\ud800",
    "1e999",
    "NaN",
    "-0",
    "true",
    "null",
    "&amp;lt;",
]
SENSITIVE_KEYS = [
    "authorizations",
    "enterprise",
    "team",
    "event",
    "item",
    "assistant_thread",
    "function_data",
    "previous_message",
    "user",
    "channel",
    "container",
    "view",
    "actions",
    "message",
    "is_enterprise_install",
    "is_ext_shared_channel",
    "enterprise_id",
    "team_id",
    "user_id",
    "channel_id",
    "type",
    "command",
    "ssl_check",
    "payload",
    "challenge",
    "token",
    "response_url",
    "trigger_id",
    "callback_id",
    "state",
    "private_metadata",
    "bot_access_token",
]
SENSITIVE_SHAPES: list[Any] = [
    [{"enterprise_id": None, "team_id": "T0LOCAL", "user_id": "U0LOCALBOT", "is_bot": True}],
    [{"team": {"id": "T1"}}],
    {"id": "T0LOCAL", "domain": "local"},
    {"id": "E0FUZZ", "name": "Org"},
    {"type": "app_mention", "channel": CHANNEL, "user": "U0ALICE"},
    {"channel_id": "D0FUZZ", "thread_ts": "1.2"},
    {"id": "U0BOB"},
    [],
    {},
]


def _nested(depth: int) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = [value]
    return value


_plain = st.none() | st.booleans() | st.integers() | st.text(max_size=12)
WEIRD: st.SearchStrategy[Any] = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
    st.sampled_from(MARKUP),
    st.integers(min_value=3_000, max_value=200_000).map(lambda n: "x" * n),
    st.lists(_plain, max_size=4),
    st.dictionaries(st.text(max_size=8), _plain, max_size=4),
    st.integers(min_value=2, max_value=400).map(_nested),
    st.sampled_from(SENSITIVE_SHAPES).map(copy.deepcopy),  # a copy: mutations must not change the constant
)
# Where Slack payloads break listeners when they are not as expected: mutated more often.
SENSITIVE_PLACES = {*SENSITIVE_KEYS, "values", "value", "id", "action_id", "block_id", "text", "ts", "message_ts"}


def _paths(value: Any, prefix: tuple[Any, ...] = (), depth: int = 0) -> Iterator[tuple[Any, ...]]:
    """Every place in a payload a mutation can touch (not far into deep nesting)."""
    if depth > 5:
        return
    if isinstance(value, dict):
        for key, inner in value.items():
            yield (*prefix, key)
            yield from _paths(inner, (*prefix, key), depth + 1)
    elif isinstance(value, list):
        for index, inner in enumerate(value[:4]):
            yield (*prefix, index)
            yield from _paths(inner, (*prefix, index), depth + 1)


def _containers(value: Any) -> list[tuple[Any, ...]]:
    """Paths to the objects in a payload (where a key can be added), the payload itself first."""
    found = [()] if isinstance(value, dict) else []
    found += [p for p in _paths(value) if isinstance(_get(value, p), dict)]
    return found


def _get(value: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        value = value[part]
    return value


def _place(draw: st.DrawFn, paths: list[tuple[Any, ...]]) -> tuple[Any, ...]:
    sensitive = [p for p in paths if p[-1] in SENSITIVE_PLACES]
    focused: bool = draw(st.booleans())
    return draw(st.sampled_from(sensitive if sensitive and focused else paths))


@st.composite
def mutated(draw: st.DrawFn, seed: Seed) -> tuple[Any, list[str]]:
    """The seed's body after 0 to 4 mutations, and what they were (for the failure report)."""
    body = copy.deepcopy(seed.body)
    done: list[str] = []
    for _ in range(draw(st.integers(min_value=0, max_value=4))):
        op = draw(st.sampled_from(["set", "set", "null", "delete", "add", "add", "root"]))
        paths = list(_paths(body))
        if op in ("set", "null", "delete") and paths:
            path = _place(draw, paths)
            parent = _get(body, path[:-1])
            if op == "delete":
                del parent[path[-1]]
            else:
                parent[path[-1]] = None if op == "null" else draw(WEIRD)
            done.append(f"{op} {'/'.join(map(str, path))}")
        elif op == "add" and _containers(body):
            where = draw(st.sampled_from(_containers(body)))
            key = draw(st.sampled_from(SENSITIVE_KEYS) | st.text(max_size=10))
            _get(body, where)[key] = draw(WEIRD)
            done.append(f"add {'/'.join(map(str, (*where, key)))}")
        elif op == "root":
            body = draw(
                st.sampled_from(
                    [[body], "block_actions", 7, None, {"payload": body}, {"type": "block_actions", "payload": body}]
                )
            )
            done.append("replace the whole payload")
    return body, done


def _disarm(value: Any) -> Any:
    """No fuzzed command may start a run: a ``run`` of any graph becomes a run of one that does not exist."""
    if isinstance(value, dict):
        for key, inner in list(value.items()):
            value[key] = _disarm(inner)
        text = value.get("text")
        if "command" in value and isinstance(text, str):
            try:
                parsed = parse_command(decode_entities(text))
            except UsageError:
                return value
            if parsed.action == "run":
                value["text"] = f"run nope-graph {parsed.task}"
    elif isinstance(value, list):
        return [_disarm(inner) for inner in value]
    return value


def _fill(value: Any, fresh: Callable[[str], str]) -> Any:
    """Trigger ids and response URLs issued by the local Slack for this very request."""
    if isinstance(value, str) and value in (TRIGGER, RESPONSE_URL):
        return fresh(value)
    if isinstance(value, dict):
        return {key: _fill(inner, fresh) for key, inner in value.items()}
    if isinstance(value, list):
        return [_fill(inner, fresh) for inner in value]
    return value


def _json(value: Any) -> str:
    return json.dumps(value)


def _form(fields: Any) -> str:
    if not isinstance(fields, dict):
        return quote(_json(fields), safe="", errors="surrogatepass")
    pairs = [(str(k), v if isinstance(v, str) else _json(v)) for k, v in fields.items()]
    return urlencode(pairs, errors="surrogatepass")


def _encode(body: Any, encoding: str) -> tuple[bytes, str]:
    """The body as bytes the way ``encoding`` says, and its natural content type."""
    form = "application/x-www-form-urlencoded"
    if encoding == "json":
        return _json(body).encode(), "application/json"
    if encoding == "payload":
        return urlencode({"payload": _json(body)}).encode(), form
    if encoding == "payload and command":
        return (urlencode({"payload": _json(body)}) + "&command=%2Fgraph&text=help").encode(), form
    if encoding == "payload twice":
        return (urlencode({"payload": _json(body)}) + "&payload=%5B%5D").encode(), form
    if encoding == "deep":
        depth = 20_000
        return ("[" * depth + _json(body) + "]" * depth).encode(), "application/json"
    return _form(body).encode(), form


@st.composite
def broken_bytes(draw: st.DrawFn, body: bytes) -> tuple[bytes, str]:
    """The encoded body, maybe broken; where it breaks is a fraction of its length, so the draws
    do not depend on the length (trigger ids differ from one delivery to the next)."""
    how = draw(st.sampled_from(["", "", "", "percent", "not utf-8", "truncate"]))
    at = len(body) * draw(st.integers(min_value=0, max_value=1000)) // 1000
    if how == "percent":
        piece = draw(st.sampled_from([b"%", b"%Z", b"%E2%82", b"%%", b"%FF", b"%00", b"%ED%A0%80"]))
        return body[:at] + piece + body[at:], how
    if how == "not utf-8":
        piece = draw(st.binary(min_size=1, max_size=4).map(lambda b: bytes(0x80 | x for x in b)))
        return body[:at] + piece + body[at:], how
    if how == "truncate":
        return body[:at], how
    return body, how


_HEADER_TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=20)


@dataclass
class Headers:
    headers: dict[str, bytes]
    timestamp: str | None
    """What to sign with once the body is final; None: the signature is already as drawn (or absent)."""
    signed: bool
    note: str
    """What is not as Slack sends it (empty when all is)."""


@st.composite
def headers_for(draw: st.DrawFn, content_type: str) -> Headers:
    headers: dict[str, bytes] = {}
    notes: list[str] = []
    kind = draw(st.sampled_from(["signed"] * 8 + ["bad timestamp", "bad signature", "stale", "unsigned"]))
    ctype = draw(
        st.sampled_from(
            [content_type] * 6
            + ["application/json", "application/x-www-form-urlencoded", "text/plain", "", "APPLICATION/JSON"]
            + ["application/json; charset=latin-1", "multipart/form-data; boundary=x"]
        )
    )
    if ctype:
        headers["Content-Type"] = ctype.encode()
    if ctype != content_type:
        notes.append(f"content-type {ctype!r}")
    if draw(st.booleans()):
        headers["X-Slack-Retry-Num"] = draw(st.sampled_from([b"1", b"2", b"x", b"-1"]))
        headers["X-Slack-Retry-Reason"] = b"http_timeout"
    now = int(time.time())
    if kind == "signed":
        return Headers(headers, str(now), True, ", ".join(notes))
    notes.append(kind)
    if kind == "stale":
        # Well outside Slack's 300 s window: a timestamp 301 s ahead comes inside it once the
        # request takes over a second to reach the bot (a busy machine, a Lambda invoke), and
        # is then rightly judged fresh.
        skew = draw(st.sampled_from([-1, 1])) * draw(st.integers(STALE_BEYOND, 10**9))
        return Headers(headers, str(now + skew), False, ", ".join(notes))
    if kind == "unsigned":
        return Headers(headers, None, False, ", ".join(notes))
    if kind == "bad timestamp":
        timestamp = draw(
            st.sampled_from(["abc", "1e9", "0x10", " 123", "-5", "\uff11\uff12\uff13", "", "1" * 13, "12.5", "+1"])
            | _HEADER_TEXT
        )
        if re.fullmatch(r"\s*[0-9]{1,12}\s*", timestamp, re.ASCII) and abs(int(timestamp) - now) <= 300:
            timestamp = "x" + timestamp  # a lucky draw of the right time would be validly signed
        return Headers(headers, timestamp, False, ", ".join(notes))
    signature = draw(
        st.sampled_from(["", "v0=", "v0=" + "0" * 64, "v1=" + "a" * 64, "v0=" + "A" * 64, "v0=" + "a" * 63])
        | _HEADER_TEXT
    )
    headers["X-Slack-Request-Timestamp"] = str(now).encode()
    headers["X-Slack-Signature"] = signature.encode()
    return Headers(headers, None, False, ", ".join(notes))


def _signature(body: bytes, timestamp: str, secret: str = LOCAL_SIGNING_SECRET) -> bytes:
    digest = hmac.new(secret.encode(), b"v0:" + timestamp.encode() + b":" + body, hashlib.sha256)
    return ("v0=" + digest.hexdigest()).encode()


ENCODINGS = ["json", "payload", "form", "payload and command", "payload twice", "deep"]


@dataclass
class Request:
    body: bytes
    headers: dict[str, bytes]
    signed: bool
    story: str
    slacks_own: bool
    """Nothing about it fuzzed: a request exactly as Slack sends it."""


def _request(data: st.DataObject, seeds: list[Seed], fresh: Callable[[str], str]) -> Request:
    seed = data.draw(st.sampled_from(seeds), label="seed")
    body, story = data.draw(mutated(seed), label="mutations")
    encoding = data.draw(st.sampled_from([seed.encoding] * 8 + ENCODINGS), label="encoding")
    natural = "application/json" if encoding in ("json", "deep") else "application/x-www-form-urlencoded"
    drawn = data.draw(headers_for(natural), label="headers")
    if seed.armed and drawn.signed:  # signed with another secret: a forgery that looks right
        now = str(int(time.time()))
        forged = {"X-Slack-Request-Timestamp": now.encode(), "X-Slack-Signature": _signature(b"", now, "other")}
        drawn = Headers(drawn.headers | forged, None, False, ", ".join(filter(None, [drawn.note, "forged"])))
    filled = _fill(body, fresh)
    raw, _ = _encode(filled if seed.armed else _disarm(filled), encoding)
    sent, broken = data.draw(broken_bytes(raw), label="bytes")
    headers = dict(drawn.headers)
    if drawn.timestamp is not None:
        headers["X-Slack-Request-Timestamp"] = drawn.timestamp.encode()
        headers["X-Slack-Signature"] = _signature(sent, drawn.timestamp)
    told = [seed.name, *story, f"as {encoding}" if encoding != seed.encoding else "", broken, drawn.note]
    own = not story and encoding == seed.encoding and not broken and not drawn.note and drawn.signed
    return Request(sent, headers, drawn.signed, " / ".join(t for t in told if t), own)


def _post(bot: BotProcess, request: Request) -> tuple[int, bytes]:
    host, port = bot.url.removeprefix("http://").split(":")
    with closing(http.client.HTTPConnection(host, int(port), timeout=20)) as conn:
        conn.putrequest("POST", "/slack/events")
        for name, value in request.headers.items():
            conn.putheader(name, value)
        conn.putheader("Content-Length", str(len(request.body)))
        conn.endheaders(request.body)
        response = conn.getresponse()
        return response.status, response.read()


# -- what "nothing changed" means -------------------------------------------------------------


def _runs(backend: Backend) -> int:
    with closing(sqlite3.connect(Path(backend.env["SQLITE_PATH"]))) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0])


async def _seeded_run(slack: LocalSlack, user: Any, backend: Backend) -> tuple[Run, dict[str, Any]]:
    """One real run, waiting on its card, with its card recorded: the state the fuzzing must not touch."""
    response = await user.slash_command(text="run guarded-write hello", user_id="U0ALICE", channel_id=CHANNEL)
    assert response.status == 200
    (card,) = await slack.wait_for(lambda: cards(slack), timeout=30, what="the seeded run's card")
    store = backend.open_store()
    run_id = run_of(store, slack).run_id

    def settled() -> Run | None:
        run = store.load(run_id)
        return run if run is not None and run.status is RunStatus.WAITING and not run.owes_slack else None

    run: Run = await eventually(settled, timeout=30, what="the seeded run settled")
    return run, card


# Slack refuses a fuzzed trigger or response URL (mangled, cut short): that is Slack doing
# its job, not the bot calling it wrongly. Anything else refused is the bot's mistake.
_EXPECTED_REFUSALS = {
    ("views.open", "invalid_arguments"),
    ("views.open", "exchanged_trigger_id"),
    ("response_url", "no_such_url"),
}


# Slack calls that change what people see (a message, a view already open): none may follow a
# request that names no ask the bot has.
_WRITES = frozenset(
    {"chat.postMessage", "chat.update", "chat.delete", "chat.postEphemeral", "views.update", "views.push"}
)

_LOUD = re.compile(r"^\[(ERROR|CRITICAL)\]| (ERROR|CRITICAL) ")


@dataclass
class World:
    """What the fuzzing must leave as it found it, for one deployment of the bot."""

    slack: LocalSlack
    seeded: Run
    load: Callable[[str], Run | None]
    runs: Callable[[], int]
    log: Callable[[], str]
    alive: Callable[[], bool]
    calls_before: int = 0
    log_from: int = 0

    def mark(self) -> None:
        self.calls_before, self.log_from = len(self.slack.calls), len(self.log())

    def changes(self) -> Counter[str]:
        """Every state change the fuzzing made: runs started, the seeded run altered, messages or
        views written. Modals opened for the clicker and Home tabs re-rendered are answers, not
        changes (neither touches a run; a submission from such a modal is checked like any other)."""
        found: Counter[str] = Counter()
        found["runs started"] = self.runs() - 1
        after = self.load(self.seeded.run_id)
        found["seeded run altered"] = int(after != self.seeded or after is None or after.version != self.seeded.version)
        for method, _ in self.slack.calls[self.calls_before :]:
            if method in _WRITES:
                found[method] += 1
        return +found  # only what is not zero

    def assert_unchanged(self) -> Counter[str]:
        unexpected = [r for r in self.slack.rejected if (r["method"], r["error"]) not in _EXPECTED_REFUSALS]
        self.slack.rejected.clear()  # checked here, with the reason; the autouse check would repeat it
        log = self.log()[self.log_from :]
        loud = [line for line in log.splitlines() if _LOUD.search(line)]
        assert "Traceback" not in log and loud == [], "\n".join(loud) + "\n" + log[-6000:]
        assert self.alive(), "the bot is still up"
        changed = self.changes()
        assert not changed, f"state changed by fuzzed requests: {dict(changed)}"
        assert unexpected == [], unexpected
        return changed


def _process_world(slack: LocalSlack, backend: Backend, bot: BotProcess, seeded: Run) -> World:
    store = backend.open_store()
    world = World(
        slack=slack,
        seeded=seeded,
        load=store.load,
        runs=lambda: _runs(backend),
        log=bot.output,
        alive=lambda: bot.process.poll() is None,
    )
    world.mark()
    return world


def _fresh(slack: LocalSlack) -> Callable[[str], str]:
    def fresh(placeholder: str) -> str:
        if placeholder == TRIGGER:
            return slack.new_trigger_id(user_id="U0BOB")
        return slack.new_response_url(channel=CHANNEL, message_ts=None, user="U0BOB")

    return fresh


def _judge(
    request: Request, status: int, answer: bytes, *, statuses: Counter[int], clean: Counter[int], signing: Counter[str]
) -> None:
    """What every answer must be: below 500; 401 when not signed right (but Slack's ssl_check);
    200 for a request exactly as Slack sends it."""
    statuses[status] += 1
    signing["signed" if request.signed else "unsigned"] += 1
    if request.story.startswith("armed:"):
        signing["armed"] += 1
    said = (status, answer[:300], request.story)
    assert status < 500, said
    if not request.signed and not (status == 200 and answer == b"" and b"ssl_check" in request.body):
        # "Anything about the signature gets 401, before the body is parsed" (bot.edge).
        assert status == 401 or (status == 413 and len(request.body) > MAX_BODY_BYTES), said
    if request.slacks_own:
        clean[status] += 1
        assert status == 200, said


async def _the_check_sees_a_real_decision(
    bot: BotProcess, world: World, approve: Seed, fresh: Callable[[str], str]
) -> None:
    """The armed Approve, validly signed this once, does decide: "nothing changed" above was
    a finding, not a check that cannot fail."""
    body, _ = _encode(_fill(approve.body, fresh), approve.encoding)
    now = str(int(time.time()))
    headers = {
        "Content-Type": b"application/x-www-form-urlencoded",
        "X-Slack-Request-Timestamp": now.encode(),
        "X-Slack-Signature": _signature(body, now),
    }
    status, _ = await asyncio.to_thread(_post, bot, Request(body, headers, True, approve.name, True))
    assert status == 200
    await eventually(lambda: world.changes()["seeded run altered"], what="the signed Approve to decide")


def _reached_every_layer(statuses: Counter[int], clean: Counter[int]) -> None:
    """Bodies the listeners answered, shapes refused, forgeries: a bot refusing all would not pass."""
    total = sum(statuses.values())
    assert statuses[200] >= total // 10 and statuses[400] >= total // 10 and statuses[401] >= total // 20, statuses
    assert clean[200] > 0, "some requests were Slack's own and were answered 200"


# -- the figures ---------------------------------------------------------------------------------

REPORT = Path(__file__).resolve().parents[2] / "bench" / "results"
FIGURES: dict[str, dict[str, Any]] = {}
"""What each fuzz test of this session measured, by deployment (written out together)."""


def _record(
    where: str, *, statuses: Counter[Any], signing: Counter[str], changed: Counter[str], elapsed: float
) -> None:
    """Print one deployment's figures; with ``RELIABILITY_REPORT=1`` also write bench/results/fuzz.*.

    Recorded before the assertions, so a failing run reports what it found too.
    """
    examples = sum(statuses.values())
    figures = {
        "examples": examples,
        "signed": signing["signed"],
        "unsigned or badly signed": signing["unsigned"],
        "of which forgeries aimed at the real question": signing["armed"],
        "5xx": sum(n for status, n in statuses.items() if isinstance(status, int) and status >= 500),
        "state changes from bad input": sum(changed.values()),
        "answers": {str(k): n for k, n in sorted(statuses.items(), key=str)},
        "seconds": round(elapsed, 1),
    }
    FIGURES[where] = figures
    print(f"\nfuzzed {where}: {json.dumps(figures)}")
    if os.environ.get("RELIABILITY_REPORT") == "1":
        _write_report()


def _write_report() -> None:
    rows = [
        f"| {where} | {f['examples']} | {f['unsigned or badly signed'] or '-'} "
        f"| {f.get('of which forgeries aimed at the real question') or '-'} | {f['5xx']} "
        f"| {f['state changes from bad input']} | {', '.join(f'{k}: {n}' for k, n in f['answers'].items())} |"
        for where, f in FIGURES.items()
    ]
    lines = [
        "## Fuzzing the Slack edge",
        "",
        "Command: `RELIABILITY_REPORT=1 FUZZ_EXAMPLES=" + str(EXAMPLES) + " .venv/bin/python -m pytest -q "
        "-p no:cacheprovider -s tests/reliability/test_fuzz.py` (`-m long` adds the "
        f"{LONG_EXAMPLES}-example HTTP run).",
        "",
        "Mutated real payloads (slash commands; `block_actions` from a card and from App Home; "
        "`view_submission` of the Reply, Reject and Edit modals; `view_closed`; events, "
        "`app_home_opened` included; `url_verification`; `ssl_check`; shortcuts), signed and "
        "not, sent to the real bot process over HTTP, as Socket Mode envelopes and as Function "
        "URL events to one warm Lambda container. Every answer must be below 500 (401 when not "
        "validly signed), nothing may change (no run started, the one waiting run untouched, "
        "no message posted, updated or deleted, no open view changed), and the log must hold "
        "no ERROR and no traceback. Deterministic: the same command draws the same examples. "
        "Among the badly signed ones are forgeries aimed at the waiting run's real question (an "
        "Approve, a Reply, a Reject by a person allowed to decide it) and at a real graph's start, "
        "which only the signature check stops; the HTTP run then sends the Approve validly signed "
        "once and sees the state change, so the check is shown able to see one. Socket Mode "
        "envelopes are authenticated by the socket, so none is unsigned.",
        "",
        "| Deployment | Examples | Of them unsigned or badly signed | Of those, forgeries aimed at the real question "
        "| 5xx | State changes from bad input | Answers |",
        "|---|---:|---:|---:|---:|---:|---|",
        *rows,
        "",
    ]
    REPORT.mkdir(parents=True, exist_ok=True)
    (REPORT / "fuzz.md").write_text("\n".join(lines))
    (REPORT / "fuzz.json").write_text(json.dumps({"fuzz": FIGURES}, indent=2) + "\n")


# -- the fuzz tests -------------------------------------------------------------------------------


async def test_fuzzed_http_requests(
    start_bot: StartBot, sqlite_backend: Backend, local_slack: LocalSlack, user_for: UserFor
) -> None:
    await _fuzz_http(start_bot, sqlite_backend, local_slack, user_for, examples=EXAMPLES)


@pytest.mark.long
async def test_fuzzed_http_requests_long(
    start_bot: StartBot, sqlite_backend: Backend, local_slack: LocalSlack, user_for: UserFor
) -> None:
    """Ten times the examples (``FUZZ_LONG_EXAMPLES``, default 20,000; about 2 minutes)."""
    await _fuzz_http(start_bot, sqlite_backend, local_slack, user_for, examples=LONG_EXAMPLES)


async def _fuzz_http(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for: UserFor, *, examples: int
) -> None:
    bot = await start_bot(backend=backend)
    seeded, card = await _seeded_run(local_slack, user_for(bot), backend)
    seeds = _seeds(seeded.run_id, str(card["ts"])) + _armed_seeds(seeded, str(card["ts"]))
    world = _process_world(local_slack, backend, bot, seeded)
    statuses: Counter[int] = Counter()
    clean: Counter[int] = Counter()
    signing: Counter[str] = Counter()
    fresh = _fresh(local_slack)

    @settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(data=st.data())
    def one(data: st.DataObject) -> None:
        request = _request(data, seeds, fresh)
        _judge(request, *_post(bot, request), statuses=statuses, clean=clean, signing=signing)

    started = time.monotonic()
    await asyncio.to_thread(one)
    elapsed = time.monotonic() - started
    await asyncio.sleep(1.0)  # work handed off after the acks: let it (wrongly) change something
    changed = world.changes()
    _record("HTTP (approval-bot serve)", statuses=statuses, signing=signing, changed=changed, elapsed=elapsed)
    world.assert_unchanged()
    _reached_every_layer(statuses, clean)
    assert signing["armed"] >= examples // 50, "forgeries aimed at the real question were sent"
    await _the_check_sees_a_real_decision(bot, world, next(seed for seed in seeds if seed.armed), fresh)
    # After thousands of fuzzed requests a SIGTERM'd bot uses all of the 10 s drain (not what is
    # measured here; 20 s of the default suite): judged already, so it is killed instead.
    bot.kill()


async def test_fuzzed_socket_mode_envelopes(
    start_bot: StartBot, sqlite_backend: Backend, local_slack: LocalSlack, user_for: UserFor
) -> None:
    """The same payload mutations as Socket Mode envelopes: each acked in time, nothing changed."""
    bot = await start_bot(backend=sqlite_backend, mode="socket")
    seeded, card = await _seeded_run(local_slack, user_for(bot), sqlite_backend)
    seeds = [s for s in _seeds(seeded.run_id, str(card["ts"])) if s.name != "ssl_check"]
    world = _process_world(local_slack, sqlite_backend, bot, seeded)
    loop = asyncio.get_running_loop()
    acks: Counter[str] = Counter()
    fresh = _fresh(local_slack)

    @settings(
        max_examples=SOCKET_EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(seed=st.sampled_from(seeds), data=st.data())
    def one(seed: Seed, data: st.DataObject) -> None:
        body, story = data.draw(mutated(seed))
        payload = _disarm(_fill(body, fresh))
        if not isinstance(payload, dict):
            payload = {"payload": payload}  # an envelope's payload is an object (slack_sdk drops others)
        kind = {"form": "slash_commands", "payload": "interactive", "json": "events_api"}[seed.encoding]
        kind = data.draw(st.sampled_from([kind] * 4 + ["interactive", "slash_commands", "events_api", "hello_x"]))
        delivery = local_slack.socket_mode.deliver(kind=kind, payload=payload)  # type: ignore[arg-type]
        try:
            ack = asyncio.run_coroutine_threadsafe(delivery, loop).result(timeout=10)
        except TimeoutError as late:
            raise AssertionError(f"no ack within Slack's 3 s: {seed.name} / {story}") from late
        acks["error" if isinstance(ack, dict) and "error" in ack else "ack" if ack is None else "payload"] += 1

    started = time.monotonic()
    await asyncio.to_thread(one)
    elapsed = time.monotonic() - started
    await asyncio.sleep(1.0)
    changed = world.changes()
    _record("Socket Mode (approval-bot socket)", statuses=acks, signing=Counter(), changed=changed, elapsed=elapsed)
    assert all(e["ack"] is not None for e in local_slack.socket_mode.envelopes)
    assert local_slack.socket_mode.stray == []
    world.assert_unchanged()
    # Refused envelopes are acked bare: over the socket an ``{"error": ...}`` payload would be
    # read as the message to show. Answers (help, a modal's errors) still carry a payload.
    assert acks["error"] == 0 and acks["ack"] > 0 and acks["payload"] > 0, acks
    # After thousands of fuzzed requests a SIGTERM'd bot uses all of the 10 s drain (not what is
    # measured here; 20 s of the default suite): judged already, so it is killed instead.
    bot.kill()


async def test_fuzzed_lambda_events(
    local_lambda: LocalLambda,
    lambda_pool: Callable[..., LambdaPool],
    local_slack: LocalSlack,
    aws_env: dict[str, str],
    dynamodb_table: str,
) -> None:
    """The same requests as Function URL events to ``bot.lambda_handler.handler`` in one warm container.

    Work the function hands itself past the ack is recorded by ``LocalLambda`` and never run
    here: what is checked is the ack path (the edge, the listeners, decisions made in an ack).
    """
    store = DynamoRunStore(dynamodb_table)
    seeded = _stored_run(store)
    env = {
        **aws_env,
        **local_lambda.env(),
        "DYNAMODB_TABLE": dynamodb_table,
        "SLACK_BOT_TOKEN": local_slack.bot_token,
        "SLACK_API_URL": local_slack.api_url,
        "SLACK_SIGNING_SECRET": LOCAL_SIGNING_SECRET,
        "GRAPH_MODULES": "tests.support.graphs",
        "GRAPH_MODEL": "offline",
        "LOG_LEVEL": "INFO",
    }
    container = lambda_pool(env).new()
    seeds = _seeds(seeded.run_id, "1712345678.000100") + _armed_seeds(seeded, "1712345678.000100")
    world = World(
        slack=local_slack,
        seeded=seeded,
        load=store.load,
        runs=lambda: len(_dynamodb_run_ids(dynamodb_table)),
        log=container.stderr_text,
        alive=lambda: container.alive,
    )
    statuses: Counter[int] = Counter()
    clean: Counter[int] = Counter()
    signing: Counter[str] = Counter()
    fresh = _fresh(local_slack)

    @settings(
        max_examples=LAMBDA_EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(data=st.data())
    def one(data: st.DataObject) -> None:
        request = _request(data, seeds, fresh)
        headers = {name: value.decode("utf-8", "replace") for name, value in request.headers.items()}
        try:
            request.body.decode("utf-8")
            base64 = None  # as the Function URL encodes this content type
        except UnicodeDecodeError:
            base64 = True  # bytes that are not text travel base64-encoded, whatever their type
        try:
            result = container.invoke_sync(function_url_event(request.body, headers, base64=base64), timeout=30)
        except LambdaError as error:
            raise AssertionError(f"the function failed ({error}): {request.story}") from None
        response = bot_response(result)
        _judge(request, response.status, response.text.encode(), statuses=statuses, clean=clean, signing=signing)

    container.invoke_sync(function_url_event(b"ssl_check=1", {"Content-Type": "application/x-www-form-urlencoded"}))
    world.mark()  # after the cold start
    started = time.monotonic()
    await asyncio.to_thread(one)
    elapsed = time.monotonic() - started
    changed = world.changes()
    _record("Lambda (Function URL events)", statuses=statuses, signing=signing, changed=changed, elapsed=elapsed)
    world.assert_unchanged()
    _reached_every_layer(statuses, clean)
    handed = [i.event()["approval_bot"]["work"] for i in local_lambda.take()]
    assert {w["kind"] for w in handed} <= {"start", "list", "decide", "home"}, handed
    assert {w["graph"] for w in handed if w["kind"] == "start"} <= {"nope-graph"}, "no start of a graph that exists"


def _stored_run(store: RunStore) -> Run:
    """A run waiting on one question (a gated tool call, editable), stored as the engine stores it."""
    ask = Ask(
        key="a1",
        interrupt_id="v1:before_tool_call:tu1:x",
        name="approve_call",
        reason=None,
        node_id="ops",
        status=AskStatus.PENDING,
        created_at=0.0,
        verdicts=(Verdict.APPROVE, Verdict.REJECT, Verdict.REPLY, Verdict.EDIT),
        tool=ToolCall(name="set_replicas", input={"service": "billing", "replicas": 3}),
        card=MessageRef(channel=CHANNEL, ts="1712345678.000100"),
    )
    run = Run(
        run_id="r0fuzzseeded",
        graph="tool-gate-test",
        task="t",
        started_by="U0ALICE",
        status=RunStatus.WAITING,
        version=0,
        created_at=time.time(),
        updated_at=time.time(),
        asks={ask.key: ask},
        channel=CHANNEL,
    )
    store.create(run)
    stored = store.load(run.run_id)
    assert stored is not None
    return stored


def _dynamodb_run_ids(table: str) -> list[str]:
    client = boto3.client("dynamodb", region_name=REGION)
    found: list[str] = []
    for page in client.get_paginator("scan").paginate(TableName=table):
        found += [item["pk"]["S"] for item in page.get("Items", []) if item.get("sk", {}).get("S") == "run"]
    return found
