"""Every renderer, fed hostile text everywhere people and graphs put text, pings only whom
the bot means to name and shows every hidden character.

The hostile text carries a user and a user-group mention, ``<!here>``, ``<!channel>``,
``<!everyone>``, a channel, a link whose label reads as another URL, a right-to-left
override and a zero-width space. It goes into the task, the graph and node names, the
reason (as text, as fields, as a log, as a batch of calls), the tool input and its edit,
the decision texts, the output, the error, the audit trail and the Home tab note. The only
live tokens allowed are the requester, the decider, the approvers and escalation group
of the policy (all ids the bot checked) and the bot's own links to cards. Live means where
Slack parses markup (``localslack.mentions``): ``plain_text`` (headers, labels, a modal's
pre-filled input) is shown as it is, so it only has to show its hidden characters.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from bot.progress import output_messages
from bot.render import ask_card, decided_card, obsolete_card, run_completed, run_failed, run_started
from bot.render.audit import audit_trail
from bot.render.home import home_view, pending_list
from bot.render.listings import run_list, run_status
from bot.render.messages import ask_notice, run_cancelled, run_rejected
from bot.render.modals import edit_modal, reply_modal
from bot.render.mrkdwn import Rendered
from bot.render.progress import plan_chunks, status_message
from bot.render.usage import Mistake, mistake_text, unknown_graph
from engine.audit import AuditEvent
from engine.policy import AskRules
from engine.progress import NodeProgress, NodeState
from engine.records import Ask, AskStatus, Closed, Decision, MessageRef, Run, RunStatus, ToolCall, Verdict
from localslack.mentions import message_tokens

H = "x <@U0VICTIM> <!subteam^S0VICTIM|@here> <!here> <!channel> <!everyone> <#C0VICTIM>"
H += " <https://evil.example/steal|https://good.example/> pay\u202eACME\u200b &amp;"
LOG = "\n".join(f"2026-01-01T00:00:0{i} ERROR {H}" for i in range(4))
HIDDEN = ("\u202e", "\u200b")
LINK = "https://local.slack.com/archives/C0E2E/p1"
ALLOWED = {"<@U0ALICE>", "<@U0BOB>", "<@U0APPROVER>", "<!subteam^S0OPS>", "<!subteam^S0LEADS>"}
NOW = 1_800_000_000.0


def _ask(key: str, *, status: AskStatus = AskStatus.PENDING, decision: Decision | None = None, **more: Any) -> Ask:
    rules = AskRules(approvers=("U0APPROVER", "S0OPS"), expires_at=NOW + 60, escalate_to=("S0LEADS",))
    fields: dict[str, Any] = {
        "key": key,
        "interrupt_id": f"v1:before_tool_call:{key}",
        "name": f"approve_{H}",
        "reason": {"text": H, "log": LOG, "calls": [{"tool": H, "input": {H: H}}], H: [H, 1]},
        "node_id": H,
        "status": status,
        "created_at": NOW,
        "decision": decision,
        "tool": ToolCall(name=H, input={"text": H, H: {"nested": [H]}}),
        "rules": rules,
        "notices": ("remind", "escalate"),
        "card": MessageRef(channel="C0E2E", ts="1.000001"),
    }
    return Ask(**(fields | more))


def _decision(verdict: Verdict) -> Decision:
    edited = {"text": H + " edited", "more": H} if verdict is Verdict.EDIT else None
    return Decision(verdict=verdict, user="U0BOB", at=NOW, text=H, edited_input=edited)


def _run(**changes: Any) -> Run:
    asks = {
        "a1": _ask("a1"),
        "a2": _ask("a2", status=AskStatus.CONSUMED, decision=_decision(Verdict.EDIT), verdicts=(*Verdict,)),
        "a3": _ask("a3", status=AskStatus.CONSUMED, decision=_decision(Verdict.REJECT)),
        "a4": _ask("a4", status=AskStatus.CONSUMED, decision=_decision(Verdict.REPLY)),
        "a5": _ask("a5", status=AskStatus.OBSOLETE, closed=Closed.MOVED_ON),
    }
    audit = tuple(AuditEvent(at=NOW + i, kind=kind, by="U0BOB", ask="a1", text=H) for i, kind in enumerate("abc"))
    base = Run(
        run_id="abcdefghijklmnop",
        graph=H,
        task=H,
        started_by="U0ALICE",
        status=RunStatus.WAITING,
        version=1,
        created_at=NOW,
        updated_at=NOW,
        asks=asks,
        output=f"{H}\n{LOG}\n```{H}```",
        error=f"node {H} failed: {H}",
        cancelled_by="U0BOB",
        audit=audit,
    )
    return base.evolve(**changes)


def _renderings() -> Iterator[tuple[str, Any]]:
    run = _run()
    asks = list(run.asks.values())
    nodes = [NodeProgress(node_id=H, state=state, runs=1) for state in NodeState]
    for ask in asks:
        yield f"card {ask.key}", ask_card(run=run, ask=ask, kind_label=H)
        yield f"decided {ask.key}", decided_card(run=run, ask=ask, kind_label=H)
        yield f"obsolete {ask.key}", obsolete_card(run=run, ask=ask, kind_label=H)
        for index in range(len(ask.notices)):
            yield f"notice {ask.key} {index}", ask_notice(run=run, ask=ask, index=index)
    yield "started", run_started(run=run)
    yield "completed", run_completed(run=run.evolve(status=RunStatus.COMPLETED))
    yield "failed", run_failed(run=run.evolve(status=RunStatus.FAILED))
    yield "rejected", run_rejected(run=run.evolve(status=RunStatus.REJECTED))
    yield "cancelled", run_cancelled(run=run.evolve(status=RunStatus.CANCELLED))
    for verdict in (Verdict.REPLY, Verdict.REJECT):
        yield (
            f"modal {verdict}",
            reply_modal(
                run_id=run.run_id, ask_key="a1", verdict=verdict, channel="C0E2E", message_ts="1.000001", title_hint=H
            ),
        )
    tool = ToolCall(name=H, input={"text": H}, input_schema={"properties": {H: {"type": H}}, "required": [H]})
    yield "edit modal", edit_modal(run_id=run.run_id, ask_key="a1", channel="C0E2E", message_ts="1.1", tool=tool)
    waiting = [(run, a) for a in asks]
    runs = [run, run.evolve(status=RunStatus.COMPLETED)]
    yield "home", home_view(waiting=waiting, runs=runs, link=lambda run, ask: LINK, note=H)
    yield "pending", pending_list(waiting=waiting, link=lambda run, ask: LINK)
    for status in RunStatus:
        yield f"status {status}", run_status(run=run.evolve(status=status), command="/graph")
    yield "runs", run_list(runs=[run.evolve(status=s) for s in RunStatus], command="/graph")
    for index, message in enumerate(audit_trail(run=run)):
        yield f"audit {index}", message
    for status in RunStatus:
        yield f"progress {status}", status_message(run=run, nodes=nodes, status=status, link=lambda ask: LINK)
    yield "plan", {"chunks": plan_chunks(run=run, nodes=nodes)}
    for index, message in enumerate(output_messages(H, f"{H}\n{LOG}\n" * 50)):
        yield f"output {index}", message
    for kind in ("unknown", "no_graph", "no_task", "not_a_run_id"):
        mistake = Mistake(kind=kind, subcommand="run" if kind.startswith("no_") else "status", typed=H, graph=H, rest=H)
        yield f"mistake {kind}", {"text": mistake_text(mistake, command="/graph", graphs=[H, H + "2"])}
    yield "unknown graph", {"text": unknown_graph(name=H, task=H, graphs=[H + "x"], command="/graph")}
    yield "unknown graph, none", {"text": unknown_graph(name=H, task=H, graphs=["deploy"], command="/graph")}


def _payload(rendered: Any) -> Any:
    return {"text": rendered.text, "blocks": rendered.blocks} if isinstance(rendered, Rendered) else rendered


def _strings(node: Any) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for value in node.values():
            yield from _strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from _strings(value)


RENDERINGS = list(_renderings())


@pytest.mark.parametrize(("what", "rendered"), RENDERINGS, ids=[w for w, _ in RENDERINGS])
def test_only_the_bots_own_mentions_and_links_are_live(what: str, rendered: Any) -> None:
    payload = _payload(rendered)
    live = [t for t in message_tokens(payload) if t not in ALLOWED and not t.startswith(f"<{LINK}|")]
    assert live == [], f"{what}: {live}"


@pytest.mark.parametrize(("what", "rendered"), RENDERINGS, ids=[w for w, _ in RENDERINGS])
def test_hidden_characters_never_pass_raw(what: str, rendered: Any) -> None:
    payload = _payload(rendered)
    raw = [s for s in _strings(payload) if any(c in s for c in HIDDEN)]
    assert raw == [], f"{what}: {raw[:1]}"


def test_the_walk_covers_what_people_and_graphs_say() -> None:
    everything = json.dumps([_payload(r) for _, r in RENDERINGS], ensure_ascii=False)
    assert "&lt;@U0VICTIM&gt;" in everything and "⟨U+202E⟩" in everything and "\\\\u202e" in everything
    assert len(RENDERINGS) > 40
