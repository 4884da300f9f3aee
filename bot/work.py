"""The work a Slack request leaves for after its ack, as small records of ids.

A listener acks within Slack's 3 seconds and hands one of these to a ``Handoff``
(``bot.handoff``): on a server it runs in the same process as a task, on Lambda it
travels to a fresh invocation of the same function. Either way it carries ids and the
few words a person typed (a task), never run state: everything else is read from the
store, so the work may run anywhere, later, or twice (Lambda delivers an asynchronous
event at least once), and does the same thing.

``to_wire`` / ``from_wire`` are the only encoding; ``from_wire`` checks every field,
because even a signed envelope should not be trusted to hold the right types.
"""

from __future__ import annotations

import base64
import hashlib
import logging
from dataclasses import dataclass
from typing import Any, Final

from slack_sdk.webhook.async_client import AsyncWebhookClient

from bot.listeners.outcomes import loser_text
from bot.render import messages
from bot.services import Services
from engine import PublishError, UnknownGraph
from engine.records import Decision, MessageRef
from engine.store import RunExists

logger = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class StartRun:
    run_id: str
    graph: str
    task: str
    user: str
    channel: str
    response_url: str


@dataclass(frozen=True, kw_only=True)
class ListGraphs:
    response_url: str


@dataclass(frozen=True, kw_only=True)
class Decide:
    """A one-click verdict (Approve, Trust, Retry): decided, and resumed, after the ack."""

    run_id: str
    ask_key: str
    decision: Decision
    card: MessageRef | None
    response_url: str


@dataclass(frozen=True, kw_only=True)
class PickUp:
    """A decision already recorded (in a modal's ack): resume the run if nobody holds it."""

    run_id: str


@dataclass(frozen=True, kw_only=True)
class SweepRun:
    """One run the sweeper found with work left (a dead holder, decisions, Slack owed)."""

    run_id: str


Work = StartRun | ListGraphs | Decide | PickUp | SweepRun
_KINDS: Final[dict[str, type[Work]]] = {
    "start": StartRun,
    "list": ListGraphs,
    "decide": Decide,
    "pick_up": PickUp,
    "sweep_run": SweepRun,
}
_KIND_OF: Final = {cls: kind for kind, cls in _KINDS.items()}


def run_id_for(trigger_id: str | None) -> str | None:
    """The run id a slash command starts, fixed by its ``trigger_id``: a retry of the same
    command (Slack's, or a second delivery of the handoff) finds the run already created."""
    if not trigger_id:
        return None
    digest = hashlib.sha256(f"approval-bot/start/{trigger_id}".encode()).digest()
    return base64.b32encode(digest[:10]).decode().lower()


def to_wire(work: Work) -> dict[str, Any]:
    fields: dict[str, Any] = {"kind": _KIND_OF[type(work)]}
    for name, value in vars(work).items():
        if isinstance(value, Decision):
            value = value.to_dict()
        elif isinstance(value, MessageRef):
            value = {"channel": value.channel, "ts": value.ts}
        fields[name] = value
    return fields


def from_wire(data: object) -> Work:
    """The work ``data`` describes; ValueError when it is not exactly what ``to_wire`` makes."""
    if not isinstance(data, dict) or data.get("kind") not in _KINDS:
        raise ValueError("not a piece of work")
    cls = _KINDS[data["kind"]]
    fields = {k: v for k, v in data.items() if k != "kind"}
    try:
        if cls is Decide:
            fields["decision"] = _decision(fields.get("decision"))
            card = fields.get("card")
            fields["card"] = None if card is None else MessageRef(channel=_str(card["channel"]), ts=_str(card["ts"]))
        work = cls(**fields)
    except (TypeError, KeyError, ValueError) as error:
        raise ValueError(f"malformed {data['kind']} work: {type(error).__name__}") from None
    for name, value in vars(work).items():
        if name not in ("decision", "card"):
            _str(value)
    return work


def _decision(data: object) -> Decision:
    if not isinstance(data, dict) or set(data) - {"verdict", "user", "at", "text"}:
        raise ValueError("malformed decision")
    decision = Decision.from_dict(data)
    if decision.text is not None:
        _str(decision.text)
    _str(decision.user)
    return decision


def _str(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError("expected text")
    return value


async def perform(work: Work, *, services: Services) -> None:
    """Do ``work``; every outcome a person should know of is told to them, nothing raises."""
    engine = services.engine
    try:
        if isinstance(work, StartRun):
            await _start(work, services=services)
        elif isinstance(work, ListGraphs):
            graphs = services.graphs.describe()
            await _tell(work.response_url, messages.graph_list(command=services.slack.command, graphs=graphs))
        elif isinstance(work, Decide):
            result = await engine.decide(
                run_id=work.run_id, ask_key=work.ask_key, decision=work.decision, claim=True, card=work.card
            )
            if not result.accepted:
                if result.ask is not None and result.ask.decision == work.decision:
                    return  # this very click, delivered again (Lambda delivers at least once)
                await _tell(work.response_url, loser_text(result))
                return
            await engine.follow_up(result)
        elif isinstance(work, PickUp):
            await engine.pick_up(work.run_id)
        else:
            await engine.sweep_run(work.run_id)
    except Exception:  # the store or a graph failed: the sweeper goes on from what was saved
        logger.exception("%s work for run %s failed", _KIND_OF[type(work)], getattr(work, "run_id", "-"))


async def _start(work: StartRun, *, services: Services) -> None:
    command = services.slack.command
    try:
        await services.engine.start(
            graph=work.graph, task=work.task, user=work.user, channel=work.channel, run_id=work.run_id
        )
    except RunExists:
        logger.info("run %s: already started (a retried command); nothing more to do", work.run_id)
    except UnknownGraph as unknown:
        known = ", ".join(f"`{n}`" for n, _ in services.graphs.describe())
        if known:
            problem = f"There is no graph called `{unknown.name[:40]}`. Known graphs: {known}."
        else:
            problem = (
                f"There is no graph called `{unknown.name[:40]}`: no graphs are registered yet. Whoever runs "
                "the bot can set `EXAMPLE_GRAPHS=true` for the example graphs, or `GRAPH_MODULES` to modules "
                "with their own."
            )
        await _tell(work.response_url, messages.usage_error(command=command, problem=problem))
    except PublishError as error:
        await _tell(
            work.response_url, f"I could not post in this channel ({error}). Invite me with `/invite` and try again."
        )
    except Exception:  # e.g. a graph module that fails to import: say so, don't go quiet
        logger.exception("starting %s failed", work.graph)
        await _tell(work.response_url, f"Starting `{work.graph[:40]}` failed; the bot's logs say why.")


async def _tell(response_url: str, text: str) -> None:
    """An ephemeral answer to the person who acted, through the request's response_url."""
    if not response_url:
        return
    try:
        await AsyncWebhookClient(response_url).send(text=text, response_type="ephemeral", replace_original=False)
    except Exception as error:  # they asked once; the log keeps it
        logger.warning("could not answer through response_url: %s", type(error).__name__)
