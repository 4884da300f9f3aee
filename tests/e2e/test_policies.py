"""Approval policies through the real server: who may decide, how many, until when.

Each test drives ``approval-bot serve`` over signed HTTP (the sweeper is the server's
own, or ``approval-bot sweep`` run as a command) and checks what really happened: the
record in the store, the messages and ephemeral notices in the local Slack, and the
side effects in the markers file. The graphs are ``guarded-write`` under the policies
in ``tests.support.graphs.POLICY_GRAPHS``. Parametrized over SQLite and DynamoDB.

The people: U0ALICE, U0BOB and U0CAROL are approvers (Carol through the user group
S0OPS); U0DAVE starts runs he may not approve; U0MALLORY may do nothing; U0LEAD is in
the escalation group S0LEADS.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bot.render.modals import TEXT_ACTION_ID, TEXT_BLOCK_ID
from bot.work import run_id_for
from engine.audit import AuditEvent
from engine.records import AskStatus, Closed, Run, RunStatus, Verdict
from localslack import LocalSlack, LocalSlackUser
from tests.e2e.conftest import (
    CHANNEL,
    REPO,
    Backend,
    StartBot,
    UserFor,
    _bot_env,
    all_text,
    cards,
    eventually,
    finished_message,
    live_buttons,
    run_of,
)

FAST_SWEEP = ["--sweep-seconds", "1"]


@pytest.fixture(autouse=True)
def usergroups(local_slack: LocalSlack) -> None:
    """Every group a policy names exists in the workspace (a lookup of an unknown group
    would be a call Slack refuses)."""
    local_slack.set_usergroup("S0OPS", ["U0CAROL"])
    local_slack.set_usergroup("S0LEADS", ["U0LEAD"])


# -- helpers -------------------------------------------------------------------------------------


async def _start(
    slack: LocalSlack, user: LocalSlackUser, graph: str, *, by: str, task: str = "hello"
) -> dict[str, Any]:
    """``/graph run <graph> <task>`` by ``by``; the run's one card."""
    response = await user.slash_command(text=f"run {graph} {task}", user_id=by, channel_id=CHANNEL)
    assert response.status == 200
    (card,) = await slack.wait_for(lambda: cards(slack), timeout=30, what=f"the card of {graph}")
    return card


async def _notice(slack: LocalSlack, user: str, *, after: int, what: str) -> dict[str, Any]:
    """The next ephemeral message ``user`` sees, once they have seen ``after`` of them."""
    seen = await slack.wait_for(lambda: slack.ephemerals(user)[after:], timeout=30, what=what)
    return seen[0]


def _text(message: dict[str, Any]) -> str:
    return all_text(message) + "\n" + str(message.get("blocks") or "")


def _current(slack: LocalSlack, message: dict[str, Any]) -> dict[str, Any]:
    current = slack.message(CHANNEL, str(message["ts"]))
    assert current is not None
    return current


async def _card_saying(slack: LocalSlack, card: dict[str, Any], needle: str, *, what: str) -> dict[str, Any]:
    """The card once it says ``needle``."""

    def saying() -> dict[str, Any] | None:
        current = _current(slack, card)
        return current if needle in _text(current) else None

    return await slack.wait_for(saying, timeout=30, what=what)


def _load(backend: Backend, run_id: str) -> Run:
    run = backend.open_store().load(run_id, snapshot=False)
    assert run is not None
    return run


async def _quiet(backend: Backend, run_id: str) -> Run:
    """The run once it waits with nothing owed to Slack (its card's posting is recorded after
    the card appears, in a write of its own)."""

    def quiet() -> Run | None:
        run = _load(backend, run_id)
        return run if run.status is RunStatus.WAITING and run.lease_owner is None and not run.owes_slack else None

    found: Run = await eventually(quiet, what=f"run {run_id} to wait with nothing owed")
    return found


