"""The interrupt card: one Slack message per ask, in three states.

``ask_card`` has buttons, ``decided_card`` replaces it once a person decided (who, what,
when; no buttons, so nobody clicks a stale card), and ``obsolete_card`` replaces it when
the run ended first. All three share the same body so that the message does not jump
around when it is updated.

A live card also states the ask's terms (``engine.policy.AskRules``): who may decide, how
many approvals it needs and who gave them so far, when it expires, and whether it was
escalated. The card is updated when these change (``Ask.view``).

Button values carry only ids (``{"r": run_id, "a": ask_key}``): the reason may be large
or secret, and a value coming back from Slack is input to validate, not to trust.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    ContextBlock,
    HeaderBlock,
    MarkdownTextObject,
    PlainTextObject,
    SectionBlock,
)

from bot.render.edits import edit_diff_blocks, tool_blocks
from bot.render.mrkdwn import (
    HEADER_TEXT_LIMIT,
    build,
    code_block,
    cut,
    cut_plain,
    escape,
    fit,
    inline_code,
    mention,
    quote,
    short,
    slack_date,
    to_json,
)
from bot.render.mrkdwn import (
    Rendered as Rendered,  # re-exported: callers type their senders with it
)
from bot.render.previews import has_table, preview_blocks
from bot.render.questions import QUESTION_LABELS, QUESTION_NEEDS, QUESTION_OUTCOMES, QUESTION_STYLES
from bot.render.titles import card_title, hitl_why, mention_id, mention_ids, still_needed, who_may_decide
from bot.render.values import value_blocks
from engine.policy import APPROVING
from engine.records import Ask, Closed, Run, RunStatus, Verdict
from engine.settle import EDIT_MOVED_KIND
from engine.sources import HITL_INTERRUPT_NAME, is_question

DEFAULT_VERDICTS: tuple[Verdict, ...] = (Verdict.APPROVE, Verdict.REJECT, Verdict.REPLY)
VERDICT_LABELS: dict[Verdict, str] = {
    Verdict.APPROVE: "Approve",
    Verdict.REJECT: "Reject",
    Verdict.REPLY: "Reply",
    Verdict.TRUST: "Trust",
    Verdict.RETRY: "Retry",
    Verdict.EDIT: "Edit",
}
ACTION_ID_PREFIX = "ask:"
ID_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}\Z")
MAX_ACTION_VALUE = 200

_STYLES = {Verdict.APPROVE: "primary", Verdict.REJECT: "danger"}
# A "may have acted" ask (``Ask.retry_of``, ``engine.takeover``): the same question, asked
# again because its approval reached a step that stopped before it was saved.
MAY_HAVE_ACTED_LABELS = {Verdict.RETRY: "Retry", Verdict.APPROVE: "Retry", Verdict.REJECT: "Skip"}  # Approve: a vote
MAY_HAVE_ACTED_WARNING = (
    ":warning: *This was approved, but the step running it stopped before it was saved: "
    "the tool may have acted.* Check, then *Retry* (it runs again) or *Skip* (it is not run again)."
)
_MAY_HAVE_ACTED_OUTCOMES = {Verdict.RETRY: "🔁 Retried", Verdict.APPROVE: "🔁 Retried", Verdict.REJECT: "⏭️ Skipped"}
_OUTCOMES = {
    Verdict.APPROVE: "✅ Approved",
    Verdict.REJECT: "❌ Rejected",
    Verdict.REPLY: "💬 Replied",
    Verdict.TRUST: "🔒 Trusted",
    Verdict.RETRY: "🔁 Retry requested",
    Verdict.EDIT: "✏️ Approved with edits",
}
# Per-part budgets keep a whole card below mrkdwn.MESSAGE_TEXT_BUDGET (the reason's is values.REASON_BUDGET).
_CONTEXT_LIMIT = 500
_TERMS_LIMIT = 1500  # who may decide (at most titles.MAX_NAMED mentions), approvals, expiry
_DECISION_TEXT_LIMIT = 1200


def validate_id(value: object, *, what: str) -> str:
    """Return ``value`` if it is a well-formed run id or ask key, else raise ValueError."""
    if not isinstance(value, str):
        raise ValueError(f"{what} must be a string, got {type(value).__name__}")
    if not ID_PATTERN.match(value):
        raise ValueError(f"{what} must match {ID_PATTERN.pattern}, got {value[:80]!r}")
    return value


def action_id_for(verdict: Verdict) -> str:
    """The button's action_id; the listener routes on it."""
    return f"{ACTION_ID_PREFIX}{verdict.value}"


