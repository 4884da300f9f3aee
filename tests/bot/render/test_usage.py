"""``bot.render.usage``: help, and one line per mistake, whatever the person typed."""

from __future__ import annotations

import pytest

from bot.render.usage import SUBCOMMANDS, Mistake, closest, help_text, mistake_text, unknown_graph
from bot.services import GraphCatalog, Services
from bot.slack_access import SlackAccess
from tests.bot.render import assert_harmless

GRAPHS = ["deploy", "release-check", "payout", "tool-gate"]


@pytest.mark.parametrize("command", ["/graph", "/deploy-bot"])
def test_help_lists_every_subcommand_once_with_what_it_does(command: str) -> None:
    text = help_text(command=command)
    assert_harmless(text)
    for sub, (args, what) in SUBCOMMANDS.items():
        typed = f"{command} {sub}" + (f" {args}" if args else "")
        line = f"`{typed.replace('<', '&lt;').replace('>', '&gt;')}`: {what}"
        assert text.count(line) == 1, line
    assert "`/deploy-bot pending`: show the questions waiting for your decision" in help_text(command="/deploy-bot")


@pytest.mark.parametrize(
    ("word", "meant"),
    [("rn", "run"), ("ls", "list"), ("Stauts", "status"), ("hlep", "help"), ("xyz", None), ("<!channel>", None)],
)
def test_closest_finds_the_likely_subcommand(word: str, meant: str | None) -> None:
    assert closest(word, SUBCOMMANDS) == meant


def test_an_unknown_graph_gets_the_command_it_likely_meant() -> None:
    assert unknown_graph(name="deplyo", task="billing 1.2.3", graphs=GRAPHS) == (
        ":warning: There is no graph called `deplyo`. Did you mean `/graph run deploy billing 1.2.3`?"
    )
    assert unknown_graph(name="Payot", task="", graphs=GRAPHS, command="/ops").endswith(
        "Did you mean `/ops run payout &lt;task text&gt;`?"
    )


def test_an_unknown_graph_with_no_likely_match_lists_the_graphs_in_one_line() -> None:
    line = unknown_graph(name="nope", task="do it", graphs=GRAPHS)
    assert line == (
        ":warning: There is no graph called `nope`. Graphs: `deploy`, `release-check`, `payout`, "
        "`tool-gate` (`/graph list` describes them)."
    )
    many = unknown_graph(name="nope", task="x", graphs=[f"g{n}" for n in range(30)])
    assert many == ":warning: There is no graph called `nope`. `/graph list` shows the 30 graphs."


def test_with_no_graphs_at_all_it_says_how_to_add_them() -> None:
    line = unknown_graph(name="deploy", task="x", graphs=[])
    assert "There is no graph called `deploy`: no graphs are registered yet" in line and "GRAPH_MODULES" in line


def test_what_a_person_typed_is_inert_cut_and_on_one_line() -> None:
    hostile = "<!channel> `x` <@U0BOB>\n" + "y" * 5000
    for text in (
        unknown_graph(name=hostile, task=hostile, graphs=[hostile + "z"]),
        unknown_graph(name=hostile, task=hostile, graphs=["deploy"]),
        mistake_text(Mistake(kind="unknown", typed=hostile, graph=hostile, rest=hostile)),
        mistake_text(Mistake(kind="no_task", subcommand="run", graph=hostile)),
        mistake_text(Mistake(kind="not_a_run_id", subcommand="audit", typed=hostile)),
        mistake_text(Mistake(kind="no_graph", subcommand="run"), graphs=[hostile, hostile]),
    ):
        assert_harmless(text)
        assert "\n" not in text and len(text) < 1000, text


def test_the_ack_sees_graph_names_only_once_they_are_loaded() -> None:
    """``Services.loaded_graphs`` never builds the catalog, reads the settings or imports a module."""

    def no_settings() -> object:
        raise AssertionError("the ack read the settings")

    services = Services(slack=SlackAccess(bot_token="xoxb-test", signing_secret="s"), settings=no_settings)  # type: ignore[arg-type]
    assert services.loaded_graphs() is None
    catalog = GraphCatalog(extra_modules=[], examples=False)
    services.__dict__["graphs"] = catalog  # as ``services.graphs`` caches it
    assert services.loaded_graphs() is None  # built, not loaded: still nothing
    catalog.load()
    assert services.loaded_graphs() == catalog.describe()
