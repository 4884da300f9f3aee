"""A deterministic, offline ``strands.models.Model``: how a graph runs without a model provider.

No model provider is reachable in tests or in the offline demo, yet the graphs must run
for real (real agents, real tools, real interrupts, real state serialization).
``ScriptedModel`` stands in for the LLM. Its reply is a pure function of the
conversation it is sent, never of hidden counters: a run resumed in a fresh process, on
a freshly built graph with a new model object, continues exactly where the old one
stopped.

Giving your graph an offline script
-----------------------------------
Build each agent's model with ``graph_defs.models.pick_model``: Bedrock in production,
your script when ``GRAPH_MODEL=offline`` (the demo sets it; so do the tests)::

    from graph_defs.models import pick_model
    from graph_defs.scripted import ScriptedModel, call, graph_task, latest_tool_result_text, say

    def offline_script() -> ScriptedModel:
        return ScriptedModel([
            lambda messages: call("refund", order_id=graph_task(messages), amount=25.0),
            lambda messages: say(latest_tool_result_text(messages)),
        ])

    agent = Agent(name="refunder", model=pick_model(offline=offline_script), tools=[refund])

A script is a sequence of steps; step *n* answers the conversation that already holds
*n* assistant messages. A step is ``say(text)`` (ends the agent's turn), ``call(tool,
**input)`` (asks for a tool; the next step sees its result), ``turn(...)`` (several at
once), or a function of the messages returning one, so a script can react to what a tool
returned or what the task said: ``graph_task`` (the run's task text),
``latest_tool_result_text``, ``latest_user_text``, ``upstream_output(messages, node)``
(what an earlier node of the graph produced). Pass ``policy=`` instead of a list to
choose every step yourself. Once a script runs out, the model says ``final_text``.

An agent whose tool asks a person is resumed with the person's answer as the tool's
result, so the step after ``call`` usually reports it, as above. The example graphs in
``graph_defs/examples/`` each carry a script of this kind.
"""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncGenerator, AsyncIterable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel
from strands.models import Model
from strands.types.content import ContentBlock, Messages, SystemContentBlock
from strands.types.streaming import StreamEvent
from strands.types.tools import ToolChoice, ToolSpec

if TYPE_CHECKING:
    from strands.agent.agent_metadata import AgentMetadata

__all__ = [
    "ScriptedModel",
    "Step",
    "StepLike",
    "ToolCall",
    "assistant_turns",
    "call",
    "graph_task",
    "latest_tool_result_text",
    "latest_user_text",
    "say",
    "turn",
    "upstream_output",
]

T = TypeVar("T", bound=BaseModel)


@dataclass(frozen=True)
class ToolCall:
    """One tool use the model asks for: the tool's name and its JSON input."""

    name: str
    input: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Step:
    """One assistant turn: optional text, then zero or more tool calls.

    A step with tool calls ends with ``stopReason="tool_use"``, one without ends the
    agent's turn (``end_turn``).
    """

    text: str | None = None
    calls: tuple[ToolCall, ...] = ()


StepLike = Step | Callable[[Messages], Step]
Policy = Callable[[Messages], Step]


def say(text: str) -> Step:
    """A turn that only says ``text`` and ends the agent's turn."""
    return Step(text=text)


def call(tool_name: str, /, **tool_input: Any) -> Step:
    """A turn that calls one tool with ``tool_input`` as its (JSON) input."""
    return Step(calls=(ToolCall(tool_name, dict(tool_input)),))


def turn(*steps: Step) -> Step:
    """Merge steps into one turn: their texts joined by a blank line, then all their calls."""
    texts = [step.text for step in steps if step.text]
    return Step(
        text="\n\n".join(texts) if texts else None,
        calls=tuple(tool_call for step in steps for tool_call in step.calls),
    )


def assistant_turns(messages: Messages) -> int:
    """How many assistant messages the conversation holds: the index of the next step."""
    return sum(1 for message in messages if message["role"] == "assistant")


