"""The slash command: ``/graph run <graph> <task>``, ``list``, ``runs``, ``pending``,
``status <run id>``, ``cancel <run id>``, ``audit <run id>``, ``stats [graph]`` and ``help``.

This is the one place command text is parsed. A mistake in it becomes a ``Mistake`` that
``bot.render.usage`` words as one line: the usage line that applies, or for a word that
is no subcommand the subcommand (or graph: a forgotten ``run``) it likely meant. Graph
names are used only when this process has loaded them already (a server loads them at
start-up; a cold Lambda has not, and its ack must not), so a bare ``run`` lists them
where it can and points at ``list`` where it cannot.

The ack answers what needs no graph code (help, usage errors) at once; starting a run,
listing graphs or the channel's runs, showing a run's status, cancelling, showing an
audit trail and counting the channel's approvals (``stats``) are handed off to run after
the ack, because they may import graph modules or read the store. A run's id comes from
the command's ``trigger_id``, so a command delivered twice starts one run. A run id given
to ``status``, ``cancel`` or ``audit`` is checked for its shape here, before anything
reads the store.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, get_args

from slack_bolt.async_app import AsyncAck, AsyncApp

from bot.handoff import Handoff, HandoffFailed
from bot.render.usage import Mistake, closest, help_text, mistake_text
from bot.services import Services
from bot.work import (
    RUN_ID,
    CancelRun,
    ListGraphs,
    ListPending,
    ListRuns,
    ShowAudit,
    ShowStats,
    ShowStatus,
    StartRun,
    Work,
    run_id_for,
)
from engine.ids import new_run_id

MAX_TASK_CHARS = 4000


Action = Literal["run", "list", "runs", "pending", "status", "cancel", "audit", "stats", "help"]
ACTIONS: Final[tuple[Action, ...]] = get_args(Action)  # every subcommand the router below handles
_BARE: Final = ("list", "runs", "pending")  # subcommands without arguments
_ON_A_RUN: Final = ("status", "cancel", "audit")  # subcommands taking one run id


@dataclass(frozen=True, kw_only=True)
class Command:
    action: Action
    graph: str = ""
    task: str = ""
    run_id: str = ""


class UsageError(ValueError):
    """The command's text is wrong in the way ``mistake`` says (``bot.render.usage`` words it)."""

    def __init__(self, mistake: Mistake) -> None:
        super().__init__(mistake_text(mistake))
        self.mistake = mistake


def decode_entities(text: str) -> str:
    """Slack sends ``&``, ``<`` and ``>`` in command text as entities; decode them once, here,
    so the graph gets what the person typed (messages escape it again when they show it)."""
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def parse_command(text: str, *, graphs: Sequence[str] = ()) -> Command:
    """The command ``text`` asks for; UsageError with what is wrong.

    ``graphs``: the graph names, when known without loading anything; a first word that is
    no subcommand but names (or nearly names) a graph is then taken for a forgotten ``run``.
    """
    words = text.strip().split(maxsplit=2)
    if not words or words[0].lower() == "help":
        return Command(action="help")
    verb = words[0].lower()
    if verb in _BARE:
        if len(words) > 1:
            raise UsageError(Mistake(kind="extra", subcommand=verb))
        return Command(action="list" if verb == "list" else "runs" if verb == "runs" else "pending")
    if verb == "run":
        if len(words) < 2:
            raise UsageError(Mistake(kind="no_graph", subcommand="run"))
        if len(words) < 3:
            raise UsageError(Mistake(kind="no_task", subcommand="run", graph=words[1]))
        task = words[2].strip()
        if len(task) > MAX_TASK_CHARS:
            raise UsageError(Mistake(kind="task_too_long", subcommand="run", length=len(task), limit=MAX_TASK_CHARS))
        return Command(action="run", graph=words[1], task=task)
    if verb == "cancel":
        return Command(action="cancel", run_id=_run_id(verb, words[1:]))
    if verb == "audit":
        return Command(action="audit", run_id=_run_id(verb, words[1:]))
    if verb == "status":
        return Command(action="status", run_id=_run_id(verb, words[1:]))
    if verb == "stats":
        if len(words) > 2:
            raise UsageError(Mistake(kind="graphs_many", subcommand=verb))
        return Command(action="stats", graph=words[1] if len(words) > 1 else "")
    raise UsageError(_unknown(words, graphs=graphs))


def _unknown(words: list[str], *, graphs: Sequence[str]) -> Mistake:
    """A first word that is no subcommand: the subcommand it likely misspells, or else the
    graph it names or likely misspells (a forgotten ``run``), or neither."""
    word, rest = words[0], " ".join(words[1:])
    graph = next((g for g in graphs if g.lower() == word.lower()), None)
    if graph is not None:
        return Mistake(kind="unknown", typed=word, graph=graph, rest=rest)
    meant = closest(word, ACTIONS)
    if meant is not None:
        return Mistake(kind="unknown", typed=word, suggestion=meant)
    return Mistake(kind="unknown", typed=word, graph=closest(word, graphs) or "", rest=rest)


def _run_id(verb: str, rest: list[str]) -> str:
    """The one run id after ``status``/``cancel``/``audit``, as the run's announcement shows it."""
    if not rest:
        raise UsageError(Mistake(kind="no_run", subcommand=verb))
    words = " ".join(rest).split()
    if len(words) > 1:
        raise UsageError(Mistake(kind="runs_many", subcommand=verb))
    run_id = words[0].strip("`").lower()
    if not RUN_ID.match(run_id):
        raise UsageError(Mistake(kind="not_a_run_id", subcommand=verb, typed=words[0]))
    return run_id


def register(app: AsyncApp, *, services: Services, handoff: Handoff) -> None:
    name = services.slack.command

    async def on_command(ack: AsyncAck, command: dict[str, Any]) -> None:
        graphs = services.loaded_graphs()  # never loads them: this is the ack's path
        names = [graph for graph, _ in graphs] if graphs is not None else None
        try:
            parsed = parse_command(decode_entities(command.get("text") or ""), graphs=names or ())
        except UsageError as problem:
            await ack(text=mistake_text(problem.mistake, command=name, graphs=names))
            return
        if parsed.action == "help":
            await ack(text=help_text(command=name))
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
        elif parsed.action == "stats":
            work = ShowStats(
                channel=command["channel_id"], user=command["user_id"], response_url=response_url, graph=parsed.graph
            )
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
