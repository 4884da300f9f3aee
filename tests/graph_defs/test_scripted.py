"""ScriptedModel: stream event shape, determinism, tool calls driven by a real Agent; pick_model."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel
from strands import Agent, tool
from strands.models.bedrock import BedrockModel
from strands.types.content import Messages

from graph_defs.models import DEFAULT_BEDROCK_MODEL_ID, pick_model
from graph_defs.scripted import (
    ScriptedModel,
    Step,
    StepLike,
    call,
    graph_task,
    latest_tool_result_text,
    latest_user_text,
    say,
    turn,
    upstream_output,
)

USER: Messages = [{"role": "user", "content": [{"text": "hello"}]}]


async def collect(model: ScriptedModel, messages: Messages) -> list[Any]:
    return [event async for event in model.stream(messages, None, None)]


async def test_say_emits_a_complete_text_message() -> None:
    events = await collect(ScriptedModel([say("Hi there")]), USER)

    assert events[:5] == [
        {"messageStart": {"role": "assistant"}},
        {"contentBlockStart": {"contentBlockIndex": 0, "start": {}}},
        {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": "Hi there"}}},
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {"messageStop": {"stopReason": "end_turn"}},
    ]
    metadata = events[5]["metadata"]
    usage = metadata["usage"]
    assert usage["inputTokens"] > 0 and usage["outputTokens"] > 0
    assert usage["totalTokens"] == usage["inputTokens"] + usage["outputTokens"]
    assert metadata["metrics"] == {"latencyMs": 0}
    assert len(events) == 6


async def test_text_and_several_calls_in_one_turn() -> None:
    step = turn(say("Checking both."), call("lookup", key="a"), call("lookup", key="b"), call("other"))
    events = await collect(ScriptedModel([step]), USER)

    starts = [e["contentBlockStart"] for e in events if "contentBlockStart" in e]
    assert [s["contentBlockIndex"] for s in starts] == [0, 1, 2, 3]
    assert starts[0]["start"] == {}
    tool_starts = [s["start"]["toolUse"] for s in starts[1:]]
    assert tool_starts == [
        {"toolUseId": "tooluse_0_lookup", "name": "lookup"},
        {"toolUseId": "tooluse_0_lookup_1", "name": "lookup"},
        {"toolUseId": "tooluse_0_other", "name": "other"},
    ]
    inputs = [
        json.loads(e["contentBlockDelta"]["delta"]["toolUse"]["input"])
        for e in events
        if "contentBlockDelta" in e and "toolUse" in e["contentBlockDelta"]["delta"]
    ]
    assert inputs == [{"key": "a"}, {"key": "b"}, {}]
    assert {"messageStop": {"stopReason": "tool_use"}} in events


async def test_reply_is_a_pure_function_of_the_conversation() -> None:
    script: list[StepLike] = [call("lookup", key="x"), lambda m: say(f"got {latest_tool_result_text(m)}")]
    later: Messages = [
        *USER,
        {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t", "name": "lookup", "input": {}}}]},
        {
            "role": "user",
            "content": [{"toolResult": {"toolUseId": "t", "status": "success", "content": [{"text": "42"}]}}],
        },
    ]
    first, second = ScriptedModel(script), ScriptedModel(script)

    assert await collect(first, later) == await collect(second, later)
    assert await collect(first, USER) == await collect(second, USER)
    # Asking again (a retry, a resume in another process) gives the same answer again.
    assert await collect(first, later) == await collect(first, later)
    texts = [e["contentBlockDelta"]["delta"]["text"] for e in await collect(first, later) if "contentBlockDelta" in e]
    assert texts == ["got 42"]
    # Step 1 of the script uses turn index 1 in its tool-use ids.
    ids_model = ScriptedModel([say("x"), call("lookup")])
    starts = [e for e in await collect(ids_model, later) if "contentBlockStart" in e]
    assert starts[0]["contentBlockStart"]["start"]["toolUse"]["toolUseId"] == "tooluse_1_lookup"


async def test_exhausted_script_ends_the_turn_and_policy_chooses_freely() -> None:
    events = await collect(ScriptedModel([], final_text="All done"), USER)
    assert {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": "All done"}}} in events

    model = ScriptedModel(policy=lambda m: say(latest_user_text(m).upper()), id_prefix="p")
    events = await collect(model, USER)
    assert {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": "HELLO"}}} in events

    with pytest.raises(ValueError, match="either a script or a policy"):
        ScriptedModel([say("x")], policy=lambda m: say("y"))


async def test_structured_output_is_refused_clearly() -> None:
    class Answer(BaseModel):
        value: int

    with pytest.raises(NotImplementedError, match=r"structured_output.*Answer"):
        async for _ in ScriptedModel([]).structured_output(Answer, USER):
            pass


def test_config() -> None:
    model = ScriptedModel([], id_prefix="node")
    assert model.get_config()["model_id"] == "scripted"
    model.update_config(final_text="bye")
    assert model.get_config()["final_text"] == "bye"


def test_an_agent_follows_the_script_through_tool_calls() -> None:
    seen: list[tuple[int, int]] = []

    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers.

        Args:
            a: first
            b: second
        """
        seen.append((a, b))
        return a + b

    model = ScriptedModel(
        [
            call("add", a=1, b=2),
            lambda m: call("add", a=int(latest_tool_result_text(m)), b=10),
            lambda m: say(f"The answer is {latest_tool_result_text(m)}."),
        ]
    )
    agent = Agent(model=model, tools=[add], callback_handler=None)

    result = agent("add things")

    assert str(result).strip() == "The answer is 13."
    assert result.stop_reason == "end_turn"
    assert seen == [(1, 2), (3, 10)]
    tool_use_ids = [
        block["toolUse"]["toolUseId"]
        for message in agent.messages
        for block in message["content"]
        if "toolUse" in block
    ]
    assert tool_use_ids == ["tooluse_0_add", "tooluse_1_add"]
    assert result.metrics.accumulated_usage["totalTokens"] > 0