def verdict_from_action_id(action_id: str) -> Verdict:
    """Inverse of :func:`action_id_for`, raising ValueError on anything else."""
    if not action_id.startswith(ACTION_ID_PREFIX):
        raise ValueError(f"not an ask action: {action_id[:80]!r}")
    try:
        return Verdict(action_id[len(ACTION_ID_PREFIX) :])
    except ValueError:
        raise ValueError(f"unknown verdict in action id {action_id[:80]!r}") from None


def encode_action_value(*, run_id: str, ask_key: str) -> str:
    """The button value: compact JSON of the two ids, validated so it round-trips."""
    payload = {"r": validate_id(run_id, what="run id"), "a": validate_id(ask_key, what="ask key")}
    return json.dumps(payload, separators=(",", ":"))


def parse_action_value(value: str) -> tuple[str, str]:
    """Read ``(run_id, ask_key)`` back from a button value, strictly."""
    data = load_ids_json(value, keys={"r", "a"}, limit=MAX_ACTION_VALUE, what="action value")
    return validate_id(data["r"], what="run id"), validate_id(data["a"], what="ask key")


def ask_card(
    *,
    run: Run,
    ask: Ask,
    verdicts: Sequence[Verdict] | None = None,
    kind_label: str | None = None,
) -> Rendered:
    """The card that asks a person to decide, with one button per allowed verdict.

    ``verdicts`` defaults to the ones the ask was raised with (``ask.verdicts``).
    """
    value = encode_action_value(run_id=run.run_id, ask_key=ask.key)
    question = is_question(ask.name)  # Answer and Decline (bot.render.questions)
    labels = MAY_HAVE_ACTED_LABELS if ask.retry_of is not None else QUESTION_LABELS if question else VERDICT_LABELS
    styles = QUESTION_STYLES if question else _STYLES
    buttons = [
        ButtonElement(
            text=PlainTextObject(text=labels.get(v, VERDICT_LABELS[v]), emoji=False),
            action_id=action_id_for(v),
            value=value,
            style=styles.get(v),
        )
        for v in dict.fromkeys(
            ask.verdicts if verdicts is None else verdicts
        )  # a repeated action_id would make Slack reject the message
    ]
    if not buttons:
        raise ValueError("an ask card needs at least one verdict")

    def blocks(tables: bool) -> list[Block]:
        made = [
            *_body(run=run, ask=ask, kind_label=kind_label, tables=tables),
            terms_block(ask),
            ActionsBlock(block_id=card_block_id(ask.key), elements=buttons),
        ]
        if ask.retry_of is not None:
            made.insert(-2, SectionBlock(text=MarkdownTextObject(text=MAY_HAVE_ACTED_WARNING)))
        return made

    title = short(card_title(ask), HEADER_TEXT_LIMIT)
    needs = "may have acted: check, then Retry or Skip" if ask.retry_of is not None else "needs a decision"
    needs = QUESTION_NEEDS if question else needs
    return _built(ask, text=f"{title}: {mention(run.started_by)}'s run of *{short(run.graph)}* {needs}", blocks=blocks)


def _built(ask: Ask, *, text: str, blocks: Callable[[bool], list[Block]]) -> Rendered:
    """The message, and when its preview is a table, the same without it (``Rendered.plain_blocks``)."""
    rendered = build(text=text, blocks=blocks(True))
    if not has_table(ask.preview):
        return rendered
    return replace(rendered, plain_blocks=build(text=text, blocks=blocks(False)).blocks)


def decided_card(*, run: Run, ask: Ask, kind_label: str | None = None) -> Rendered:
    """The card after a decision: who decided what and when, and no buttons."""
    decision = ask.decision
    outcome = decided_outcome(ask)

    def blocks(tables: bool) -> list[Block]:
        made = _body(run=run, ask=ask, kind_label=kind_label, tables=tables)
        made.append(ContextBlock(elements=[MarkdownTextObject(text=fit(outcome, _TERMS_LIMIT, total=len(outcome)))]))
        if decision is not None and decision.text:
            made.append(SectionBlock(text=MarkdownTextObject(text=quote(decision.text, _DECISION_TEXT_LIMIT))))
        if decision is not None and decision.edited_input is not None and ask.tool is not None:
            made += edit_diff_blocks(tool=ask.tool, edited=decision.edited_input)
        elif decision is not None and decision.edited_input is not None:  # no proposed input to compare with
            edited = "*Edited input:*\n" + code_block(to_json(decision.edited_input), _DECISION_TEXT_LIMIT)
            made.append(SectionBlock(text=MarkdownTextObject(text=edited)))
        return made

    return _built(ask, text=f"{short(card_title(ask), HEADER_TEXT_LIMIT)}: {outcome}", blocks=blocks)