def _block_texts(blocks: Sequence[ContentBlock]) -> list[str]:
    return [block["text"] for block in blocks if "text" in block]


def latest_user_text(messages: Messages) -> str:
    """The text of the latest user message that has text (tool results are not user text)."""
    for message in reversed(messages):
        if message["role"] == "user":
            texts = _block_texts(message["content"])
            if texts:
                return "\n".join(texts)
    return ""


def latest_tool_result_text(messages: Messages) -> str:
    """The latest tool result as text (JSON content is dumped), or ``""`` if there is none."""
    for message in reversed(messages):
        for block in reversed(message["content"]):
            if "toolResult" in block:
                parts: list[str] = []
                for item in block["toolResult"]["content"]:
                    if "text" in item:
                        parts.append(item["text"])
                    elif "json" in item:
                        parts.append(json.dumps(item["json"], sort_keys=True))
                return "\n".join(parts)
    return ""


def _first_user_blocks(messages: Messages) -> Sequence[ContentBlock]:
    for message in messages:
        if message["role"] == "user":
            return message["content"]
    return ()


_TASK_PREFIX = "Original Task:"


def graph_task(messages: Messages) -> str:
    """The graph's task as a node sees it.

    An entry node gets the task itself; a node after others gets ``Original Task: ...``
    followed by the upstream outputs (strands ``Graph._build_node_input``). Either way
    this returns just the task text.
    """
    texts = _block_texts(_first_user_blocks(messages))
    if not texts:
        return ""
    if texts[0].startswith(_TASK_PREFIX):
        return texts[0][len(_TASK_PREFIX) :].strip()
    return "\n".join(texts).strip()


def upstream_output(messages: Messages, node_id: str) -> str:
    """What the upstream node ``node_id`` produced, as handed to this node by the graph."""
    texts = _block_texts(_first_user_blocks(messages))
    header = f"From {node_id}:"
    out: list[str] = []
    collecting = False
    for text in texts:
        stripped = text.strip()
        if stripped.startswith("From ") and stripped.endswith(":"):
            collecting = stripped == header
            continue
        if collecting and stripped.startswith("- "):
            # "  - <agent name>: <result>"; the agent name never contains ": ".
            out.append(stripped[2:].split(": ", 1)[-1])
    return "\n".join(out)


