"""``review_after`` in-process, resumed the way the bot resumes: through a fresh graph.

Every resume goes ``serialize_state()`` → JSON → a NEW graph from the factory →
``deserialize_state()`` → answer, so nothing survives in memory but the module-level
call log, which counts how often a wrapped tool really ran.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import AsyncGenerator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from strands import Agent, tool
from strands.hooks import AfterToolCallEvent, HookProvider, HookRegistry
from strands.interrupt import Interrupt
from strands.multiagent.base import Status
from strands.multiagent.graph import Graph, GraphBuilder, GraphResult
from strands.types.content import Messages
from strands.types.tools import AgentTool, ToolContext, ToolGenerator, ToolResult, ToolSpec, ToolUse

import graph_defs
from graph_defs import build_graph, load_graph_modules, review_after
from graph_defs.examples import incident
from graph_defs.review import RESULT_PREVIEW_CHARS, REVIEW_STATE_PREFIX, ReplayedToolError
from graph_defs.scripted import ScriptedModel, Step, call, latest_tool_result_text, say, turn

CALLS: list[str] = []
"""Every real run of a wrapped tool in this test; reset per test."""
AFTER_HOOK: list[tuple[str, Exception | None]] = []
"""What AfterToolCallEvent saw: (status, exception)."""


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("GRAPH_MODEL", "offline")
    CALLS.clear()
    AFTER_HOOK.clear()
    incident.QUERIES.clear()
    yield
    incident.QUERIES.clear()


@tool
def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: The key.
    """
    CALLS.append(key)
    return f"value of {key} #{len(CALLS)}"


@tool
async def lookup_async(key: str) -> dict[str, Any]:
    """Look a key up, asynchronously.

    Args:
        key: The key.
    """
    CALLS.append(key)
    return {"status": "success", "content": [{"json": {"key": key, "n": len(CALLS)}}]}


@tool
def forbidden(key: str) -> str:
    """Fail like a tool without access does.

    Args:
        key: The key.
    """
    CALLS.append(key)
    raise PermissionError(f"no access to {key} (try #{len(CALLS)})")


@tool
def huge(key: str) -> str:
    """Return far too much text for a card.

    Args:
        key: The key.
    """
    CALLS.append(key)
    return "x" * 10_000


@tool
def flaky(key: str) -> str:
    """Fail the first time, then return data nobody has seen yet.

    Args:
        key: The key.
    """
    CALLS.append(key)
    if len(CALLS) == 1:
        raise RuntimeError("transient")
    return f"customer data for {key} #{len(CALLS)}"


@tool(context=True)
def guarded(key: str, tool_context: ToolContext) -> str:
    """Ask before running, like the deploy tool does.

    Args:
        key: The key.
    """
    before = tool_context.interrupt("approve_first", reason={"key": key})
    CALLS.append(key)
    return f"guarded {key} ({before['decision']})"


class RawLookup(AgentTool):
    """An AgentTool written by hand: streams a progress event, then its raw result (or raises)."""

    def __init__(self, *, fail: bool = False) -> None:
        super().__init__()
        self._fail = fail

    @property
    def tool_name(self) -> str:
        return "raw_lookup"

    @property
    def tool_spec(self) -> ToolSpec:
        schema = {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}
        return {"name": "raw_lookup", "description": "Look up by hand.", "inputSchema": {"json": schema}}

    @property
    def tool_type(self) -> str:
        return "python"

    async def stream(self, tool_use: ToolUse, invocation_state: dict[str, Any], **kwargs: Any) -> ToolGenerator:
        key = tool_use["input"]["key"]
        CALLS.append(key)
        yield {"progress": f"looking up {key}"}
        if self._fail:
            raise RuntimeError(f"backend down (try #{len(CALLS)})")
        result: ToolResult = {
            "toolUseId": tool_use["toolUseId"],
            "status": "success",
            "content": [{"text": f"raw {key} #{len(CALLS)}"}],
        }
        yield result


