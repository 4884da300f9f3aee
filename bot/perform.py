"""Doing the work a Slack request left for after its ack (``bot.work``): start a run,
record a click and resume, cancel, answer a listing. Every outcome a person should know
of is told to them through the request's ``response_url``; nothing raises.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable

from slack_sdk.webhook.async_client import AsyncWebhookClient

from bot.listeners.outcomes import counted_text, loser_text
from bot.render import messages
from bot.render.audit import audit_trail, who_may
from bot.render.home import pending_list
from bot.render.listings import MAX_RUNS, run_list, run_status
from bot.render.mrkdwn import Rendered, inline_code, mention, short
from bot.render.stats import stats_reply
from bot.render.usage import unknown_graph, unknown_stats_graph
from bot.services import Services
from bot.work import (
    CancelRun,
    Decide,
    ListGraphs,
    ListPending,
    ListRuns,
    PickUp,
    ShowAudit,
    ShowHome,
    ShowStats,
    ShowStatus,
    StartRun,
    Work,
    kind_of,
)
from engine import DecideResult, PublishError, UnknownGraph
from engine.oversight import Cancelled, CancelOutcome
from engine.ports import StartLimited, StartRefused
from engine.records import Ask, Decision, Run
from engine.stats_access import read_stats
from engine.store import RunExists
from engine.threads import in_thread

logger = logging.getLogger(__name__)

Pause = Callable[[], Awaitable[None]]

IN_ITS_CHANNEL = "Its graph lets anyone in the run's channel act on it: type the command in that channel."


async def perform(work: Work, *, services: Services, before_resume: Pause | None = None) -> None:
    """Do ``work``; every outcome a person should know of is told to them, nothing raises.

    ``before_resume``: awaited by a ``Decide`` once the decision is recorded and before the
    run resumes, so that a process yielding to its acks (``bot.ack_first``) never holds an
    acked decision only in memory while it waits.
    """
    engine = services.engine
    try:
        if isinstance(work, StartRun):
            await _start(work, services=services)
        elif isinstance(work, ListGraphs):
            graphs = services.graphs.describe()
            await _tell(work.response_url, messages.graph_list(command=services.slack.command, graphs=graphs))
        elif isinstance(work, Decide):
            await _decide(work, services=services, before_resume=before_resume)
        elif isinstance(work, CancelRun):
            cancelled = await engine.cancel(run_id=work.run_id, user=work.user, channel=work.channel or None)
            await _tell(work.response_url, cancel_text(work.run_id, cancelled))
        elif isinstance(work, ShowAudit):
            await _show_audit(work, services=services)
        elif isinstance(work, ListRuns):
            runs = await in_thread(services.store.recent, channel=work.channel, limit=MAX_RUNS + 1)
            await _send(work.response_url, run_list(runs=runs, command=services.slack.command))
        elif isinstance(work, ShowStatus):
            await _show_status(work, services=services)
        elif isinstance(work, ShowStats):
            await _show_stats(work, services=services)
        elif isinstance(work, ShowHome):
            await services.views.opened(work.user)
        elif isinstance(work, ListPending):
            await _list_pending(work, services=services)
        elif isinstance(work, PickUp):
            await engine.pick_up(work.run_id)
        else:
            await engine.sweep_run(work.run_id)
    except Exception:  # the store or a graph failed: the sweeper goes on from what was saved
        logger.exception("%s work for run %s failed", kind_of(work), getattr(work, "run_id", "-"))
        if isinstance(work, CancelRun | ShowAudit | ShowStatus):  # nothing else will answer them
            failed = f"That failed just now (run {inline_code(work.run_id)}); try again in a moment."
            await _tell(work.response_url, failed)
        elif isinstance(work, ListRuns):
            await _tell(work.response_url, "Listing this channel's runs failed just now; try again in a moment.")
        elif isinstance(work, ListPending):
            await _tell(work.response_url, "Listing what waits for you failed just now; try again in a moment.")
        elif isinstance(work, ShowStats):
            await _tell(work.response_url, "Counting this channel's approvals failed just now; try again in a moment.")


async def _decide(work: Decide, *, services: Services, before_resume: Pause | None) -> None:
    engine = services.engine
    result = await engine.decide(
        run_id=work.run_id, ask_key=work.ask_key, decision=work.decision, claim=True, card=work.card
    )
    if not result.accepted:
        if _delivered_again(result, work.decision):
            return  # this very click, delivered again (Lambda delivers at least once)
        await _answer(work, loser_text(result), services=services)
        return
    if result.counted:
        await _answer(work, counted_text(result), services=services)
    if before_resume is not None:
        await before_resume()
    await engine.follow_up(result)


async def _answer(work: Decide, text: str, *, services: Services) -> None:
    """Tell the clicker: ephemeral under the card, or at the top of their Home tab."""
    if work.where == "home":
        await services.views.publish(work.decision.user, note=text)
    else:
        await _tell(work.response_url, text)


async def _list_pending(work: ListPending, *, services: Services) -> None:
    waiting = await services.inbox.waiting_for(work.user)
    try:
        await services.workspace.identity()
        workspace = services.workspace

        def link(run: Run, ask: Ask | None) -> str | None:
            if ask is not None and ask.card is not None:
                return workspace.link(ask.card, thread_ts=run.thread.ts if run.thread else None)
            return None
    except Exception:  # links are a convenience

        def link(run: Run, ask: Ask | None) -> str | None:
            return None

    await _send(work.response_url, pending_list(waiting=waiting, link=link, command=services.slack.command))


def _delivered_again(result: DecideResult, decision: Decision) -> bool:
    """Whether the store already holds this very decision (as the decision or as a vote)."""
    ask = result.ask
    if ask is None:
        return False
    return ask.decision == decision or ask.votes.get(decision.user) == decision


def cancel_text(run_id: str, cancelled: Cancelled) -> str:
    """One line per outcome of ``/graph cancel``."""
    run = f"run {inline_code(run_id)}"
    ran = f" What ran: {short(cancelled.ran, 600)}." if cancelled.ran else ""
    match cancelled.outcome:
        case CancelOutcome.CANCELLED:
            return f"Cancelled {run}; its open cards now say so.{ran}"
        case CancelOutcome.STOPPING:
            so_far = f" So far: {short(cancelled.ran, 600)}." if cancelled.ran else ""
            return (
                f"Cancelling {run}: it is stopping before its next node (a node already running,"
                f" or starting this second, finishes first); its thread will say what ran.{so_far}"
            )
        case CancelOutcome.ALREADY:
            return f"Someone already asked to cancel {run}; it is stopping.{ran}"
        case CancelOutcome.FINISHED:
            status = f" ({inline_code(cancelled.status, 40)})" if cancelled.status else ""
            return f"Nothing to cancel: {run} has already finished{status}.{ran}"
        case CancelOutcome.BUSY:
            return f"{run} kept changing while I tried to cancel it; nothing was cancelled. Try again."
        case CancelOutcome.NOT_ALLOWED:
            if not cancelled.allowed:
                return f"You may not cancel {run} from here. {IN_ITS_CHANNEL}"
            ask = who_may(cancelled.allowed, first="whoever started it")
            return f"You may not cancel {run}; only its requester and approvers may. Ask {ask}."
    return f"I don't know a {run}; check the id in backticks under the run's announcement."


async def _show_audit(work: ShowAudit, *, services: Services) -> None:
    run = await in_thread(services.store.load, work.run_id, snapshot=False)
    if run is None:
        await _tell(work.response_url, cancel_text(work.run_id, Cancelled(outcome=CancelOutcome.UNKNOWN)))
        return
    allowed, ids = await services.engine.may_oversee(run, work.user, channel=work.channel or None)
    if not allowed:
        ask = who_may(ids, first=mention(run.started_by))
        refusal = f"only its requester and approvers may. Ask {ask}." if ids else IN_ITS_CHANNEL
        await _tell(work.response_url, f"You may not read the audit trail of run {inline_code(run.run_id)}; {refusal}")
        return
    for message in audit_trail(run=run):
        if not await _send(work.response_url, message):
            return


async def _show_status(work: ShowStatus, *, services: Services) -> None:
    run = await in_thread(services.store.load, work.run_id, snapshot=False)
    if run is None:
        await _tell(work.response_url, cancel_text(work.run_id, Cancelled(outcome=CancelOutcome.UNKNOWN)))
        return
    allowed, ids = await services.engine.may_oversee(run, work.user, channel=work.channel or None)
    if not allowed:  # the same people who may read its audit trail
        ask = who_may(ids, first=mention(run.started_by))
        refusal = f"only its requester and approvers may. Ask {ask}." if ids else IN_ITS_CHANNEL
        await _tell(work.response_url, f"You may not see the status of run {inline_code(run.run_id)}; {refusal}")
        return
    await _send(work.response_url, run_status(run=run, command=services.slack.command))


async def _show_stats(work: ShowStats, *, services: Services) -> None:
    """``/graph stats [graph]``: read through the channel index (``engine.stats_access``),
    only the graphs this person may oversee; an unknown graph gets one did-you-mean line."""
    command = services.slack.command
    if work.graph:
        names = [name for name, _ in services.graphs.describe()]
        if work.graph not in names:
            await _tell(work.response_url, unknown_stats_graph(name=work.graph, graphs=names, command=command))
            return
    report = await read_stats(
        store=services.store,
        directory=services.directory,
        policy=services.graphs.policy,
        channel=work.channel,
        user=work.user,
        graph=work.graph or None,
        now=time.time(),
        retention_seconds=services.settings.run_retention_days * 86400,
    )
    await _send(work.response_url, stats_reply(report=report, graph=work.graph or None, command=command))


async def _start(work: StartRun, *, services: Services) -> None:
    command = services.slack.command
    try:
        run = await services.engine.start(
            graph=work.graph, task=work.task, user=work.user, channel=work.channel, run_id=work.run_id
        )
        if run.thread is None and run.channel is not None:
            await _tell(
                work.response_url,
                f"Slack has not confirmed the announcement of run {inline_code(run.run_id)} yet. The run goes on, "
                "and its messages appear in this channel as soon as Slack takes them.",
            )
    except RunExists:
        logger.info("run %s: already started (a retried command); nothing more to do", work.run_id)
    except UnknownGraph as unknown:
        names = [name for name, _ in services.graphs.describe()]
        await _tell(work.response_url, unknown_graph(name=unknown.name, task=work.task, graphs=names, command=command))
    except StartRefused as refused:
        graph = inline_code(refused.graph, 40)
        starters = who_may(refused.allowed)
        if starters:
            text = f"You may not start {graph}; ask {starters} (the graph's starters)."
        else:
            text = f"You may not start {graph}: its policy names nobody who may."
        await _tell(work.response_url, text)
    except StartLimited as limited:
        await _tell(work.response_url, messages.start_limited(limited=limited, now=time.time(), command=command))
    except PublishError as error:
        if str(error) in _NOT_A_MEMBER:
            text = f"I could not post in this channel ({error}). Invite me with `/invite` and try again."
        else:
            text = f"Slack refused the run's announcement ({str(error)[:80]}), so the run did not start."
        await _tell(work.response_url, text)
    except Exception:  # e.g. a graph module that fails to import: say so, don't go quiet
        logger.exception("starting %s failed", work.graph)
        await _tell(work.response_url, f"Starting `{work.graph[:40]}` failed; the bot's logs say why.")


_NOT_A_MEMBER = frozenset({"not_in_channel", "channel_not_found"})
"""Refusals an ``/invite`` cures: the bot is not in the channel (a private one: cannot see it)."""


async def _tell(response_url: str, text: str) -> None:
    """An ephemeral answer to the person who acted, through the request's response_url."""
    await _send(response_url, Rendered(text=text, blocks=[]))


async def _send(response_url: str, message: Rendered) -> bool:
    """``message``, ephemeral, through the request's response_url; whether Slack took it."""
    if not response_url:
        return False
    try:
        response = await AsyncWebhookClient(response_url).send(
            text=message.text,
            blocks=message.blocks or None,
            response_type="ephemeral",
            replace_original=False,
        )
    except Exception as error:  # they asked once; the log keeps it
        logger.warning("could not answer through response_url: %s", type(error).__name__)
        return False
    if response.status_code != 200:
        logger.warning("could not answer through response_url: HTTP %s", response.status_code)
        return False
    return True
