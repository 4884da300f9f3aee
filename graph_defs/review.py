"""``review_after``: a person checks what a tool returned before the agent may use it.

Strands 1.62 cannot interrupt from ``AfterToolCallEvent`` (the unmerged Strands pull request is the PR
that would add it), so the review is a tool wrapper with the wrapped tool's name and spec:

1. Unless this tool use (``toolUseId``) has a stored result, the wrapped tool runs and
   its result goes into ``agent.state`` (``review_after:<toolUseId>``) with an attempt
   number. Strands saves agent state with an interrupted graph node, so the result
   survives the snapshot, the store and a new process.
2. It interrupts as ``review:<tool>:<attempt>``; a new attempt is a new interrupt id,
   hence a new card. Every resume replays the stored result: the wrapped tool never
   runs again, except on Retry (attempt n+1, asked again).
3. Approve gives the agent the result exactly, Reject an error result naming who and
   why, Reply the result plus the reviewer's words. Settled, the stored result goes and
   only ``{"settled": n}`` stays, so a run of the same tool use after that (Strands
   re-running it, e.g. an ``AfterToolCallEvent`` hook setting ``retry``) is attempt
   n+1 with its own ask. Asking ``review:<tool>:1`` again would find the earlier answer
   still in the interrupt state and hand over a result nobody reviewed.

A raised exception becomes the error result Strands would have given; only its type
name and message are stored, so after a resume the result carries a
``ReplayedToolError``, not the original object. See ``docs/review-after.md``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any, cast

from strands import tool as strands_tool
from strands.interrupt import InterruptException
from strands.types.events import ToolResultEvent
from strands.types.session import decode_bytes_values, encode_bytes_values
from strands.types.tools import AgentTool, ToolContext, ToolGenerator, ToolResult, ToolSpec, ToolUse

from engine.sources import REVIEW_INTERRUPT_PREFIX
from engine.strands_internals import ToolInterruptEvent, ToolStreamEvent, tool_context_from

__all__ = ["REVIEW_STATE_PREFIX", "ReplayedToolError", "ReviewedTool", "review_after"]

REVIEW_STATE_PREFIX = "review_after:"
"""Agent-state key prefix, the toolUseId follows: a result awaiting review, or once settled
only ``{"settled": <last attempt>}``."""

RESULT_PREVIEW_CHARS = 2500
"""How much of a result the card shows: a Slack section holds 3000 characters."""

_APPROVE_WORDS = {"approve", "approved", "y", "yes", "true"}


class ReplayedToolError(Exception):
    """The exception a reviewed tool raised, as it survives a snapshot.

    The original object cannot cross a process boundary (that pull request hits the same limit
    and restores a plain ``Exception``); its type name and message can, and hooks that
    look at ``AfterToolCallEvent.exception`` can still tell which error it was.
    """

    def __init__(self, *, type_name: str, message: str) -> None:
        super().__init__(f"{type_name}: {message}")
        self.type_name = type_name
        self.message = message


@dataclass(frozen=True)
class _Attempt:
    """One run of the wrapped tool, as stored in agent state (JSON only)."""

    number: int
    result: ToolResult
    error_type: str | None = None
    error_message: str | None = None

    def to_state(self) -> dict[str, Any]:
        # Bytes (images, documents) are base64-encoded; anything else non-JSON becomes text,
        # because agent state refuses what it cannot serialize.
        result = json.loads(json.dumps(encode_bytes_values(self.result), default=str))
        error = None if self.error_type is None else {"type": self.error_type, "message": self.error_message}
        return {"attempt": self.number, "result": result, "error": error}

    @classmethod
    def from_state(cls, data: Any) -> _Attempt | None:
        if not isinstance(data, dict) or not isinstance(data.get("result"), dict):
            return None
        error = data.get("error") or {}
        return cls(
            number=int(data.get("attempt") or 1),
            result=cast(ToolResult, decode_bytes_values(data["result"])),
            error_type=error.get("type"),
            error_message=error.get("message"),
        )

    @property
    def exception(self) -> ReplayedToolError | None:
        if self.error_type is None:
            return None
        return ReplayedToolError(type_name=self.error_type, message=self.error_message or "")


def _settled_attempts(data: Any) -> int:
    """How many attempts of this tool use were run and settled already: 0 unless ``data`` is a marker."""
    if isinstance(data, dict) and isinstance(data.get("settled"), int) and not isinstance(data["settled"], bool):
        return max(int(data["settled"]), 0)
    return 0


@dataclass(frozen=True)
class _Answer:
    decision: str  # approve | reject | reply | retry
    text: str | None
    user: str | None

    @property
    def who(self) -> str:
        return self.user or "someone"  # plain text: outputs never ping (see graph_defs.answers.Answer.who)


def _read_answer(response: Any) -> _Answer:
    """Decode a response; anything unreadable rejects, so an unchecked result never slips through."""
    if isinstance(response, dict):
        text, user = response.get("text"), response.get("user")
        text = text if isinstance(text, str) else None
        user = user if isinstance(user, str) and user else None
        decision = response.get("decision")
        if decision in ("approve", "reject", "reply", "retry"):
            return _Answer(decision=str(decision), text=text, user=user)
        return _Answer(decision="reject", text=f"unrecognised decision {decision!r}", user=user)
    if response is True or (isinstance(response, str) and response.strip().lower() in _APPROVE_WORDS):
        return _Answer(decision="approve", text=None, user=None)
    return _Answer(decision="reject", text=f"unrecognised answer {response!r}", user=None)


def result_preview(result: ToolResult, *, limit: int = RESULT_PREVIEW_CHARS) -> str:
    """A result as a person reads it: text blocks joined, JSON dumped, media named, cut to ``limit``."""
    parts: list[str] = []
    for block in result.get("content") or []:
        if "text" in block:
            parts.append(block["text"])
        elif "json" in block:
            parts.append(json.dumps(block["json"], ensure_ascii=False, sort_keys=True, default=str))
        else:
            parts.extend(f"[{kind}]" for kind in block)
    text = "\n".join(parts)
    if len(text) > limit:
        text = f"{text[:limit]}… ({len(text) - limit} more characters)"
    return text


class ReviewedTool(AgentTool):
    """An ``AgentTool`` that runs ``wrapped`` once per attempt and asks a person about each result.

    Use ``review_after`` to make one. It keeps the wrapped tool's spec, so the model sees
    the same tool; only what happens around the call changes.
    """

    def __init__(self, wrapped: AgentTool, *, name: str | None = None) -> None:
        super().__init__()
        self._wrapped = wrapped
        self._name = name or wrapped.tool_name

    @property
    def wrapped(self) -> AgentTool:
        """The tool whose results are reviewed."""
        return self._wrapped

    @property
    def tool_name(self) -> str:
        return self._name

    @property
    def tool_spec(self) -> ToolSpec:
        return cast(ToolSpec, {**self._wrapped.tool_spec, "name": self._name})

    @property
    def tool_type(self) -> str:
        return self._wrapped.tool_type

    def interrupt_name(self, attempt: int) -> str:
        """``review:<tool>:<attempt>``: the engine offers Retry on this prefix, and each attempt is a new card."""
        return f"{REVIEW_INTERRUPT_PREFIX}{self._name}:{attempt}"

    async def stream(self, tool_use: ToolUse, invocation_state: dict[str, Any], **kwargs: Any) -> ToolGenerator:
        """Run (or replay) the wrapped tool, then ask; yield the settled result once answered."""
        agent = invocation_state.get("agent")
        if agent is None:  # Strands' executor always puts it there
            raise RuntimeError(f"review_after({self._name}) needs the agent in invocation_state")
        # The context Strands' executor hands tools, else the same one the @tool(context=True)
        # decorator builds: interrupt() registers on the agent's interrupt state and gets the
        # v1:tool_call:<toolUseId>:... id a decorated tool would.
        context = tool_context_from(kwargs) or ToolContext(
            tool_use=tool_use,
            agent=agent,
            invocation_state=invocation_state,
            cancel_signal=getattr(agent, "cancel_signal", None) or threading.Event(),
        )
        key = f"{REVIEW_STATE_PREFIX}{tool_use['toolUseId']}"
        stored = agent.state.get(key)
        attempt = _Attempt.from_state(stored)
        # Which attempt to run now, if any: none while a result awaits its answer; after a
        # settled review (Strands runs the same tool use again) the next number, so a new
        # interrupt id: the old one still holds the earlier answer and would pass this run.
        run_number = None if attempt is not None else _settled_attempts(stored) + 1
        while True:
            if run_number is not None:
                attempt = None
                async for event in self._run(tool_use, invocation_state, kwargs, number=run_number):
                    if isinstance(event, _Attempt):
                        attempt = event
                    else:
                        yield event
                if attempt is None:  # the wrapped tool interrupted itself: nothing to review yet
                    return
                # Stored before asking: the snapshot taken at the interrupt carries it.
                agent.state.set(key, attempt.to_state())
                run_number = None
            assert attempt is not None
            try:
                response = context.interrupt(
                    self.interrupt_name(attempt.number), reason=self._reason(tool_use, attempt)
                )
            except InterruptException as raised:
                # What the @tool decorator does; the executor registers it and stops the agent.
                yield ToolInterruptEvent(tool_use, [raised.interrupt])
                return
            answer = _read_answer(response)
            if answer.decision == "retry":
                run_number = attempt.number + 1
                continue
            # The result goes; a marker stays so a further run of this tool use is numbered on.
            agent.state.set(key, {"settled": attempt.number})
            yield self._settled(tool_use, attempt, answer)
            return

    async def _run(
        self, tool_use: ToolUse, invocation_state: dict[str, Any], kwargs: dict[str, Any], *, number: int
    ) -> AsyncGenerator[Any, None]:
        """Run the wrapped tool, passing its stream events on; the last item is the ``_Attempt``.

        Mirrors Strands' own terminal (``_run_tool``): a raised exception becomes an
        ``Error: ...`` result, a raw last value is the result, an interrupt passes through.
        """
        result: ToolResult | None = None
        error: Exception | None = None
        last_raw: Any = None
        try:
            async with aclosing(self._wrapped.stream(tool_use, invocation_state, **kwargs)) as events:
                async for event in events:
                    if isinstance(event, ToolInterruptEvent):
                        yield event
                        return
                    if isinstance(event, ToolResultEvent):
                        result, error = event.tool_result, event.exception
                        break
                    yield event if isinstance(event, ToolStreamEvent) else ToolStreamEvent(tool_use, event)
                    last_raw = event
        except InterruptException as raised:
            yield ToolInterruptEvent(tool_use, [raised.interrupt])
            return
        except Exception as raised_error:
            error = raised_error
            result = {"toolUseId": "", "status": "error", "content": [{"text": f"Error: {raised_error}"}]}
        if result is None and isinstance(last_raw, dict) and "content" in last_raw:
            result = cast(ToolResult, last_raw)
        elif result is None:
            text = f"Tool '{tool_use['name']}' did not return a result"
            result = {"toolUseId": "", "status": "error", "content": [{"text": text}]}
        result = cast(ToolResult, {**result, "toolUseId": str(tool_use["toolUseId"])})
        if error is None:
            yield _Attempt(number=number, result=result)
        else:
            yield _Attempt(number=number, result=result, error_type=type(error).__name__, error_message=str(error))

    def _reason(self, tool_use: ToolUse, attempt: _Attempt) -> dict[str, Any]:
        shown = result_preview(attempt.result)
        if attempt.error_type and attempt.error_type not in shown:
            shown = f"{attempt.error_type}: {shown}"
        return {
            "tool": self._name,
            "input": tool_use.get("input"),
            "result": shown,
            "status": attempt.result.get("status", "success"),
            "attempt": attempt.number,
        }

    def _settled(self, tool_use: ToolUse, attempt: _Attempt, answer: _Answer) -> ToolResultEvent:
        if answer.decision == "reject":
            reason = answer.text.strip() if answer.text and answer.text.strip() else "no reason given"
            text = f"Rejected by {answer.who}: {reason}"
            return ToolResultEvent(
                {"toolUseId": str(tool_use["toolUseId"]), "status": "error", "content": [{"text": text}]}
            )
        result = attempt.result
        if answer.decision == "reply" and answer.text and answer.text.strip():
            note = {"text": f"Reviewer {answer.who} says: {answer.text.strip()}"}
            result = cast(ToolResult, {**result, "content": [*result.get("content", []), note]})
        return ToolResultEvent(result, exception=attempt.exception)


def review_after(tool: AgentTool | Callable[..., Any], *, name: str | None = None) -> AgentTool:
    """Wrap ``tool`` so that a person reviews each result before the agent gets it.

    Args:
        tool: An ``@tool`` function, any other ``AgentTool``, or a plain function (made a
            tool with ``strands.tool``). Sync, async and streaming tools all work: the
            wrapped tool runs through its own ``stream``.
        name: The tool's name as the model sees it; default the wrapped tool's own name.

    Returns:
        A tool with the same spec (description, input schema) as ``tool``.
    """
    wrapped = tool if isinstance(tool, AgentTool) else strands_tool(tool)
    return ReviewedTool(wrapped, name=name)