class RecordAfter(HookProvider):
    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(AfterToolCallEvent, self.record)

    def record(self, event: AfterToolCallEvent) -> None:
        AFTER_HOOK.append((event.result["status"], event.exception))


class RetryErrorsOnce(HookProvider):
    """Strands' own retry: after the first error result, run the same tool use again."""

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(AfterToolCallEvent, self.retry)

    def retry(self, event: AfterToolCallEvent) -> None:
        if event.result["status"] == "error" and len(CALLS) < 2:
            event.retry = True


TOOLS: dict[str, Callable[[], AgentTool]] = {
    "lookup": lambda: review_after(lookup),
    "lookup_async": lambda: review_after(lookup_async),
    "forbidden": lambda: review_after(forbidden),
    "huge": lambda: review_after(huge),
    "flaky": lambda: review_after(flaky),
    "guarded": lambda: review_after(guarded),
    "raw_lookup": lambda: review_after(RawLookup()),
    "raw_failing": lambda: review_after(RawLookup(fail=True)),
}


def _echo(messages: Messages) -> Step:
    return say(f"saw: {latest_tool_result_text(messages)}")


def build(kind: str, *, calls: int = 1, retry_hook: bool = False) -> Graph:
    """The factory: one agent node calling the reviewed tool (``calls`` times in one turn), then echoing.

    ``retry_hook`` adds an ``AfterToolCallEvent`` hook that has Strands run a failed tool use again.
    """
    wrapped = TOOLS[kind]()
    first = turn(*(call(wrapped.tool_name, key=f"k{i + 1}") for i in range(calls)))
    agent = Agent(
        name="worker",
        model=ScriptedModel([first, _echo]),
        tools=[wrapped],
        hooks=[RecordAfter(), *([RetryErrorsOnce()] if retry_hook else [])],
        callback_handler=None,
    )
    builder = GraphBuilder()
    builder.add_node(agent, "worker")
    builder.set_max_node_executions(5)
    return builder.build()


def restore(graph: Graph, factory: Callable[[], Graph]) -> Graph:
    """Another process: JSON snapshot in, a fresh graph from code, state restored."""
    snapshot = json.loads(json.dumps(graph.serialize_state()))
    fresh = factory()
    fresh.deserialize_state(snapshot)
    return fresh


def answer(decision: str, text: str | None = None, user: str = "U1") -> dict[str, Any]:
    return {"decision": decision, "text": text, "user": user}


def resume(graph: Graph, factory: Callable[[], Graph], responses: dict[str, Any]) -> tuple[Graph, GraphResult]:
    fresh = restore(graph, factory)
    result = fresh([{"interruptResponse": {"interruptId": i, "response": r}} for i, r in responses.items()])
    return fresh, result


def tool_results(graph: Graph, node: str = "worker") -> list[ToolResult]:
    """The tool results the agent received, in order."""
    agent = graph.nodes[node].executor
    assert isinstance(agent, Agent)
    return [block["toolResult"] for m in agent.messages for block in m["content"] if "toolResult" in block]


def review_state(graph: Graph, node: str = "worker") -> dict[str, Any]:
    """What ``review_after`` keeps in the agent's state, by key."""
    agent = graph.nodes[node].executor
    assert isinstance(agent, Agent)
    return {k: v for k, v in agent.state.get().items() if k.startswith(REVIEW_STATE_PREFIX)}


def review_keys(graph: Graph, node: str = "worker") -> list[str]:
    return list(review_state(graph, node))


def settled(*tool_use_ids: str, attempt: int = 1) -> dict[str, Any]:
    """The state left once reviews are settled: a marker per tool use, no result."""
    return {f"{REVIEW_STATE_PREFIX}{t}": {"settled": attempt} for t in tool_use_ids}