def test_conversation_helpers() -> None:
    messages: Messages = [
        {
            "role": "user",
            "content": [
                {"text": "Original Task: ship billing 1.2.3"},
                {"text": "\nInputs from previous nodes:"},
                {"text": "\nFrom planner:"},
                {"text": "  - Agent: Plan: ship it: carefully\n"},
                {"text": "\nFrom checker:"},
                {"text": "  - Agent: all good\n"},
            ],
        },
        {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t", "name": "x", "input": {}}}]},
        {
            "role": "user",
            "content": [
                {
                    "toolResult": {
                        "toolUseId": "t",
                        "status": "success",
                        "content": [{"json": {"b": 1, "a": 2}}],
                    }
                }
            ],
        },
    ]
    assert graph_task(messages) == "ship billing 1.2.3"
    assert upstream_output(messages, "planner") == "Plan: ship it: carefully"
    assert upstream_output(messages, "checker") == "all good"
    assert upstream_output(messages, "missing") == ""
    assert latest_tool_result_text(messages) == '{"a": 2, "b": 1}'
    assert latest_user_text(messages).startswith("Original Task: ship billing 1.2.3\n")
    assert graph_task(USER) == "hello"
    assert latest_tool_result_text(USER) == ""
    assert turn(say("a"), say("b")) == Step(text="a\n\nb")


def test_pick_model_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPH_MODEL", "offline")
    scripted = ScriptedModel([say("x")])
    assert pick_model(offline=scripted) is scripted
    assert pick_model(offline=lambda: scripted) is scripted


def test_pick_model_bedrock_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GRAPH_MODEL", raising=False)
    monkeypatch.delenv("BEDROCK_MODEL_ID", raising=False)
    monkeypatch.setenv("AWS_REGION", "us-east-1")

    def never() -> ScriptedModel:
        raise AssertionError("the offline factory must not be called in bedrock mode")

    model = pick_model(offline=never)
    assert isinstance(model, BedrockModel)
    assert model.get_config()["model_id"] == DEFAULT_BEDROCK_MODEL_ID

    monkeypatch.setenv("GRAPH_MODEL", "Bedrock")
    monkeypatch.setenv("BEDROCK_MODEL_ID", "eu.anthropic.claude-haiku-4-5-20251001-v1:0")
    model = pick_model(offline=never)
    assert model.get_config()["model_id"] == "eu.anthropic.claude-haiku-4-5-20251001-v1:0"


def test_pick_model_rejects_unknown_values(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPH_MODEL", "openai")
    with pytest.raises(ValueError, match=r"GRAPH_MODEL='openai'.*bedrock, offline"):
        pick_model(offline=ScriptedModel([]))
