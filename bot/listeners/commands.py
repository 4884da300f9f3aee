"""The slash command: ``/graph run <graph> <task>``, ``/graph list``, ``/graph help``.

The ack answers what needs no graph code (help, usage errors) at once; starting a run
and listing graphs happen after the ack, because both may import graph modules.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Literal

from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncRespond

from bot.render import messages
from bot.services import Services
from engine import PublishError, UnknownGraph

logger = logging.getLogger(__name__)

MAX_TASK_CHARS = 4000


@dataclass(frozen=True, kw_only=True)
class Command:
    action: Literal["run", "list", "help"]
    graph: str = ""
    task: str = ""


class UsageError(ValueError):
    pass


def parse_command(text: str) -> Command:
    words = text.strip().split(maxsplit=2)
    if not words or words[0].lower() == "help":
        return Command(action="help")
    verb = words[0].lower()
    if verb == "list":
        if len(words) > 1:
            raise UsageError("`list` takes no arguments.")
        return Command(action="list")
    if verb == "run":
        if len(words) < 2:
            raise UsageError("Name the graph to run.")
        if len(words) < 3:
            raise UsageError(f"Give `{words[1]}` a task, e.g. `run {words[1]} <what to do>`.")
        task = words[2].strip()
        if len(task) > MAX_TASK_CHARS:
            raise UsageError(f"The task is too long ({len(task)} characters, at most {MAX_TASK_CHARS}).")
        return Command(action="run", graph=words[1], task=task)
    raise UsageError(f"Unknown subcommand `{words[0][:40]}`.")


def register(app: AsyncApp, *, services: Services) -> None:
    name = services.settings.slack_command

    async def acknowledge(ack: AsyncAck, command: dict[str, Any]) -> None:
        try:
            parsed = parse_command(command.get("text") or "")
        except UsageError as problem:
            await ack(text=messages.usage_error(command=name, problem=str(problem)))
            return
        if parsed.action == "help":
            await ack(text=messages.help_text(command=name))
        else:
            await ack()

    async def work(command: dict[str, Any], respond: AsyncRespond) -> None:
        try:
            parsed = parse_command(command.get("text") or "")
        except UsageError:
            return  # answered in the ack
        if parsed.action == "list":
            graphs = services.graphs.describe()
            await respond(text=messages.graph_list(command=name, graphs=graphs), response_type="ephemeral")
        elif parsed.action == "run":
            await _start(parsed, command=command, respond=respond)

    async def _start(parsed: Command, *, command: dict[str, Any], respond: AsyncRespond) -> None:
        try:
            await services.engine.start(
                graph=parsed.graph, task=parsed.task, user=command["user_id"], channel=command["channel_id"]
            )
        except UnknownGraph as unknown:
            known = ", ".join(f"`{n}`" for n, _ in services.graphs.describe()) or "none"
            problem = f"There is no graph called `{unknown.name[:40]}`. Known graphs: {known}."
            await respond(text=messages.usage_error(command=name, problem=problem), response_type="ephemeral")
        except PublishError as error:
            await respond(
                text=f"I could not post in this channel ({error}). Invite me with `/invite` and try again.",
                response_type="ephemeral",
            )
        except Exception:  # e.g. a graph module that fails to import: say so, don't go quiet
            logger.exception("starting %s failed", parsed.graph)
            await respond(
                text=f"Starting `{parsed.graph[:40]}` failed; the bot's logs say why.", response_type="ephemeral"
            )

    app.command(name)(ack=acknowledge, lazy=[work])