def start(kind: str, **kwargs: Any) -> tuple[Graph, Callable[[], Graph], list[Interrupt]]:
    def factory() -> Graph:
        return build(kind, **kwargs)

    graph = factory()
    result = graph("go")
    assert result.status == Status.INTERRUPTED
    return graph, factory, list(result.interrupts)


# --- the wrapper itself -------------------------------------------------------------------


def test_the_wrapper_keeps_name_and_spec() -> None:
    wrapped = review_after(lookup)
    assert wrapped.tool_name == "lookup" and wrapped.tool_spec == lookup.tool_spec
    assert review_after(RawLookup()).tool_spec == RawLookup().tool_spec
    renamed = review_after(lookup, name="lookup_reviewed")
    assert renamed.tool_name == "lookup_reviewed" and renamed.tool_spec["name"] == "lookup_reviewed"
    assert renamed.tool_spec["inputSchema"] == lookup.tool_spec["inputSchema"]


def test_importing_graph_defs_stays_free_of_strands_until_review_after_is_asked_for() -> None:
    code = textwrap.dedent(
        """
        import sys
        import graph_defs
        before = [m for m in sys.modules if m == "strands" or m.startswith("strands.")]
        from graph_defs import review_after
        after = [m for m in sys.modules if m == "strands" or m.startswith("strands.")]
        print(len(before), bool(after), review_after.__module__)
        """
    )
    cwd = Path(graph_defs.__file__).parent.parent
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=cwd)
    assert out.stdout.split() == ["0", "True", "graph_defs.review"]


# --- one ask, each answer -------------------------------------------------------------------


def test_the_tool_runs_once_then_asks_with_its_result() -> None:
    graph, _, [ask] = start("lookup")

    assert CALLS == ["k1"]
    assert ask.name == "review:lookup:1"
    assert ask.id.startswith("v1:tool_call:tooluse_0_lookup:")  # a ToolContext id, like @tool(context=True)
    assert ask.reason == {
        "tool": "lookup",
        "input": {"key": "k1"},
        "result": "value of k1 #1",
        "status": "success",
        "attempt": 1,
    }
    assert review_keys(graph) == [f"{REVIEW_STATE_PREFIX}tooluse_0_lookup"]
    assert review_state(graph)[f"{REVIEW_STATE_PREFIX}tooluse_0_lookup"]["attempt"] == 1


def test_approve_gives_the_agent_the_stored_result_and_never_reruns_the_tool() -> None:
    graph, factory, [ask] = start("lookup")
    done, result = resume(graph, factory, {ask.id: answer("approve")})

    assert result.status == Status.COMPLETED
    assert CALLS == ["k1"]
    [received] = tool_results(done)
    assert received == {"toolUseId": "tooluse_0_lookup", "status": "success", "content": [{"text": "value of k1 #1"}]}
    assert str(result.results["worker"].result).strip() == "saw: value of k1 #1"
    assert review_state(done) == settled("tooluse_0_lookup")  # settled: the result is gone, a marker stays
    assert AFTER_HOOK == [("success", None)]  # hooks see the settled result, once


def test_a_resume_without_the_answer_asks_again_with_the_same_id_and_does_not_rerun() -> None:
    graph, factory, [ask] = start("lookup")
    for _ in range(3):
        graph, result = resume(graph, factory, {})
        assert result.status == Status.INTERRUPTED
        assert [i.id for i in result.interrupts] == [ask.id]
    assert CALLS == ["k1"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("contains customer emails", "Rejected by U9: contains customer emails"),
        (None, "Rejected by U9: no reason given"),
    ],
)
def test_reject_gives_the_agent_an_error_instead_of_the_result(text: str | None, expected: str) -> None:
    graph, factory, [ask] = start("lookup")
    done, result = resume(graph, factory, {ask.id: answer("reject", text, "U9")})

    assert result.status == Status.COMPLETED
    [received] = tool_results(done)
    assert received == {"toolUseId": "tooluse_0_lookup", "status": "error", "content": [{"text": expected}]}
    assert "value of" not in json.dumps(done.nodes["worker"].executor.messages)  # type: ignore[union-attr]
    assert CALLS == ["k1"] and review_state(done) == settled("tooluse_0_lookup")


