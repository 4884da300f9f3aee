"""``approval-bot demo``: the real bot against a local stand-in for Slack, in a terminal.

Nothing is mocked between the keyboard and the graph: typed commands become signed
HTTP requests to the bot's real aiohttp server, the bot answers through the real Web
API client into ``LocalSlack``, runs are stored in the embedded SQLite store, and the
graphs run on Strands with the offline scripted model. Cards are printed as they
arrive; answer them by number.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import shlex
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

from aiohttp import web

from bot.render.modals import TEXT_ACTION_ID, TEXT_BLOCK_ID
from bot.server import build_web_app
from bot.services import build_services
from bot.settings import Settings
from demo.terminal import buttons_of, plain, render_message
from localslack import LocalSlack, LocalSlackUser

CHANNEL = "C0DEMO"
USERS = {"U0ALICE": "alice", "U0BOB": "bob", "U0CAROL": "carol"}
HELP = """Type a slash command, e.g.  /graph run deploy billing 1.2.3   (/graph list, /graph help)
Answer card N:  approve N | reject N [reason] | reply N <text> | trust N | retry N | edit N {json}
Others:  as bob   (act as another user)   cards   help   quit"""

SCRIPT = [
    "/graph list",
    "/graph run deploy billing 1.2.3",
    "approve 1",
    "/graph run release-check 2.0.0",
    "reply 2 ship it after the smoke test",
    "as bob",
    "approve 3",
    "/graph run cleanup remove the old staging databases",
    "reject 4 not before the audit",
]


class DemoSession:
    def __init__(self, *, slack: LocalSlack, user: LocalSlackUser, out: Callable[[str], None] = print) -> None:
        self.slack = slack
        self.user = user
        self.out = out
        self.acting = "U0ALICE"
        self.cards: list[tuple[str, str]] = []  # (channel, ts), numbered from 1
        self.finished = 0
        self.updated = 0
        self.last_change = 0.0
        slack.on_change.append(self._on_change)

    def _name(self, user_id: str) -> str:
        return USERS.get(user_id, user_id)

    async def _on_change(self, event: str, details: dict[str, Any]) -> None:
        self.last_change = time.monotonic()
        result = details.get("result") or {}
        if event == "chat.postMessage" and result.get("ok"):
            message = result["message"]
            if buttons_of(message):
                self.cards.append((message["channel"], message["ts"]))
                label = f"card {len(self.cards)}"
            else:
                label = "bot"
                if str(message.get("text", "")).startswith((":white_check_mark:", ":x:")):
                    self.finished += 1
            self.out(render_message(message, label=label, user_name=self._name))
        elif event == "chat.update" and result.get("ok"):
            message = self.slack.message(str(result["channel"]), str(result["ts"])) or {}
            number = self._number(str(result["channel"]), str(result["ts"]))
            self.updated += 1
            self.out(render_message(message, label=f"card {number} updated", user_name=self._name))
        elif event in ("chat.postEphemeral", "response_url", "command_ack"):
            text = (
                (details.get("params") or details.get("body") or {}).get("text")
                if event != "command_ack"
                else (details.get("body") or {}).get("text")
            )
            if text:
                self.out(f"  (only you see this) {plain(str(text), user_name=self._name)}")

    def _number(self, channel: str, ts: str) -> int:
        return self.cards.index((channel, ts)) + 1 if (channel, ts) in self.cards else 0

    async def handle(self, line: str) -> bool:
        """Carry out one typed line; False means quit."""
        line = line.strip()
        if not line:
            return True
        if line.startswith("/"):
            command, _, text = line.partition(" ")
            response = await self.user.slash_command(
                text=text, user_id=self.acting, channel_id=CHANNEL, command=command
            )
            if response.status != 200:
                self.out(f"  (the bot answered HTTP {response.status})")
            return True
        words = shlex.split(line) if line.count('"') % 2 == 0 else line.split()
        verb = words[0].lower()
        if verb in ("quit", "exit"):
            return False
        if verb == "help":
            self.out(HELP)
        elif verb == "as" and len(words) == 2:
            match = [u for u, n in USERS.items() if n == words[1].lower() or u == words[1]]
            self.acting = match[0] if match else self.acting
            self.out(f"  you are now @{self._name(self.acting)}")
        elif verb == "cards":
            for number, (channel, ts) in enumerate(self.cards, 1):
                message = self.slack.message(channel, ts) or {}
                self.out(f"  card {number}: {' '.join(buttons_of(message)) or '(answered)'}")
        elif (
            verb in ("approve", "reject", "reply", "trust", "retry", "edit") and len(words) >= 2 and words[1].isdigit()
        ):
            rest = line.split(None, 2)[2] if len(line.split(None, 2)) > 2 else None  # keep JSON as typed
            await self.answer(int(words[1]), verb, rest)
        else:
            self.out(f"  I don't know {line!r}. " + HELP)
        return True

    async def answer(self, number: int, verb: str, text: str | None) -> None:
        if not 1 <= number <= len(self.cards):
            self.out(f"  there is no card {number}")
            return
        channel, ts = self.cards[number - 1]
        message = self.slack.message(channel, ts)
        label = verb.capitalize()
        if message is None or label not in buttons_of(message):
            self.out(f"  card {number} has no {label} button (any more)")
            return
        before = len(self.slack.open_views(self.acting))
        await self.user.click(message=message, label=label, user_id=self.acting, channel_id=channel)
        if verb not in ("reply", "reject", "edit"):
            return
        view = await self.slack.wait_for(
            lambda: (
                self.slack.open_views(self.acting)[-1] if len(self.slack.open_views(self.acting)) > before else None
            ),
            timeout=10,
            what="the modal to open",
        )
        if verb == "edit" and text is None:
            self.out("  type the new input as JSON: edit N {...}; the current input is on the card")
            text = "{}"
        values = {TEXT_BLOCK_ID: {TEXT_ACTION_ID: text or ""}}
        response = await self.user.submit_view(view=view, values=values, user_id=self.acting)
        errors = response.body.get("errors") if isinstance(response.body, dict) else None
        if errors:
            self.out("  the form refused it: " + "; ".join(str(e) for e in errors.values()))


async def run_demo(*, scripted: bool) -> int:
    os.environ["GRAPH_MODEL"] = "offline"  # the demo never calls a model provider
    state = tempfile.mkdtemp(prefix="approval-bot-demo-")
    secret = secrets.token_hex(16)
    slack = LocalSlack(users=USERS, channels={CHANNEL: "demo"})
    await slack.start()
    settings = Settings.model_validate(
        {
            "SLACK_BOT_TOKEN": slack.bot_token,
            "SLACK_SIGNING_SECRET": secret,
            "SLACK_API_URL": slack.api_url,
            "SQLITE_PATH": os.path.join(state, "runs.sqlite3"),
            "GRAPH_MODULES": os.environ.get("GRAPH_MODULES", ""),
        }
    )
    services = build_services(settings)
    runner = web.AppRunner(build_web_app(services=services), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    user = LocalSlackUser(bot_url=f"http://127.0.0.1:{port}/slack/events", signing_secret=secret, slack=slack)
    session = DemoSession(slack=slack, user=user)
    print(f"Offline demo: the bot listens on 127.0.0.1:{port}, Slack is simulated, state in {state}.")
    try:
        return await (_scripted(session) if scripted else _interactive(session))
    finally:
        await user.aclose()
        await runner.cleanup()
        await slack.stop()


async def _interactive(session: DemoSession) -> int:
    print(HELP)
    while True:
        try:
            line = await asyncio.to_thread(input, f"@{USERS[session.acting]} in #demo> ")
        except EOFError:
            return 0
        if not await session.handle(line):
            return 0


async def _scripted(session: DemoSession) -> int:
    """A walk-through for non-interactive use: every step waits for the bot's answer."""
    for line in SCRIPT:
        print(f"\n@{USERS[session.acting]} in #demo> {line}", flush=True)
        try:
            await _step(session, line)
        except TimeoutError as error:
            print(f"demo: {error}", file=sys.stderr)
            return 1
    print(f"\nDemo finished: {session.finished} runs completed, {len(session.cards)} cards answered.")
    return 0 if session.finished == 3 else 1


async def _step(session: DemoSession, line: str) -> None:
    cards, finished, updated = len(session.cards), session.finished, session.updated
    await session.handle(line)
    if line.startswith("/graph run"):
        await session.slack.wait_for(
            lambda: len(session.cards) > cards or session.finished > finished, timeout=60, what="a card or a result"
        )
    elif line.split()[0] in ("approve", "reject", "reply"):
        await session.slack.wait_for(lambda: session.updated > updated, timeout=60, what="a decision")
    await _quiet(session, seconds=0.8)


async def _quiet(session: DemoSession, *, seconds: float) -> None:
    """Wait until the bot has said nothing for a moment (it may still be resuming a run)."""
    while time.monotonic() - session.last_change < seconds:
        await asyncio.sleep(0.1)
