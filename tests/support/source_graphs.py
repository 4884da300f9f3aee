"""Test-only graphs for the interrupt-source and large-run tests (tests/engine/test_sources.py,
tests/engine/test_large_runs.py).

Side effects go to the ``APPROVAL_BOT_TEST_MARKERS`` file (``tests.support.graphs.markers``
reads it), so a test sees them whichever engine ("process") ran the tool.
"""

from __future__ import annotations

import base64
import hashlib
import os
from typing import Any

from strands import Agent, tool
from strands.multiagent.graph import Graph, GraphBuilder
from strands.types.content import Messages
from strands.vended_interventions.hitl import HumanInTheLoop

from graph_defs import graph_def
from graph_defs.scripted import ScriptedModel, Step, call, latest_tool_result_text, say
from tests.support.graphs import write_marker

BLOB_BYTES_VARIABLE = "APPROVAL_BOT_TEST_BLOB_BYTES"
DEFAULT_BLOB_BYTES = 1_200_000  # base64 makes it 1.6 MB of text in the conversation
BLOB_DIGESTS: list[str] = []
"""sha256 of every blob/image a tool produced here, so a test can check what came back."""


def _mark(text: str) -> None:
    path = os.environ.get("APPROVAL_BOT_TEST_MARKERS")
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(text + "\n")


def _bounded(builder: GraphBuilder) -> Graph:
    builder.set_max_node_executions(20)
    builder.set_execution_timeout(120)
    return builder.build()


# --- HumanInTheLoop with trust ------------------------------------------------------------


@tool
def drop_table(name: str) -> str:
    """Drop a table (the test's stand-in for something dangerous)."""
    _mark(f"dropped {name}")
    return f"dropped {name}"


@tool
def rotate_keys() -> str:
    """Rotate all keys (a second dangerous tool, never trusted here)."""
    _mark("rotated")
    return "rotated"


@graph_def("hitl-trust", description="HumanInTheLoop with trust: three drops and a rotation in one node")
def hitl_trust() -> Graph:
    """drop a, drop b, rotate, drop c: after Trust on the first drop only the rotation asks."""
    script: list[Step] = [
        call("drop_table", name="a"),
        call("drop_table", name="b"),
        call("rotate_keys"),
        call("drop_table", name="c"),
    ]
    agent = Agent(
        name="dba",
        model=ScriptedModel([*script, lambda m: say(f"dba: {latest_tool_result_text(m)}")], id_prefix="dba"),
        tools=[drop_table, rotate_keys],
        interventions=[HumanInTheLoop(enable_trust=True)],
        callback_handler=None,
    )
    builder = GraphBuilder()
    builder.add_node(agent, "dba")
    return _bounded(builder)


# --- large conversations --------------------------------------------------------------------


@tool
def fetch_blob() -> str:
    """Return incompressible text (base64 of random bytes) of the configured size."""
    size = int(os.environ.get(BLOB_BYTES_VARIABLE) or DEFAULT_BLOB_BYTES)
    blob = base64.b64encode(os.urandom(size)).decode()
    BLOB_DIGESTS.append(hashlib.sha256(blob.encode()).hexdigest())
    return blob


def _blob_digest(messages: Messages) -> str:
    for message in messages:
        for block in message["content"]:
            if "toolResult" in block and block["toolResult"]["toolUseId"].endswith("fetch_blob"):
                text = "".join(item.get("text", "") for item in block["toolResult"]["content"])
                return hashlib.sha256(text.encode()).hexdigest()
    return "missing"


def _big_reader() -> Agent:
    return Agent(
        name="reader",
        model=ScriptedModel(
            [
                call("fetch_blob"),
                call("write_marker", text="big"),
                lambda m: say(f"blob sha256 {_blob_digest(m)}; {latest_tool_result_text(m)}"),
            ],
            id_prefix="reader",
        ),
        tools=[fetch_blob, write_marker],
        callback_handler=None,
    )


@graph_def("big-context", description="a node whose conversation holds megabytes of random text, then asks")
def big_context() -> Graph:
    builder = GraphBuilder()
    builder.add_node(_big_reader(), "reader")
    return _bounded(builder)


# --- bytes in the conversation --------------------------------------------------------------

PNG_HEADER = b"\x89PNG\r\n\x1a\n"


@tool
def render_chart() -> dict[str, Any]:
    """Return a (fake) PNG chart as an image block: raw bytes in the conversation."""
    data = PNG_HEADER + os.urandom(4096)
    BLOB_DIGESTS.append(hashlib.sha256(data).hexdigest())
    return {"status": "success", "content": [{"image": {"format": "png", "source": {"bytes": data}}}]}


def _image_digest(messages: Messages) -> str:
    for message in messages:
        for block in message["content"]:
            for item in block.get("toolResult", {}).get("content", []):
                source = item.get("image", {}).get("source", {})
                data = source.get("bytes")
                if isinstance(data, bytes):
                    return hashlib.sha256(data).hexdigest()
                if data is not None:
                    return f"not bytes: {type(data).__name__}"
    return "missing"


@graph_def("image-context", description="a tool returns an image (bytes), then another tool asks")
def image_context() -> Graph:
    agent = Agent(
        name="painter",
        model=ScriptedModel(
            [
                call("render_chart"),
                call("write_marker", text="chart"),
                lambda m: say(f"image sha256 {_image_digest(m)}; {latest_tool_result_text(m)}"),
            ],
            id_prefix="painter",
        ),
        tools=[render_chart, write_marker],
        callback_handler=None,
    )
    builder = GraphBuilder()
    builder.add_node(agent, "painter")
    return _bounded(builder)