def test_reply_gives_the_result_plus_the_reviewers_words() -> None:
    graph, factory, [ask] = start("lookup")
    done, _ = resume(graph, factory, {ask.id: answer("reply", " the #1 is stale ", "U2")})

    [received] = tool_results(done)
    assert received["status"] == "success"
    assert received["content"] == [{"text": "value of k1 #1"}, {"text": "Reviewer U2 says: the #1 is stale"}]
    assert CALLS == ["k1"]


def test_retry_runs_the_tool_again_and_asks_anew() -> None:
    graph, factory, [first] = start("lookup")
    graph, result = resume(graph, factory, {first.id: answer("retry")})

    assert result.status == Status.INTERRUPTED
    [second] = result.interrupts
    assert CALLS == ["k1", "k1"]
    assert second.id != first.id and second.name == "review:lookup:2"
    assert second.reason["attempt"] == 2 and second.reason["result"] == "value of k1 #2"

    done, result = resume(graph, factory, {second.id: answer("approve")})
    assert result.status == Status.COMPLETED
    assert CALLS == ["k1", "k1"]
    assert [r["content"] for r in tool_results(done)] == [[{"text": "value of k1 #2"}]]
    assert review_state(done) == settled("tooluse_0_lookup", attempt=2)


def test_an_unreadable_answer_rejects() -> None:
    graph, factory, [ask] = start("lookup")
    done, _ = resume(graph, factory, {ask.id: "maybe"})
    [received] = tool_results(done)
    assert received["status"] == "error" and "unrecognised answer 'maybe'" in received["content"][0]["text"]


# --- kinds of tools -------------------------------------------------------------------------


def test_an_async_tool_with_json_content() -> None:
    graph, factory, [ask] = start("lookup_async")
    assert ask.reason["result"] == '{"key": "k1", "n": 1}'
    done, _ = resume(graph, factory, {ask.id: answer("approve")})
    assert [r["content"] for r in tool_results(done)] == [[{"json": {"key": "k1", "n": 1}}]]
    assert CALLS == ["k1"]


def test_a_hand_written_agent_tool() -> None:
    graph, factory, [ask] = start("raw_lookup")
    assert ask.name == "review:raw_lookup:1" and ask.reason["result"] == "raw k1 #1"
    graph, result = resume(graph, factory, {ask.id: answer("retry")})
    [again] = result.interrupts
    done, _ = resume(graph, factory, {again.id: answer("approve")})
    assert [r["content"] for r in tool_results(done)] == [[{"text": "raw k1 #2"}]]
    assert CALLS == ["k1", "k1"]


def test_a_long_result_is_cut_on_the_card_but_whole_for_the_agent() -> None:
    graph, factory, [ask] = start("huge")
    shown = ask.reason["result"]
    assert shown.startswith("x" * RESULT_PREVIEW_CHARS) and shown.endswith("(7500 more characters)")
    done, _ = resume(graph, factory, {ask.id: answer("approve")})
    assert tool_results(done)[0]["content"] == [{"text": "x" * 10_000}]


def test_a_tool_that_asks_before_it_runs_is_asked_about_afterwards_too() -> None:
    graph, factory, [before] = start("guarded")
    assert before.name == "approve_first" and CALLS == []

    graph, result = resume(graph, factory, {before.id: answer("approve")})
    [after] = result.interrupts
    assert after.name == "review:guarded:1" and after.reason["result"] == "guarded k1 (approve)"
    assert CALLS == ["k1"]

    done, result = resume(graph, factory, {after.id: answer("approve")})
    assert result.status == Status.COMPLETED and CALLS == ["k1"]
    assert tool_results(done)[0]["content"] == [{"text": "guarded k1 (approve)"}]