class ScriptedModel(Model):
    """A model whose every reply is decided by a script over the conversation.

    Args:
        script: The steps, one per assistant turn (``Step`` or ``messages -> Step``).
        policy: Instead of ``script``: a function choosing each step from the messages.
        final_text: What to say once the script is exhausted, so a misbehaving script
            ends the agent's turn instead of looping.
        id_prefix: Prefix of the tool-use ids. Ids are ``<prefix>_<turn>_<name>`` (with
            ``_<k>`` appended for the k-th repeat of a tool within one turn): unique within
            a conversation and identical when the conversation is replayed, which keeps
            interrupt ids (derived from tool-use ids) stable across a resume.
    """

    def __init__(
        self,
        script: Sequence[StepLike] = (),
        *,
        policy: Policy | None = None,
        final_text: str = "Done.",
        id_prefix: str = "tooluse",
    ) -> None:
        if policy is not None and script:
            raise ValueError("give ScriptedModel either a script or a policy, not both")
        self._script = tuple(script)
        self._policy = policy
        self._config: dict[str, Any] = {
            "model_id": "scripted",
            "final_text": final_text,
            "id_prefix": id_prefix,
        }

    def update_config(self, **model_config: Any) -> None:
        """Update the configuration (``final_text``, ``id_prefix``, or anything informational)."""
        self._config.update(model_config)

    def get_config(self) -> dict[str, Any]:
        """The configuration; ``model_id`` is always ``"scripted"``."""
        return dict(self._config)

    def next_step(self, messages: Messages) -> Step:
        """The step answering ``messages``: a pure function of the conversation."""
        if self._policy is not None:
            return self._policy(messages)
        index = assistant_turns(messages)
        if index >= len(self._script):
            return say(str(self._config["final_text"]))
        step = self._script[index]
        return step if isinstance(step, Step) else step(messages)

    def _tool_use_ids(self, index: int, calls: Sequence[ToolCall]) -> list[str]:
        prefix = self._config["id_prefix"]
        seen: dict[str, int] = {}
        ids = []
        for tool_call in calls:
            repeat = seen.get(tool_call.name, 0)
            seen[tool_call.name] = repeat + 1
            suffix = f"_{repeat}" if repeat else ""
            ids.append(f"{prefix}_{index}_{tool_call.name}{suffix}")
        return ids

    def events_for(self, messages: Messages) -> list[StreamEvent]:
        """The stream events answering ``messages``, as Bedrock's ConverseStream would send them."""
        step = self.next_step(messages)
        if not step.text and not step.calls:
            step = say(str(self._config["final_text"]))
        events: list[StreamEvent] = [{"messageStart": {"role": "assistant"}}]
        index = 0
        if step.text:
            events += [
                {"contentBlockStart": {"contentBlockIndex": index, "start": {}}},
                {"contentBlockDelta": {"contentBlockIndex": index, "delta": {"text": step.text}}},
                {"contentBlockStop": {"contentBlockIndex": index}},
            ]
            index += 1
        ids = self._tool_use_ids(assistant_turns(messages), step.calls)
        for tool_use_id, tool_call in zip(ids, step.calls, strict=True):
            events += [
                {
                    "contentBlockStart": {
                        "contentBlockIndex": index,
                        "start": {"toolUse": {"toolUseId": tool_use_id, "name": tool_call.name}},
                    }
                },
                {
                    "contentBlockDelta": {
                        "contentBlockIndex": index,
                        "delta": {"toolUse": {"input": json.dumps(tool_call.input, sort_keys=True)}},
                    }
                },
                {"contentBlockStop": {"contentBlockIndex": index}},
            ]
            index += 1
        events.append({"messageStop": {"stopReason": "tool_use" if step.calls else "end_turn"}})
        input_tokens = _estimate_tokens(messages)
        output_tokens = _estimate_tokens([step.text or "", *(json.dumps(c.input) for c in step.calls)])
        events.append(
            {
                "metadata": {
                    "usage": {
                        "inputTokens": input_tokens,
                        "outputTokens": output_tokens,
                        "totalTokens": input_tokens + output_tokens,
                    },
                    # No network: the latency is reported as zero so that replies stay identical.
                    "metrics": {"latencyMs": 0},
                }
            }
        )
        return events

    async def stream(
        self,
        messages: Messages,
        tool_specs: list[ToolSpec] | None = None,
        system_prompt: str | None = None,
        *,
        tool_choice: ToolChoice | None = None,
        system_prompt_content: list[SystemContentBlock] | None = None,
        invocation_state: dict[str, Any] | None = None,
        cancel_signal: threading.Event | None = None,
        agent_metadata: AgentMetadata | None = None,
        structured_output_model: type[BaseModel] | None = None,
        **kwargs: Any,
    ) -> AsyncIterable[StreamEvent]:
        """Stream the scripted reply to ``messages``; the other arguments are ignored."""
        for event in self.events_for(messages):
            yield event

    async def structured_output(
        self, output_model: type[T], prompt: Messages, system_prompt: str | None = None, **kwargs: Any
    ) -> AsyncGenerator[dict[str, T | Any], None]:
        """Not supported: a script cannot invent an instance of an arbitrary pydantic model."""
        raise NotImplementedError(
            "ScriptedModel does not support structured_output; script a tool call instead "
            f"(requested output model: {output_model.__name__})"
        )
        yield {}  # pragma: no cover - makes this an async generator, as the base class declares


def _estimate_tokens(items: Messages | Sequence[str]) -> int:
    """A rough, deterministic token count (characters / 4) so usage metrics are plausible."""
    return (len(json.dumps(items, default=str)) + 3) // 4
