"""Edit before approve: the ``Edit`` button on a gated tool call, its modal and its submission.

Click: the modal must open inside the ack path (a ``trigger_id`` lasts 3 s) and needs
the proposed input, which is not in the button (values carry ids only), so this path
reads the run once. Asks are saved before their cards are posted, so the read always
finds the ask of a card. An ask that is no longer pending gets the usual "already
decided by …" instead of a modal.

Submit: one read and one decision, both inside the ack and within ``ACK_BUDGET``, so
the modal shows what the store recorded: a mistake in the JSON or against the tool's
input schema inline next to the input, a refusal (someone decided first), or that the
store was too slow and nothing was recorded. Only the resume is handed off, and it
reads the run from the store, never the submission, so the two cannot disagree.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncRespond
from slack_sdk.web.async_client import AsyncWebClient

from bot.handoff import Handoff, hand_on
from bot.listeners.actions import MALFORMED
from bot.listeners.edited_json import exact_float, exact_int, input_problem
from bot.listeners.forms import open_view, say
from bot.listeners.outcomes import ACK_BUDGET, decide_in_ack, tell_loser
from bot.payloads import not_text
from bot.render.cards import action_id_for, parse_action_value
from bot.render.edits import json_schema_of
from bot.render.modals import (
    EDIT_CALLBACK_ID,
    TEXT_ACTION_ID,
    TEXT_BLOCK_ID,
    TEXT_MAX_LENGTH,
    ModalTarget,
    edit_modal,
    edit_text,
    parse_modal_metadata,
)
from bot.render.mrkdwn import visible
from bot.services import Services
from bot.work import PickUp
from engine import DecideResult
from engine.records import Ask, AskStatus, Decision, Run, ToolCall, Verdict
from engine.store import StoreError
from engine.threads import in_thread

logger = logging.getLogger(__name__)

EDIT_ACTION_ID = action_id_for(Verdict.EDIT)  # "ask:edit"
MAX_ERROR_CHARS = 300  # an inline error is a line under the input, not a report
EDIT_READ_BUDGET = 1.0  # seconds to read the ask for the Edit modal; with OPEN_BUDGET, under 3 s
STORE_TOO_SLOW = "My store did not answer in time, so nothing was recorded. Submit again."


@dataclass(frozen=True, kw_only=True)
class EditSubmission:
    target: ModalTarget
    edited_input: dict[str, Any]


def check_edited_input(text: str | None, *, tool: ToolCall) -> dict[str, Any] | str:
    """The edited input as the tool will get it, or the problem to show under the text input."""
    if text is None or not text.strip():
        return "Write the tool input as a JSON object, e.g. {}."
    if len(text) > TEXT_MAX_LENGTH:
        return f"The input is too long ({len(text)} characters, at most {TEXT_MAX_LENGTH})."
    unreadable = not_text(text)
    if unreadable is not None:
        return f"This cannot be used: {unreadable}. Remove it and submit again."
    try:
        value = json.loads(text, parse_constant=_no_constant, parse_float=exact_float, parse_int=exact_int)
    except json.JSONDecodeError as error:
        return f"This is not valid JSON: {error.msg} (line {error.lineno}, column {error.colno})."
    except (ValueError, RecursionError) as error:
        return _short(f"This is not valid JSON: {error}.")
    if not isinstance(value, dict):
        return f"The input must be a JSON object ({{...}}), not {_json_kind(value)}."
    problem = input_problem(value) or _schema_problem(value, tool=tool)
    return value if problem is None else _short(problem)


def read_edit(view: dict[str, Any], run: Run | None) -> EditSubmission | str:
    """The submission of an Edit modal, given the run as stored, or the problem to show inline."""
    try:
        target = parse_modal_metadata(str(view.get("private_metadata", "")))
    except ValueError:
        return "This form is out of date; close it and click the card again."
    ask = run.asks.get(target.ask_key) if run is not None and run.run_id == target.run_id else None
    if ask is None or ask.tool is None or Verdict.EDIT not in ask.verdicts:
        return "This card can no longer be edited; close this form."
    checked = check_edited_input(_typed_text(view), tool=ask.tool)
    if isinstance(checked, str):
        return checked
    return EditSubmission(target=target, edited_input=checked)


def register(app: AsyncApp, *, services: Services, handoff: Handoff) -> None:
    async def load(run_id: str) -> Run | None:
        # The ask's tool input and schema only: never a multi-MB snapshot inside Slack's 3 s.
        return await in_thread(services.store.load, run_id, snapshot=False)

    async def open_modal(
        ack: AsyncAck, body: dict[str, Any], action: dict[str, Any], client: AsyncWebClient, respond: AsyncRespond
    ) -> None:
        await ack()
        container = body.get("container") or {}
        channel = str(container.get("channel_id") or (body.get("channel") or {}).get("id") or "")
        try:
            run_id, ask_key = parse_action_value(str(action.get("value", "")))
        except ValueError:
            await say(respond, MALFORMED)
            return
        try:  # the store's share of the trigger's 3 s; views.open needs the rest
            run = await asyncio.wait_for(load(run_id), timeout=EDIT_READ_BUDGET)
        except (TimeoutError, StoreError):
            await say(respond, STORE_TOO_SLOW.replace("Submit", "Click Edit"))
            return
        ask = run.asks.get(ask_key) if run is not None else None
        if ask is None or ask.status is not AskStatus.PENDING:
            await tell_loser(DecideResult(accepted=False, run=run, ask=ask), respond=respond)
            return
        problem = _not_editable(ask)
        if problem is not None:
            await say(respond, problem)
            return
        assert ask.tool is not None  # _not_editable checked it
        try:
            view = edit_modal(
                run_id=run_id,
                ask_key=ask_key,
                channel=channel,
                message_ts=str(container.get("message_ts") or ""),
                tool=ask.tool,
            )
        except ValueError:  # the card's location did not validate (the size was checked above)
            await say(respond, MALFORMED)
            return
        await open_view(client, respond=respond, trigger_id=body.get("trigger_id"), view=view)

    async def on_submit(ack: AsyncAck, body: dict[str, Any], view: dict[str, Any]) -> None:
        deadline = time.monotonic() + ACK_BUDGET - handoff.budget  # the resume's handoff fits in the same 3 s
        problem = await _decide_edit(services, load, body=body, view=view, deadline=deadline)
        if problem is not None:
            await ack(response_action="errors", errors={TEXT_BLOCK_ID: problem})
            return
        target = parse_modal_metadata(str(view.get("private_metadata", "")))  # read once already: it parses
        await hand_on(handoff, PickUp(run_id=target.run_id))
        await ack()

    app.action(EDIT_ACTION_ID)(open_modal)
    app.view(EDIT_CALLBACK_ID)(on_submit)


async def _decide_edit(
    services: Services,
    load: Callable[[str], Awaitable[Run | None]],
    *,
    body: dict[str, Any],
    view: dict[str, Any],
    deadline: float,
) -> str | None:
    """Check the edit against the ask as stored and decide it; None when accepted, else why not."""
    try:
        run = await asyncio.wait_for(_load_for(view, load), timeout=max(deadline - time.monotonic(), 0.1))
    except (TimeoutError, StoreError):
        return STORE_TOO_SLOW
    submission = read_edit(view, run)
    if isinstance(submission, str):
        return submission
    decision = Decision(
        verdict=Verdict.EDIT, user=body["user"]["id"], at=time.time(), edited_input=submission.edited_input
    )
    return await decide_in_ack(
        services=services, target=submission.target, decision=decision, budget=deadline - time.monotonic()
    )


def _not_editable(ask: Ask) -> str | None:
    if ask.tool is None or Verdict.EDIT not in ask.verdicts:
        return "This card has no tool input to edit; nothing was decided."
    size = len(edit_text(ask.tool.input))
    if size > TEXT_MAX_LENGTH:
        return (
            f"This tool input is too long to edit in Slack ({size} characters as JSON, at most "
            f"{TEXT_MAX_LENGTH}), and a cut copy would change it. Approve, reject or reply instead."
        )
    return None


async def _load_for(view: dict[str, Any], load: Callable[[str], Awaitable[Run | None]]) -> Run | None:
    """The run a modal is about, or None when its metadata is unreadable (nothing to read)."""
    try:
        target = parse_modal_metadata(str(view.get("private_metadata", "")))
    except ValueError:
        return None
    return await load(target.run_id)


def _typed_text(view: dict[str, Any]) -> str | None:
    """The raw text of the input; unlike ``modal_text`` it is not stripped (JSON does not care,
    and the length check must see what was sent)."""
    block = ((view.get("state") or {}).get("values") or {}).get(TEXT_BLOCK_ID)
    action = block.get(TEXT_ACTION_ID) if isinstance(block, dict) else None
    value = action.get("value") if isinstance(action, dict) else None
    return value if isinstance(value, str) else None


def _schema_problem(value: dict[str, Any], *, tool: ToolCall) -> str | None:
    schema = json_schema_of(tool)
    if schema is None:
        return None
    import jsonschema  # here, not at the top: it costs ~20 ms of every cold start's ack

    try:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        cls.check_schema(schema)
        error = jsonschema.exceptions.best_match(cls(schema).iter_errors(value))
    except Exception:
        # The schema is the graph's, not the person's: a broken one must not make the
        # tool uneditable. The JSON-object check above still holds; the tool sees the input.
        logger.warning("tool %s: its input schema could not be used; edit accepted unchecked", tool.name[:80])
        return None
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path)
    return _short(f"Does not match the tool's schema{f' at {where}' if where else ''}: {error.message}")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _json_kind(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "true/false"
    if value is None:
        return "null"
    return "a number"


def _short(text: str) -> str:
    """One line under the input; what it quotes of the input shows its hidden characters."""
    shown = visible(text)
    return shown if len(shown) <= MAX_ERROR_CHARS else shown[: MAX_ERROR_CHARS - 1] + "…"