# --- exceptions -----------------------------------------------------------------------------


def test_an_exception_is_shown_as_an_error_and_approve_hands_over_strands_own_error_result() -> None:
    graph, factory, [ask] = start("forbidden")
    assert ask.reason["status"] == "error"
    assert ask.reason["result"] == "Error: PermissionError - no access to k1 (try #1)"

    done, _ = resume(graph, factory, {ask.id: answer("approve")})
    [received] = tool_results(done)
    # Exactly what Strands gives the agent for a failing @tool, unreviewed.
    assert received == {
        "toolUseId": "tooluse_0_forbidden",
        "status": "error",
        "content": [{"text": "Error: PermissionError - no access to k1 (try #1)"}],
    }
    # The exception object did not cross the process boundary: its type name and message did.
    [(status, error)] = AFTER_HOOK
    assert status == "error" and isinstance(error, ReplayedToolError)
    assert (error.type_name, error.message) == ("PermissionError", "no access to k1 (try #1)")
    assert CALLS == ["k1"]


def test_a_failing_tool_can_be_retried_and_rejected() -> None:
    graph, factory, [ask] = start("raw_failing")
    assert ask.reason["status"] == "error"
    assert ask.reason["result"] == "RuntimeError: Error: backend down (try #1)"  # the type name is kept visible

    graph, result = resume(graph, factory, {ask.id: answer("retry")})
    [again] = result.interrupts
    assert again.reason["result"] == "RuntimeError: Error: backend down (try #2)" and CALLS == ["k1", "k1"]

    done, _ = resume(graph, factory, {again.id: answer("reject", "stop hammering it")})
    assert tool_results(done)[0]["content"] == [{"text": "Rejected by U1: stop hammering it"}]
    assert AFTER_HOOK == [("error", None)]
    assert CALLS == ["k1", "k1"]


# --- Strands itself runs the tool use again --------------------------------------------------


def test_a_run_after_the_review_is_settled_is_a_new_attempt_with_a_new_ask() -> None:
    """An AfterToolCallEvent hook retries the approved error: the new result gets its own card.

    Numbered 1 again, the ask would reuse the first interrupt id, whose answer (approve) is
    still in the interrupt state, and hand the agent a result nobody reviewed.
    """
    graph, factory, [first] = start("flaky", retry_hook=True)
    assert first.name == "review:flaky:1" and first.reason["status"] == "error"

    graph, result = resume(graph, factory, {first.id: answer("approve")})
    assert result.status == Status.INTERRUPTED  # the hook's retry ran the tool: asked again, not passed
    [second] = result.interrupts
    assert second.id != first.id and second.name == "review:flaky:2"
    assert second.reason["attempt"] == 2 and second.reason["result"] == "customer data for k1 #2"
    assert CALLS == ["k1", "k1"]
    assert tool_results(graph) == []  # nothing reached the agent yet

    graph, result = resume(graph, factory, {})  # a resume without the answer keeps the ask (and card)
    assert [i.id for i in result.interrupts] == [second.id] and CALLS == ["k1", "k1"]

    done, result = resume(graph, factory, {second.id: answer("reject", "not this either", "U7")})
    assert result.status == Status.COMPLETED
    [received] = tool_results(done)
    assert received["content"] == [{"text": "Rejected by U7: not this either"}]
    assert "customer data" not in json.dumps(done.nodes["worker"].executor.messages)  # type: ignore[union-attr]
    assert CALLS == ["k1", "k1"]
    [(approved, error), (rejected, none)] = AFTER_HOOK  # hooks saw the approved error, then the rejection
    assert approved == "error" and isinstance(error, ReplayedToolError) and error.type_name == "RuntimeError"
    assert (rejected, none) == ("error", None)
    assert review_state(done) == settled("tooluse_0_flaky", attempt=2)  # one small marker, no result


