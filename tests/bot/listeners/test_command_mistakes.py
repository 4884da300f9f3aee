"""A mistake in ``/graph`` text gets one line: the likely meaning and the usage line that applies.

And ``/graph help`` names every subcommand: each one the command's router handles, and
each one the Slack app manifests advertise in their usage hint.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from bot.listeners.commands import ACTIONS, Command, UsageError, parse_command
from bot.render.usage import SUBCOMMANDS, Mistake, help_text, mistake_text
from tests.bot.listeners.test_commands_oversight import FakeHandoff, run_command

REPO = Path(__file__).resolve().parents[3]
MANIFESTS = sorted(REPO.glob("slack-app-manifest*.yaml"))
GRAPHS = [("deploy", "Ship it"), ("release-check", "Sign-offs"), ("payout", "Pay")]
NAMES = [name for name, _ in GRAPHS]


def _advertised(manifest: Path) -> set[str]:
    """The subcommands a manifest's ``/graph`` usage hint names (``run deploy … | list | …``)."""
    data = yaml.safe_load(manifest.read_text())
    [command] = [c for c in data["features"]["slash_commands"] if c["command"] == "/graph"]
    return {part.split()[0] for part in command["usage_hint"].split("|")}


def test_there_are_manifests_to_check() -> None:
    assert len(MANIFESTS) == 2, MANIFESTS


@pytest.mark.parametrize("manifest", MANIFESTS, ids=lambda p: p.name)
def test_help_lists_every_subcommand_the_manifest_advertises(manifest: Path) -> None:
    text = help_text(command="/graph")
    advertised = _advertised(manifest)
    assert "pending" in advertised and len(advertised) >= 8
    for sub in advertised:
        assert re.search(rf"^`/graph {sub}\b", text, re.MULTILINE), f"{sub} is advertised but not in help"


def test_help_lists_every_subcommand_the_router_handles() -> None:
    text = help_text(command="/graph")
    assert set(ACTIONS) == set(SUBCOMMANDS)
    args = {"run": " deploy x", "status": " " + "a" * 16, "cancel": " " + "a" * 16, "audit": " " + "a" * 16}
    for sub in ACTIONS:
        assert parse_command(sub + args.get(sub, "")).action == sub  # routed as itself
        assert re.search(rf"^`/graph {sub}\b", text, re.MULTILINE), f"{sub} is handled but not in help"


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("rn deploy billing", "Unknown subcommand `rn`. Did you mean `run`? Usage: `/graph run &lt;graph&gt;"),
        ("lsit", "Unknown subcommand `lsit`. Did you mean `list`? Usage: `/graph list`"),
        ("stauts abc", "Did you mean `status`? Usage: `/graph status &lt;run id&gt;`"),
        ("pendnig", "Did you mean `pending`? Usage: `/graph pending`"),
        ("canecl x", "Did you mean `cancel`? Usage: `/graph cancel &lt;run id&gt;`"),
        ("deploy billing 1.2.3", "Unknown subcommand `deploy`. Did you mean `/graph run deploy billing 1.2.3`?"),
        ("deplyo billing", "Unknown subcommand `deplyo`. Did you mean `/graph run deploy billing`?"),
        ("frobnicate", "Unknown subcommand `frobnicate`. The subcommands are `run`, `list`, `runs`, `pending`"),
        ("<!channel> hi", "Unknown subcommand `&lt;!channel&gt;`. The subcommands are"),
        ("list extra", "`list` takes no arguments. Usage: `/graph list`"),
        ("pending me", "`pending` takes no arguments. Usage: `/graph pending`"),
        ("run deploy", "Give `deploy` a task. Usage: `/graph run deploy &lt;task text&gt;`"),
        ("run deploy " + "x" * 4001, "The task is too long (4001 characters, at most 4000). Usage: `/graph run"),
        ("status", "Name the run: the id in backticks under its announcement. Usage: `/graph status &lt;run id&gt;`"),
        ("audit a b", "`audit` takes one run id. Usage: `/graph audit &lt;run id&gt;`"),
        ("stats a b", "`stats` takes one graph name at most. Usage: `/graph stats [graph]`"),
        ("stat", "Did you mean `stats`? Usage: `/graph stats [graph]`"),
        ("cancel 4", "`4` is not a run id: copy the id in backticks under the run's announcement. Usage: `/graph"),
    ],
)
async def test_each_mistake_is_one_line_with_the_usage_line_that_applies(text: str, said: str) -> None:
    handoff = FakeHandoff()
    ack = await run_command(text, handoff, graphs=GRAPHS)
    [answer] = ack.calls
    assert answer["text"].startswith(":warning: ") and said in answer["text"], answer["text"]
    assert "\n" not in answer["text"]  # one line, never the whole help
    assert answer["text"].count("Usage:") <= 1 and "show this help" not in answer["text"]
    assert handoff.submitted == []


async def test_a_bare_run_lists_the_graphs_when_they_are_loaded_and_short() -> None:
    ack = await run_command("run", FakeHandoff(), graphs=GRAPHS)
    assert ack.calls[0]["text"] == (
        ":warning: Name the graph to run. Usage: `/graph run &lt;graph&gt; &lt;task text&gt;` "
        "Graphs: `deploy`, `release-check`, `payout` (`/graph list` describes them)."
    )
    many = [(f"graph-{n}", "") for n in range(20)]
    text = (await run_command("run", FakeHandoff(), graphs=many)).calls[0]["text"]
    assert text.endswith("&lt;task text&gt;` `/graph list` shows the 20 graphs.") and "graph-1" not in text
    none = (await run_command("run", FakeHandoff(), graphs=[])).calls[0]["text"]
    assert none.endswith("No graphs are registered yet (`/graph list` says how to add them).")


async def test_before_the_graphs_are_loaded_a_bare_run_points_at_list_and_typos_still_get_a_subcommand() -> None:
    """A cold Lambda acks before importing graph modules: no graph names, nothing loaded for them."""
    ack = await run_command("run", FakeHandoff(), graphs=None)
    assert ack.calls[0]["text"].endswith("&lt;task text&gt;` (`/graph list` shows the graphs.)")
    ack = await run_command("rn deploy x", FakeHandoff(), graphs=None)
    assert "Did you mean `run`?" in ack.calls[0]["text"]
    ack = await run_command("deploy x", FakeHandoff(), graphs=None)
    assert "Unknown subcommand `deploy`. The subcommands are" in ack.calls[0]["text"]


def test_stats_takes_one_graph_at_most() -> None:
    assert parse_command("stats") == Command(action="stats")
    assert parse_command("stats payout-rules") == Command(action="stats", graph="payout-rules")


def test_a_graph_named_like_a_subcommand_does_not_hide_the_subcommand() -> None:
    assert parse_command("list", graphs=["list"]) == Command(action="list")
    with pytest.raises(UsageError) as raised:
        parse_command("lst", graphs=["lst-graph"])
    assert raised.value.mistake.suggestion == "list"


def test_the_error_carries_what_went_wrong_and_help_stays_whole() -> None:
    with pytest.raises(UsageError) as raised:
        parse_command("frobnicate")
    assert raised.value.mistake == Mistake(kind="unknown", typed="frobnicate")
    assert str(raised.value) == mistake_text(raised.value.mistake)  # what a log line would say
    assert help_text(command="/graph").count("\n") == len(SUBCOMMANDS) + 1