def obsolete_card(*, run: Run, ask: Ask, kind_label: str | None = None) -> Rendered:
    """The card of an ask the run no longer waits for; buttons removed so nobody tries."""
    if ask.closed is Closed.CHANGED and ask.preview is not None:
        note = (
            "What this card showed changed before the step ran, so no answer to it is used; a new card below asks again"
        )
    elif ask.closed is Closed.CHANGED and any(e.kind == EDIT_MOVED_KIND and e.ask == ask.key for e in run.audit):
        note = (
            "The edited call falls under another rule than this card's, so the edit was not sent; "
            "a new card below asks about the call as proposed"
        )
    elif ask.closed is Closed.CHANGED:
        note = "The question changed before this card was answered; a new card below asks it again"
    elif ask.closed is Closed.CANCELLED or run.status is RunStatus.CANCELLED:
        by = f" by {mention(run.cancelled_by)}" if run.cancelled_by else ""
        note = f"The run was cancelled{by}; this card can no longer be answered"
    elif ask.closed is Closed.FAILED or run.status is RunStatus.FAILED:
        note = "The run failed; this card can no longer be answered"
    elif run.status.terminal:
        note = f"The run ended before this was answered (status: {run.status.value})"
    else:
        note = "The run went on without needing this answer"

    def blocks(tables: bool) -> list[Block]:
        return [
            *_body(run=run, ask=ask, kind_label=kind_label, tables=tables),
            ContextBlock(elements=[MarkdownTextObject(text=note)]),
        ]

    return _built(ask, text=f"{short(card_title(ask), HEADER_TEXT_LIMIT)}: {note}", blocks=blocks)


def terms_block(ask: Ask) -> ContextBlock:
    """A live card's terms: who may decide, the approvals so far, expiry, escalation."""
    rules = ask.rules
    parts = [f"*Who may {'answer' if is_question(ask.name) else 'decide'}:* {who_may_decide(ask)}"]
    if rules.label is not None:  # the policy rule that chose these terms
        parts.insert(0, f"*Rule:* {escape(rules.label)}")
    if rules.quorum > 1:
        parts.append(approvals_so_far(ask))
    if needed := still_needed(ask):  # the two-person rule: which teams have not approved yet
        parts.append(needed)
    if rules.expires_at is not None:
        parts.append(f"expires {slack_date(rules.expires_at)}")
    if ask.escalated and rules.escalate_to:
        parts.append(f"escalated to {mention_ids(rules.escalate_to, joiner='and')}")
    line = " · ".join(parts)
    return ContextBlock(elements=[MarkdownTextObject(text=fit(line, _TERMS_LIMIT, total=len(line)))])


def approvals_so_far(ask: Ask) -> str:
    """``Approvals: 1 of 2 — <@U1>``: the approvals a quorum ask gathered, in order."""
    voters = ask.voters()
    shown = f"Approvals: {len(voters)} of {ask.rules.quorum}" + (f" — {_people(voters)}" if voters else "")
    if ask.filled:  # the two-person rule: whose approval counted for which team
        shown += " (" + ", ".join(f"{mention_id(slot)}: {mention(u)}" for slot, u in ask.filled.items()) + ")"
    return shown


def decided_outcome(ask: Ask) -> str:
    """Who decided what and when. An expiry names nobody (the bot rejected the ask; the
    decision's text says why); an approval under a quorum names every approver."""
    decision = ask.decision
    if decision is None:
        return "Decided"
    when = slack_date(decision.at)
    if decision.expired:
        return f"⌛ Expired: nobody decided in time · {when}"
    if decision.policy is not None:
        return f"{_OUTCOMES[decision.verdict]} by the rule {escape(decision.policy)} · {when}"
    if decision.verdict.value in APPROVING and (ask.votes or ask.rules.quorum > 1):
        approvers = list(dict.fromkeys([*ask.voters(), decision.user]))
        # More approvals than the quorum (all_of waited for a team): the count says so, no "3 of 2".
        total = max(len(approvers), ask.rules.quorum)
        count = f" · {len(approvers)} of {total} approvals" if ask.rules.quorum > 1 else ""
        if len(approvers) > ask.rules.quorum and ask.rules.all_of:
            count = f" · {len(approvers)} approvals, one from each of {len(ask.rules.all_of)} teams"
        return f"{_OUTCOMES[decision.verdict]} by {_people(approvers, joiner='and')} · {when}{count}"
    said = _MAY_HAVE_ACTED_OUTCOMES if ask.retry_of is not None else _OUTCOMES
    said = QUESTION_OUTCOMES if is_question(ask.name) else said
    outcome = f"{said.get(decision.verdict, _OUTCOMES[decision.verdict])} by {mention(decision.user)} · {when}"
    if ask.votes:  # a rejection or a reply after some approvals: say whose were overruled
        outcome += f" · after {len(ask.votes)} of {ask.rules.quorum} approvals ({_people(ask.voters(), joiner='and')})"
    return outcome