def test_a_settled_review_reruns_only_when_strands_runs_the_tool_use_again() -> None:
    graph, factory, [first] = start("flaky")  # no retry hook
    done, result = resume(graph, factory, {first.id: answer("approve")})
    assert result.status == Status.COMPLETED and CALLS == ["k1"]
    assert tool_results(done)[0]["content"] == [{"text": "Error: RuntimeError - transient"}]
    assert review_state(done) == settled("tooluse_0_flaky")


# --- two reviewed calls in one turn ---------------------------------------------------------


def test_two_calls_in_one_turn_are_answered_one_at_a_time() -> None:
    graph, factory, asks = start("lookup", calls=2)
    by_input = {i.reason["input"]["key"]: i for i in asks}
    assert sorted(by_input) == ["k1", "k2"] and sorted(CALLS) == ["k1", "k2"]

    graph, result = resume(graph, factory, {by_input["k2"].id: answer("reject", "no")})
    assert result.status == Status.INTERRUPTED
    assert [i.id for i in result.interrupts] == [by_input["k1"].id]  # the other one kept its id (and card)

    done, result = resume(graph, factory, {by_input["k1"].id: answer("approve")})
    assert result.status == Status.COMPLETED
    received = {r["toolUseId"]: r for r in tool_results(done)}
    assert received["tooluse_0_lookup"]["status"] == "success"
    assert received["tooluse_0_lookup_1"]["content"] == [{"text": "Rejected by U1: no"}]
    assert sorted(CALLS) == ["k1", "k2"]
    assert review_state(done) == settled("tooluse_0_lookup", "tooluse_0_lookup_1")


# --- the incident example -------------------------------------------------------------------


def _incident(task: str) -> tuple[Graph, list[Interrupt]]:
    load_graph_modules()
    graph = build_graph("incident")
    result = graph(task)
    assert result.status == Status.INTERRUPTED
    return graph, list(result.interrupts)


def _incident_factory() -> Graph:
    return build_graph("incident")


def _report(result: GraphResult) -> str:
    return str(result.results["reporter"].result).strip()


def test_incident_approve_reports_from_the_logs_queried_once() -> None:
    graph, [ask] = _incident("billing errors since the deploy, last 2h")
    assert ask.name == "review:query_logs:1" and ask.reason["input"] == {"service": "billing", "minutes": 120}
    _, result = resume(graph, _incident_factory, {ask.id: answer("approve")})
    assert result.status == Status.COMPLETED
    assert _report(result).startswith("Incident report for billing: Findings: 2 error patterns.")
    assert incident.QUERIES == [{"service": "billing", "minutes": 120}]


def test_incident_reject_keeps_the_logs_out_and_retry_queries_again() -> None:
    graph, [ask] = _incident("checkout is slow")
    graph, result = resume(graph, _incident_factory, {ask.id: answer("retry")})
    [again] = result.interrupts
    assert again.reason["result"].startswith("query #2: checkout") and len(incident.QUERIES) == 2

    _, result = resume(graph, _incident_factory, {again.id: answer("reject", "has card numbers", "U5")})
    report = _report(result)
    assert "withheld" in report and "Rejected by U5: has card numbers" in report and "ERROR" not in report
    assert len(incident.QUERIES) == 2


def test_incident_a_failed_query_is_reviewed_too() -> None:
    graph, [ask] = _incident("billing, last 48h")
    assert ask.reason["status"] == "error" and "LogRetentionError" in ask.reason["result"]
    _, result = resume(graph, _incident_factory, {ask.id: answer("approve")})
    assert "The log query failed" in _report(result) and incident.QUERIES == []


async def test_stream_needs_an_agent() -> None:
    wrapped = review_after(lookup)
    events: AsyncGenerator[Any, None] = wrapped.stream({"toolUseId": "t", "name": "lookup", "input": {}}, {})
    with pytest.raises(RuntimeError, match="needs the agent"):
        await events.__anext__()