def _markers(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def _notices(slack: LocalSlack) -> list[dict[str, Any]]:
    """The reminders and escalations posted in the channel (their metadata says ``<ask>:notice:<n>``)."""
    return [
        m
        for m in slack.messages(CHANNEL)
        if ":notice:" in str(((m.get("metadata") or {}).get("event_payload") or {}).get("what", ""))
    ]


def _kinds(run: Run, kind: str) -> list[AuditEvent]:
    return [e for e in run.audit if e.kind == kind]


async def _reject_with_modal(
    slack: LocalSlack, user: LocalSlackUser, card: dict[str, Any], *, by: str, reason: str
) -> None:
    await user.click(message=card, label="Reject", user_id=by, channel_id=CHANNEL)
    views = await slack.wait_for(lambda: slack.open_views(by), timeout=10, what="the reject modal")
    await user.submit_view(view=views[-1], values={TEXT_BLOCK_ID: {TEXT_ACTION_ID: reason}}, user_id=by)


async def _done(slack: LocalSlack, *, timeout: float = 30) -> dict[str, Any]:
    return await slack.wait_for(lambda: finished_message(slack), timeout=timeout, what="the run's final message")


def _assert_untouched(before: Run, after: Run, *, refused: str) -> None:
    """A refused click changed nothing but the audit trail, which gained one ``refused`` event."""
    assert after.status is before.status is RunStatus.WAITING
    assert after.asks == before.asks, "the ask is exactly as it was: no decision, no vote"
    (ask,) = after.asks.values()
    assert ask.status is AskStatus.PENDING and ask.decision is None and not ask.votes
    new = [e for e in after.audit if e not in before.audit]
    assert [(e.kind, e.by) for e in new] == [("refused", refused)]
    assert after.version - before.version <= 1, "at most the audit note was written"


# -- 1. approvers, by user and by group ------------------------------------------------------------


async def test_only_approvers_may_decide_directly_or_through_their_group(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for: UserFor, markers_file: Path
) -> None:
    bot = await start_bot(backend=backend)
    user = user_for(bot)
    card = await _start(local_slack, user, "guarded-approvers", by="U0DAVE")
    assert "<@U0ALICE>" in _text(card) and "<!subteam^S0OPS>" in _text(card), "the card says who may decide"
    run_id = run_of(backend.open_store(), local_slack).run_id
    before = await _quiet(backend, run_id)

    await user.click(message=card, label="Approve", user_id="U0MALLORY", channel_id=CHANNEL)
    notice = await _notice(local_slack, "U0MALLORY", after=0, what="Mallory's refusal")
    assert "Only " in notice["text"] and "may decide this; nothing was recorded." in notice["text"], notice["text"]
    assert "<@U0ALICE>" in notice["text"] and "<!subteam^S0OPS>" in notice["text"], notice["text"]
    _assert_untouched(before, _load(backend, run_id), refused="U0MALLORY")
    assert live_buttons(_current(local_slack, card)) == ["Approve", "Reject", "Reply"], "the card stays live"
    assert _markers(markers_file) == []
    assert finished_message(local_slack) is None

    await user.click(message=card, label="Approve", user_id="U0CAROL", channel_id=CHANNEL)  # in S0OPS
    done = await _done(local_slack)
    assert "writer result: wrote writer:hello" in all_text(done)
    assert _markers(markers_file) == ["writer:hello"]
    run = _load(backend, run_id)
    assert run.status is RunStatus.COMPLETED
    (ask,) = run.asks.values()
    assert ask.status is AskStatus.CONSUMED and ask.decision is not None and ask.decision.user == "U0CAROL"
    assert "<@U0CAROL>" in _text(_current(local_slack, card))
    assert local_slack.ephemerals("U0CAROL") == [], "an accepted click needs no notice"


# -- 2. self-approval ------------------------------------------------------------------------------


async def test_the_requester_may_reject_but_not_approve_their_own_run(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for: UserFor, markers_file: Path
) -> None:
    bot = await start_bot(backend=backend)
    user = user_for(bot)
    card = await _start(local_slack, user, "guarded-write", by="U0ALICE")
    run_id = run_of(backend.open_store(), local_slack).run_id
    before = await _quiet(backend, run_id)

    await user.click(message=card, label="Approve", user_id="U0ALICE", channel_id=CHANNEL)
    notice = await _notice(local_slack, "U0ALICE", after=0, what="the self-approval refusal")
    assert "You started this run" in notice["text"] and "nothing was recorded" in notice["text"], notice["text"]
    _assert_untouched(before, _load(backend, run_id), refused="U0ALICE")
    assert live_buttons(_current(local_slack, card)) == ["Approve", "Reject", "Reply"]

    await _reject_with_modal(local_slack, user, card, by="U0ALICE", reason="changed my mind")
    done = await _done(local_slack)
    assert "rejected by U0ALICE: changed my mind" in all_text(done)
    assert _markers(markers_file) == []
    (ask,) = _load(backend, run_id).asks.values()
    assert ask.decision is not None and (ask.decision.verdict, ask.decision.user) == (Verdict.REJECT, "U0ALICE")


async def test_a_graph_may_allow_self_approval(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for: UserFor, markers_file: Path
) -> None:
    bot = await start_bot(backend=backend)
    user = user_for(bot)
    card = await _start(local_slack, user, "guarded-self", by="U0ALICE")

    await user.click(message=card, label="Approve", user_id="U0ALICE", channel_id=CHANNEL)
    done = await _done(local_slack)
    assert "writer result: wrote writer:hello" in all_text(done)
    assert _markers(markers_file) == ["writer:hello"]
    assert local_slack.ephemerals("U0ALICE") == []
    assert run_of(backend.open_store(), local_slack).status is RunStatus.COMPLETED


# -- 3. a quorum of two out of three ---------------------------------------------------------------


async def test_two_of_three_approvals_from_different_people(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for: UserFor, markers_file: Path
) -> None:
    bot = await start_bot(backend=backend)
    user = user_for(bot)
    card = await _start(local_slack, user, "guarded-quorum", by="U0DAVE")
    run_id = run_of(backend.open_store(), local_slack).run_id
    alice_before = _text(card).count("<@U0ALICE>")

    await user.click(message=card, label="Approve", user_id="U0ALICE", channel_id=CHANNEL)
    counted = await _notice(local_slack, "U0ALICE", after=0, what="Alice's approval counted")
    assert "counts" in counted["text"] and "1 of 2" in counted["text"], counted["text"]
    shown = await _card_saying(local_slack, card, "1 of 2", what="the card to show one approval")
    assert "Approve" in live_buttons(shown), "the card is still live"
    assert _text(shown).count("<@U0ALICE>") > alice_before, "the card names who approved"
    run = _load(backend, run_id)
    (ask,) = run.asks.values()
    assert run.status is RunStatus.WAITING and ask.status is AskStatus.PENDING
    assert list(ask.votes) == ["U0ALICE"] and ask.decision is None
    assert _markers(markers_file) == [] and finished_message(local_slack) is None

    await user.click(message=shown, label="Approve", user_id="U0ALICE", channel_id=CHANNEL)
    again = await _notice(local_slack, "U0ALICE", after=1, what="Alice told her second approval does not count")
    assert "already approved" in again["text"], again["text"]
    (ask,) = _load(backend, run_id).asks.values()
    assert list(ask.votes) == ["U0ALICE"] and ask.status is AskStatus.PENDING, "a second vote by her is not counted"
    assert _markers(markers_file) == []

    await user.click(message=shown, label="Approve", user_id="U0BOB", channel_id=CHANNEL)
    done = await _done(local_slack)
    assert "approvers: U0ALICE,U0BOB" in all_text(done)
    assert _markers(markers_file) == ["writer:hello | approvers: U0ALICE,U0BOB"]
    run = _load(backend, run_id)
    (ask,) = run.asks.values()
    assert run.status is RunStatus.COMPLETED and ask.status is AskStatus.CONSUMED
    decided = _current(local_slack, card)
    assert live_buttons(decided) == [] and "<@U0ALICE>" in _text(decided) and "<@U0BOB>" in _text(decided)
    assert local_slack.ephemerals("U0BOB") == []


async def test_two_approvals_at_the_same_instant_reach_the_quorum_once(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for: UserFor, markers_file: Path
) -> None:
    bot = await start_bot(backend=backend)
    user = user_for(bot)
    card = await _start(local_slack, user, "guarded-quorum", by="U0DAVE")

    await asyncio.gather(
        user.click(message=card, label="Approve", user_id="U0ALICE", channel_id=CHANNEL),
        user.click(message=card, label="Approve", user_id="U0BOB", channel_id=CHANNEL),
    )
    done = await _done(local_slack)
    await asyncio.sleep(0.5)  # a second resume, were there one, would write a second line by now
    (line,) = _markers(markers_file)
    assert line in ("writer:hello | approvers: U0ALICE,U0BOB", "writer:hello | approvers: U0BOB,U0ALICE"), line
    assert "writer result: wrote " + line in all_text(done)
    run = run_of(backend.open_store(), local_slack)
    (ask,) = run.asks.values()
    assert run.status is RunStatus.COMPLETED and ask.status is AskStatus.CONSUMED
    assert ask.decision is not None and {ask.decision.user, *ask.votes} == {"U0ALICE", "U0BOB"}
    told = local_slack.ephemerals("U0ALICE") + local_slack.ephemerals("U0BOB")
    assert len(told) <= 1 and all("counts" in t["text"] for t in told), told


# -- 4. a rejection under a quorum ---------------------------------------------------------------


async def test_one_rejection_ends_a_quorum_ask_after_an_approval(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for: UserFor, markers_file: Path
) -> None:
    bot = await start_bot(backend=backend)
    user = user_for(bot)
    card = await _start(local_slack, user, "guarded-quorum", by="U0DAVE")
    run_id = run_of(backend.open_store(), local_slack).run_id

    await user.click(message=card, label="Approve", user_id="U0ALICE", channel_id=CHANNEL)
    await _notice(local_slack, "U0ALICE", after=0, what="Alice's approval counted")
    await _reject_with_modal(local_slack, user, card, by="U0BOB", reason="too risky")
    done = await _done(local_slack)

    assert "rejected by U0BOB: too risky" in all_text(done)
    assert _markers(markers_file) == []
    run = _load(backend, run_id)
    (ask,) = run.asks.values()
    assert run.status.terminal and ask.status is AskStatus.CONSUMED
    assert ask.decision is not None and (ask.decision.verdict, ask.decision.user) == (Verdict.REJECT, "U0BOB")
    assert list(ask.votes) == ["U0ALICE"], "the overruled approval is kept"
    decided = _current(local_slack, card)
    assert live_buttons(decided) == [] and "<@U0BOB>" in _text(decided)


# -- 5. expiry, reminders and escalation, by the server's sweeper --------------------------------


async def test_an_ask_nobody_decides_is_reminded_escalated_and_expires_once(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for: UserFor, markers_file: Path
) -> None:
    # guarded-fast-expiring: remind after 1.5 s, escalate to S0LEADS after 3 s, expire after 5 s.
    bot = await start_bot(backend=backend, args=FAST_SWEEP)
    user = user_for(bot)
    card = await _start(local_slack, user, "guarded-fast-expiring", by="U0DAVE")
    run_id = run_of(backend.open_store(), local_slack).run_id

    done = await _done(local_slack, timeout=30)
    assert "rejected by None" in all_text(done), "the graph went on, with the expiry as a rejection by nobody"
    assert _markers(markers_file) == []
    expired = _current(local_slack, card)
    assert live_buttons(expired) == [] and "expired" in _text(expired).lower()

    notices = _notices(local_slack)
    reminders = [m for m in notices if "Reminder" in all_text(m)]
    escalations = [m for m in notices if "Escalated" in all_text(m)]
    assert len(reminders) == 1 and len(escalations) == 1 and len(notices) == 2, [all_text(m) for m in notices]
    assert "<@U0ALICE>" in all_text(reminders[0])
    assert "<!subteam^S0LEADS>" in all_text(escalations[0])
    assert all(m.get("thread_ts") == card["thread_ts"] for m in notices), "notices go in the run's thread"

    run = _load(backend, run_id)
    (ask,) = run.asks.values()
    assert run.status is RunStatus.COMPLETED and ask.status is AskStatus.CONSUMED
    assert ask.decision is not None and ask.decision.expired and ask.decision.user == ""
    assert ask.notices == ("remind", "escalate") and ask.notified == 2 and ask.escalated
    assert [len(_kinds(run, k)) for k in ("reminded", "escalated", "expired")] == [1, 1, 1]


# -- 6. sweepers racing ------------------------------------------------------------------------------

# ``approval-bot sweep``, run when the test says go: imports done and graphs loaded before,
# so that the sweepers start together rather than a process start apart. The store's reads
# answer ``argv[1]`` seconds late (a slow GetItem), so that both sweepers read the run
# before either writes: they really race for the reminder. A claim that loses the race
# (its save finds a newer version) is reported on stderr, for the test to see it happened.
SWEEP_ON_GO = """
import sys, time
import bot.cli, persistence.dynamodb, persistence.sqlite
from engine.store import VersionConflict
from graph_defs.registry import load_graph_modules

load_graph_modules(["tests.support.graphs"], examples=True)
slow = float(sys.argv[1])
for store in (persistence.sqlite.SqliteRunStore, persistence.dynamodb.DynamoRunStore):
    def load(self, *args, _load=store.load, **kwargs):
        run = _load(self, *args, **kwargs)
        time.sleep(slow)
        return run

    def save(self, *args, _save=store.save, **kwargs):
        try:
            return _save(self, *args, **kwargs)
        except VersionConflict:
            print("LOST THE CLAIM RACE", file=sys.stderr, flush=True)
            raise

    store.load, store.save = load, save
print("ready", flush=True)
sys.stdin.readline()
sys.exit(bot.cli.main(["sweep"]))
"""
SLOW_READ_SECONDS = 0.5


async def _race_sweepers(env: dict[str, str], logs: list[Path], *, due_at: float) -> None:
    """Start one ``approval-bot sweep`` per log, and let them all go at once after ``due_at``."""
    sweepers = []
    for log in logs:
        with log.open("wb") as sink:  # asyncio's subprocesses: the local Slack serves on this loop
            sweepers.append(
                await asyncio.create_subprocess_exec(
                    *(sys.executable, "-c", SWEEP_ON_GO, str(SLOW_READ_SECONDS)),
                    env=env,
                    cwd=REPO,
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=sink,
                )
            )
    for process in sweepers:
        assert process.stdout is not None
        ready = await asyncio.wait_for(process.stdout.readline(), timeout=60)
        assert ready == b"ready\n", [log.read_text(errors="replace")[-2000:] for log in logs]
    await asyncio.sleep(max(due_at - time.time(), 0) + 0.1)
    for process in sweepers:
        assert process.stdin is not None
        process.stdin.write(b"go\n")
    for process, log in zip(sweepers, logs, strict=True):
        await asyncio.wait_for(process.communicate(), timeout=60)
        assert process.returncode == 0, log.read_text(errors="replace")[-2000:]


@pytest.mark.parametrize(
    "slack_slow",
    [
        pytest.param(False, id="slack-prompt"),
        # The claimer's post waits out a 429 while the loser has already re-read the run:
        # the loser must leave the claimed reminder to the claimer (it is not due yet).
        pytest.param(True, id="slack-rate-limits-the-claimer"),
    ],
)
async def test_two_sweepers_at_once_post_a_due_reminder_once(
    start_bot: StartBot,
    backend: Backend,
    local_slack: LocalSlack,
    user_for: UserFor,
    markers_file: Path,
    tmp_path: Path,
    slack_slow: bool,
) -> None:
    # The server's own sweeper waits a minute: the two commands are the only sweepers.
    bot = await start_bot(backend=backend)
    user = user_for(bot)
    await _start(local_slack, user, "guarded-reminding", by="U0DAVE")  # reminds after 1 s
    run_id = run_of(backend.open_store(), local_slack).run_id
    (ask,) = (await _quiet(backend, run_id)).asks.values()
    if slack_slow:  # the first reminder posted is rate limited: its poster retries after a second
        local_slack.inject_failures(
            method="chat.postMessage", status=429, retry_after=1, when=lambda p: "Reminder" in str(p.get("text"))
        )

    logs = [tmp_path / f"sweep-{i}.log" for i in range(2)]
    env = _bot_env(slack=local_slack, backend=backend, markers=markers_file, extra={})
    await _race_sweepers(env, logs, due_at=ask.rules.remind_at[0])

    lost = [log for log in logs if "LOST THE CLAIM RACE" in log.read_text(errors="replace")]
    assert len(lost) == 1, "the two sweepers read the run together and one lost the claim"
    notices = _notices(local_slack)
    assert len(notices) == 1, [all_text(m) for m in notices]
    assert "Reminder" in all_text(notices[0]) and "<@U0ALICE>" in all_text(notices[0])
    run = _load(backend, run_id)
    (ask,) = run.asks.values()
    assert ask.notices == ("remind",) and ask.notified == 1 and ask.status is AskStatus.PENDING
    assert len(_kinds(run, "reminded")) == 1
    assert run.status is RunStatus.WAITING and _markers(markers_file) == []


# -- 7. cancel -------------------------------------------------------------------------------------


async def test_the_requester_cancels_and_the_old_card_changes_nothing(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for: UserFor, markers_file: Path
) -> None:
    bot = await start_bot(backend=backend)
    user = user_for(bot)
    card = await _start(local_slack, user, "guarded-approvers", by="U0DAVE")
    run_id = run_of(backend.open_store(), local_slack).run_id

    await user.slash_command(text=f"cancel {run_id}", user_id="U0MALLORY", channel_id=CHANNEL)
    refused = await _notice(local_slack, "U0MALLORY", after=0, what="Mallory's cancel refused")
    assert "You may not cancel" in refused["text"], refused["text"]
    assert _load(backend, run_id).status is RunStatus.WAITING

    await user.slash_command(text=f"cancel {run_id}", user_id="U0DAVE", channel_id=CHANNEL)
    told = await _notice(local_slack, "U0DAVE", after=0, what="Dave told the run is cancelled")
    assert "Cancelled run" in told["text"], told["text"]
    done = await _done(local_slack)
    assert "cancelled" in all_text(done) and "<@U0DAVE>" in all_text(done)
    closed = await _card_saying(local_slack, card, "cancelled", what="the card to say cancelled")
    assert live_buttons(closed) == []

    await user.click(message=card, label="Approve", user_id="U0ALICE", channel_id=CHANNEL, allow_stale=True)
    late = await _notice(local_slack, "U0ALICE", after=0, what="Alice told the run was cancelled")
    assert "cancelled" in late["text"] and "nothing was decided" in late["text"], late["text"]
    run = _load(backend, run_id)
    (ask,) = run.asks.values()
    assert run.status is RunStatus.CANCELLED and run.cancelled_by == "U0DAVE"
    assert ask.decision is None and ask.status is AskStatus.OBSOLETE and ask.closed is Closed.CANCELLED
    assert _markers(markers_file) == []


# -- 8. starters ---------------------------------------------------------------------------------


async def test_a_start_by_someone_not_among_the_starters_creates_nothing(
    start_bot: StartBot,
    backend: Backend,
    local_slack: LocalSlack,
    user_for: UserFor,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    issued: list[str] = []
    issue: Callable[..., str] = local_slack.new_trigger_id

    def recording(**kwargs: Any) -> str:
        issued.append(issue(**kwargs))
        return issued[-1]

    monkeypatch.setattr(local_slack, "new_trigger_id", recording)
    bot = await start_bot(backend=backend)
    user = user_for(bot)

    response = await user.slash_command(text="run guarded-starters hello", user_id="U0MALLORY", channel_id=CHANNEL)
    assert response.status == 200
    notice = await _notice(local_slack, "U0MALLORY", after=0, what="Mallory's start refused")
    assert "You may not start" in notice["text"] and "guarded-starters" in notice["text"], notice["text"]
    assert "<@U0ALICE>" in notice["text"] and "<!subteam^S0OPS>" in notice["text"], notice["text"]
    assert local_slack.messages(CHANNEL) == [], "nothing was announced"
    (trigger,) = issued
    refused_id = run_id_for(trigger)
    assert refused_id is not None and backend.open_store().load(refused_id) is None, "nothing was recorded"

    # Carol may start it through S0OPS.
    await _start(local_slack, user, "guarded-starters", by="U0CAROL")
    assert run_of(backend.open_store(), local_slack).started_by == "U0CAROL"


# -- 9. the audit trail ----------------------------------------------------------------------------


async def test_the_audit_trail_of_a_run_for_its_overseers_only(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for: UserFor, markers_file: Path
) -> None:
    bot = await start_bot(backend=backend)
    user = user_for(bot)
    card = await _start(local_slack, user, "guarded-approvers", by="U0DAVE")
    run_id = run_of(backend.open_store(), local_slack).run_id
    await user.click(message=card, label="Approve", user_id="U0MALLORY", channel_id=CHANNEL)
    await _notice(local_slack, "U0MALLORY", after=0, what="Mallory's click refused")
    await user.click(message=card, label="Approve", user_id="U0ALICE", channel_id=CHANNEL)
    await _done(local_slack)
    assert _markers(markers_file) == ["writer:hello"]

    await user.slash_command(text=f"audit {run_id}", user_id="U0DAVE", channel_id=CHANNEL)
    trail = "\n".join(
        _text(m) for m in await local_slack.wait_for(lambda: local_slack.ephemerals("U0DAVE"), what="the audit trail")
    )
    assert run_id in trail
    lines = [line for line in trail.split("\n") if " · " in line]
    started = next(i for i, line in enumerate(lines) if "started the run" in line)
    asked = next(i for i, line in enumerate(lines) if "asked" in line and "started" not in line)
    refused = next(i for i, line in enumerate(lines) if "refused a click" in line)
    decided = next(i for i, line in enumerate(lines) if "decided" in line and "<@U0ALICE>" in line)
    completed = next(i for i, line in enumerate(lines) if "completed" in line)
    assert started < asked < refused < decided < completed, lines
    assert "<@U0DAVE>" in lines[started] and "<@U0MALLORY>" in lines[refused]

    await user.slash_command(text=f"audit {run_id}", user_id="U0MALLORY", channel_id=CHANNEL)
    denied = await _notice(local_slack, "U0MALLORY", after=1, what="Mallory refused the audit trail")
    assert "You may not read the audit trail" in denied["text"], denied["text"]
    assert "started the run" not in _text(denied)
