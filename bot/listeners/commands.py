"""The slash command: ``/graph run <graph> <task>``, ``list``, ``runs``, ``pending``,
``status <run id>``, ``cancel <run id>``, ``audit <run id>`` and ``help``.

The ack answers what needs no graph code (help, usage errors) at once; starting a run,
listing graphs or the channel's runs, showing a run's status, cancelling and showing an
audit trail are handed off to run after the ack, because they may import graph modules
or read the store. A run's id comes from the command's ``trigger_id``, so a command
delivered twice starts one run. A run id given to ``status``, ``cancel`` or ``audit`` is
checked for its shape here, before anything reads the store.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from slack_bolt.async_app import AsyncAck, AsyncApp

from bot.handoff import Handoff, HandoffFailed
from bot.render import messages
from bot.services import Services
from bot.work import (
    RUN_ID,
    CancelRun,
    ListGraphs,
    ListPending,
    ListRuns,
    ShowAudit,
    ShowStatus,
    StartRun,
    Work,
    run_id_for,
)
from engine.ids import new_run_id

MAX_TASK_CHARS = 4000


@dataclass(frozen=True, kw_only=True)
class Command:
    action: Literal["run", "list", "help", "cancel", "audit", "runs", "status", "pending"]
    graph: str = ""
    task: str = ""
    run_id: str = ""


class UsageError(ValueError):
    pass


def decode_entities(text: str) -> str:
    """Slack sends ``&``, ``<`` and ``>`` in command text as entities; decode them once, here,
    so the graph gets what the person typed (messages escape it again when they show it)."""
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def parse_command(text: str) -> Command:
    words = text.strip().split(maxsplit=2)
    if not words or words[0].lower() == "help":
        return Command(action="help")
    verb = words[0].lower()
    if verb in ("list", "runs", "pending"):
        if len(words) > 1:
            raise UsageError(f"`{verb}` takes no arguments.")
        return Command(action="list" if verb == "list" else "runs" if verb == "runs" else "pending")
    if verb == "run":
        if len(words) < 2:
            raise UsageError("Name the graph to run.")
        if len(words) < 3:
            raise UsageError(f"Give `{words[1]}` a task, e.g. `run {words[1]} <what to do>`.")
        task = words[2].strip()
        if len(task) > MAX_TASK_CHARS:
            raise UsageError(f"The task is too long ({len(task)} characters, at most {MAX_TASK_CHARS}).")
        return Command(action="run", graph=words[1], task=task)
    if verb == "cancel":
        return Command(action="cancel", run_id=_run_id(verb, words[1:]))
    if verb == "audit":
        return Command(action="audit", run_id=_run_id(verb, words[1:]))
    if verb == "status":
        return Command(action="status", run_id=_run_id(verb, words[1:]))
    raise UsageError(f"Unknown subcommand `{words[0][:40]}`.")


def _run_id(verb: str, rest: list[str]) -> str:
    """The one run id after ``status``/``cancel``/``audit``, as the run's announcement shows it."""
    if not rest:
        raise UsageError(f"Name the run: `{verb} <run id>`, the id in backticks under the run's announcement.")
    if len(rest) > 1:
        raise UsageError(f"`{verb}` takes one run id, e.g. `{verb} <run id>`.")
    run_id = rest[0].strip("`").lower()
    if not RUN_ID.match(run_id):
        shown = rest[0].replace("`", "'")[:40]
        raise UsageError(f"`{shown}` is not a run id: copy the id in backticks under the run's announcement.")
    return run_id


def register(app: AsyncApp, *, services: Services, handoff: Handoff) -> None:
    name = services.slack.command

    async def on_command(ack: AsyncAck, command: dict[str, Any]) -> None:
        try:
            parsed = parse_command(decode_entities(command.get("text") or ""))
        except UsageError as problem:
            await ack(text=messages.usage_error(command=name, problem=str(problem)))
            return
        if parsed.action == "help":
            await ack(text=messages.help_text(command=name))
            return
        work: Work
        response_url = command.get("response_url") or ""
        if parsed.action == "list":
            work = ListGraphs(response_url=response_url)
        elif parsed.action == "cancel":
            work = CancelRun(
                run_id=parsed.run_id, user=command["user_id"], response_url=response_url, channel=command["channel_id"]
            )
        elif parsed.action == "audit":
            work = ShowAudit(
                run_id=parsed.run_id, user=command["user_id"], response_url=response_url, channel=command["channel_id"]
            )
        elif parsed.action == "status":
            work = ShowStatus(
                run_id=parsed.run_id, user=command["user_id"], response_url=response_url, channel=command["channel_id"]
            )
        elif parsed.action == "pending":
            work = ListPending(user=command["user_id"], response_url=response_url)
        elif parsed.action == "runs":
            work = ListRuns(channel=command["channel_id"], user=command["user_id"], response_url=response_url)
        else:
            work = StartRun(
                run_id=run_id_for(command.get("trigger_id")) or new_run_id(),
                graph=parsed.graph,
                task=parsed.task,
                user=command["user_id"],
                channel=command["channel_id"],
                response_url=response_url,
            )
        try:
            await handoff.submit(work)
        except HandoffFailed as failed:
            if parsed.action != "run":
                text = f"I could not do that just now ({failed}). Try again in a moment."
            elif failed.maybe_started:
                text = f"I could not confirm that this started ({failed}). If nothing appears in a minute, try again."
            else:
                text = f"I could not start that just now ({failed}). Try again in a moment."
            await ack(text=text)
            return
        await ack()

    app.command(name)(on_command)