def _people(users: Sequence[str], *, joiner: str = "") -> str:
    """People who acted (Slack user ids from clicks), as mentions: at most ten, the rest counted."""
    named = [mention(u) for u in users[:10]] + ([f"{len(users) - 10} more"] if len(users) > 10 else [])
    if not joiner or len(named) < 2:
        return ", ".join(named)
    return f"{', '.join(named[:-1])} {joiner} {named[-1]}"


def card_block_id(ask_key: str) -> str:
    """The actions block's id; stable per ask so a listener can tell cards apart."""
    return f"ask:{ask_key}"


def reason_blocks(reason: Any) -> list[Block]:
    """The reason, readable: text as text, a flat dict as fields, anything nested as JSON.

    Reasons are what the graph says, so they may mention people (``<@U…>``).
    """
    return value_blocks(reason)


def _body(*, run: Run, ask: Ask, kind_label: str | None, tables: bool = True) -> list[Block]:
    body = _question(run=run, ask=ask, kind_label=kind_label)
    # What will happen goes after what is asked, before who asked (the context line, last).
    return [*body[:-1], *preview_blocks(ask.preview, tables=tables), body[-1]]


def _question(*, run: Run, ask: Ask, kind_label: str | None) -> list[Block]:
    # Every variant of a card keeps ``card:<key>`` on its header, so the message stays
    # recognisable as that ask's card after its buttons are gone.
    header = HeaderBlock(
        block_id=f"card:{ask.key}",
        text=PlainTextObject(text=cut_plain(card_title(ask), HEADER_TEXT_LIMIT)),
    )
    parts = [f"*{escape(kind_label)}*"] if kind_label else []
    parts.append(f"graph *{short(run.graph)}*")
    if ask.node_id:
        parts.append(f"node {inline_code(ask.node_id)}")
    parts += [f"started by {mention(run.started_by)}", f"run {inline_code(run.run_id)}"]
    line = " · ".join(parts)
    context = ContextBlock(elements=[MarkdownTextObject(text=fit(line, _CONTEXT_LIMIT, total=len(line)))])
    if ask.tool is None:
        return [header, *reason_blocks(ask.reason), context]
    if ask.name == HITL_INTERRUPT_NAME:
        # HumanInTheLoop's reason is its own prompt restating the call ('Approve "x"?\n
        # Input: {...}'): the title names the tool and the tool section shows the input.
        # Only a classifier's reason for asking ('Approve "x" — why?') is news.
        why = hitl_why(ask.reason)
        said = [SectionBlock(text=MarkdownTextObject(text=f"*Why:* {cut(why, 1000)}"))] if why else []
        return [header, *said, *tool_blocks(ask.tool), context]
    shown = ask.reason if isinstance(ask.reason, dict) else {}
    return [header, *reason_blocks(ask.reason), *tool_blocks(ask.tool, shown=shown), context]


def load_ids_json(value: object, *, keys: set[str], limit: int, what: str) -> dict[str, Any]:
    """Parse a small JSON object of ids coming back from Slack; shared with the modals."""
    if not isinstance(value, str):
        raise ValueError(f"{what} must be a string, got {type(value).__name__}")
    if len(value) > limit:
        raise ValueError(f"{what} is too long ({len(value)} > {limit} chars)")
    try:
        data = json.loads(value)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{what} is not JSON: {exc.msg}") from None
    except RecursionError:
        raise ValueError(f"{what} is nested too deeply") from None
    if not isinstance(data, dict):
        raise ValueError(f"{what} must be a JSON object, got {type(data).__name__}")
    if set(data) != keys:
        raise ValueError(f"{what} must have exactly the keys {sorted(keys)}, got {sorted(data)[:10]}")
    return data
