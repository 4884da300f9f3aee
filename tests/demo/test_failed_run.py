"""A run that fails at once, with the real bot: its failure, one status line, counted as failed.

A graph whose agent has no offline model (a plain ``Agent()``) fails before the bot's
streamed status message has shown a node under way; the demo then used to print the
message's box of nodes "not started" after the failure, as if the run were about to go,
and to count the run as finished.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pytest

from demo.commands import DemoSession
from demo.console import Console
from demo.session import _step


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> Iterator[str]:
    monkeypatch.setenv("GRAPH_MODEL", "offline")
    monkeypatch.setenv("GRAPH_MODULES", "tests.support.graphs")  # "boom": its model raises at once
    yield str(tmp_path)


async def test_a_failed_run_shows_its_failure_then_one_status_line_and_counts_as_failed(offline: str) -> None:
    from demo.stack import Stack

    stream = io.StringIO()
    async with Stack(state=offline) as stack:
        session = DemoSession(slack=stack.slack, user=stack.user, console=Console(stream=stream))
        await _step(session, "/graph run boom now")
        await stack.slack.wait_for(lambda: session.ended, timeout=30, what="the run to fail")
        await _step(session, "/graph status 1")
    said = stream.getvalue()
    flat = " ".join(said.split())
    assert "boom failed at node boom: RuntimeError: the model exploded" in flat
    assert "not started" not in said and "┌─ run 1 status" not in said, said  # no box of nodes about to run
    assert "run 1 status: Failed" in flat
    assert flat.index("boom failed at node boom") < flat.index("run 1 status: Failed")
    assert "Run 1 of boom: failed" in flat  # /graph status 1: run 1, by its number
    assert session.summary() == "0 runs finished, 1 failed, 0 waiting"
