"""The slash command's help, and one line for each mistake in its text.

A mistake costs the person one line, not a wall: what is wrong, then the one usage line
that applies (``/graph status <run id>`` after a bad run id), or for a word that is no
subcommand the one it most likely meant (``/graph rn`` → ``/graph run …``). The whole
help is for ``/graph help``, and it lists every subcommand the command handles (tests
hold it to the command's parser and to the Slack app manifest's usage hint).

What is wrong comes from the parser as a ``Mistake`` (``bot.listeners.commands``), so the
wording lives here, once. Everything the person typed is shown escaped and cut.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from bot.render.mrkdwn import escape, fit, short

DEFAULT_COMMAND: Final = "/graph"
REPLY_LIMIT: Final = 3000
MAX_NAMES_IN_LINE: Final = 15  # graphs named in a line; with more, the line points at "/graph list"
_TYPED_LIMIT: Final = 40  # characters of a typed word shown back
_TASK_SHOWN: Final = 100  # characters of a task repeated in a suggestion
CLOSE_ENOUGH: Final = 0.65  # "ls" is list (0.67); "<!channel>" is not cancel (0.62)

# Every subcommand, in the order help lists them: its arguments and what it does.
SUBCOMMANDS: Final[dict[str, tuple[str, str]]] = {
    "run": ("<graph> <task text>", "start a run of a graph with the task text as input"),
    "list": ("", "show the graphs you can run"),
    "runs": ("", "show the latest runs in this channel"),
    "pending": ("", "show the questions waiting for your decision, with links to their cards"),
    "status": ("<run id>", "show where a run stands and what it waits for (to its requester and approvers only)"),
    "cancel": ("<run id>", "stop a run (its requester and approvers may)"),
    "audit": ("<run id>", "show who did what in a run, and when (to its requester and approvers only)"),
    "stats": (
        "[graph]",
        "show how approvals went in this channel over the last 30 days, per graph, ask and rule "
        "(each graph to those who may decide its asks)",
    ),
    "help": ("", "show this help"),
}

MistakeKind = Literal[
    "unknown",  # the first word is no subcommand
    "extra",  # a subcommand without arguments was given some
    "no_graph",  # ``run`` alone
    "no_task",  # ``run <graph>`` without a task
    "task_too_long",
    "no_run",  # ``status``/``cancel``/``audit`` without a run id
    "runs_many",  # ... with more than one
    "not_a_run_id",  # ... with something that is no run id
    "graphs_many",  # ``stats`` with more than one word after it
]


@dataclass(frozen=True, kw_only=True)
class Mistake:
    """What is wrong with a command's text, as the parser found it; rendered by :func:`mistake_text`.

    ``subcommand`` names the usage line that applies; ``typed`` is the word at fault (raw);
    ``suggestion`` the subcommand it likely meant; ``graph`` the graph named (``no_task``)
    or, for an unknown subcommand, the graph it likely meant (``/graph deploy x`` for
    ``/graph run deploy x``), with ``rest``, what followed the word; ``length`` and
    ``limit`` a too-long task's length and the most allowed.
    """

    kind: MistakeKind
    subcommand: str = ""
    typed: str = ""
    graph: str = ""
    suggestion: str = ""
    rest: str = ""
    length: int = 0
    limit: int = 0


def closest(word: str, choices: Iterable[str]) -> str | None:
    """The choice ``word`` most likely misspells (difflib's ratio at least ``CLOSE_ENOUGH``), or None.

    A choice with exactly the word's letters comes first: two letters swapped is the
    likeliest typo, and difflib alone would take ``stauts`` for ``stats``, not ``status``.
    """
    options = list(dict.fromkeys(choices))
    lowered = {c.lower(): c for c in options}
    swapped = [c for c in lowered if sorted(c) == sorted(word.lower())]
    if len(swapped) == 1:
        return lowered[swapped[0]]
    match = difflib.get_close_matches(word.lower(), list(lowered), n=1, cutoff=CLOSE_ENOUGH)
    return lowered[match[0]] if match else None


def usage_line(sub: str, *, command: str = DEFAULT_COMMAND) -> str:
    """``/graph status <run id>`` as inline code: how one subcommand is typed."""
    args = SUBCOMMANDS[sub][0]
    return f"`{escape(command)} {sub}" + (f" {escape(args)}`" if args else "`")


def help_text(*, command: str = DEFAULT_COMMAND) -> str:
    """The reply to ``<command> help``: every subcommand, one line each."""
    lines = [f"{usage_line(sub, command=command)}: {what}" for sub, (_, what) in SUBCOMMANDS.items()]
    return "\n".join(
        [
            "*Run a multi-agent graph, with people approving its steps in Slack.*",
            *lines,
            "A run's id is shown in backticks under its announcement. While a run waits, each question "
            "is posted as a card with *Approve*, *Reject* and *Reply* buttons; the run goes on as soon "
            "as someone answers.",
        ]
    )


def mistake_text(mistake: Mistake, *, command: str = DEFAULT_COMMAND, graphs: Sequence[str] | None = None) -> str:
    """One line for ``mistake``. ``graphs``: the graph names, when known without loading them
    (a bare ``run`` then lists them, if they fit in a line); None when not known."""
    cmd, sub = escape(command), mistake.subcommand
    typed = _code(mistake.typed)
    match mistake.kind:
        case "unknown":
            head = f":warning: Unknown subcommand {typed}."
            if mistake.suggestion:
                meant = mistake.suggestion
                line = f"{head} Did you mean `{meant}`? Usage: {usage_line(meant, command=command)}"
            elif mistake.graph:
                line = f"{head} Did you mean {_run_line(command, mistake.graph, mistake.rest)}?"
            else:
                names = ", ".join(f"`{s}`" for s in SUBCOMMANDS)
                line = f"{head} The subcommands are {names}; `{cmd} help` says what each does."
        case "extra":
            line = f":warning: `{sub}` takes no arguments. Usage: {usage_line(sub, command=command)}"
        case "no_graph":
            line = f":warning: Name the graph to run. Usage: {usage_line('run', command=command)}"
            if graphs is not None:
                line += f" {_graphs(graphs, command=command)}"
            else:
                line += f" (`{cmd} list` shows the graphs.)"
        case "no_task":
            graph = _code(mistake.graph)
            line = f":warning: Give {graph} a task. Usage: {_run_line(command, mistake.graph, '')}"
        case "task_too_long":
            line = (
                f":warning: The task is too long ({mistake.length} characters, at most {mistake.limit}). "
                f"Usage: {usage_line('run', command=command)}"
            )
        case "no_run":
            line = (
                f":warning: Name the run: the id in backticks under its announcement. "
                f"Usage: {usage_line(sub, command=command)}"
            )
        case "runs_many":
            line = f":warning: `{sub}` takes one run id. Usage: {usage_line(sub, command=command)}"
        case "graphs_many":
            line = f":warning: `{sub}` takes one graph name at most. Usage: {usage_line(sub, command=command)}"
        case "not_a_run_id":
            line = (
                f":warning: {typed} is not a run id: copy the id in backticks under the run's announcement. "
                f"Usage: {usage_line(sub, command=command)}"
            )
    return fit(line, REPLY_LIMIT, total=len(line))


def unknown_graph(*, name: str, task: str, graphs: Sequence[str], command: str = DEFAULT_COMMAND) -> str:
    """One line for ``run <name> …`` where no graph is called ``name``: the graph it likely
    meant, as the command to type, or the graphs there are."""
    head = f":warning: There is no graph called {_code(name)}."
    if not graphs:
        line = (
            f"{head[:-1]}: no graphs are registered yet. Whoever runs the bot can set `EXAMPLE_GRAPHS=true` "
            "for the example graphs, or `GRAPH_MODULES` to modules with their own."
        )
    elif meant := closest(name, graphs):
        line = f"{head} Did you mean {_run_line(command, meant, task)}?"
    else:
        line = f"{head} {_graphs(graphs, command=command)}"
    return fit(line, REPLY_LIMIT, total=len(line))


def unknown_stats_graph(*, name: str, graphs: Sequence[str], command: str = DEFAULT_COMMAND) -> str:
    """One line for ``stats <name>`` where no graph is called ``name``: the graph it likely
    meant, as the command to type, or the graphs there are."""
    head = f":warning: There is no graph called {_code(name)}."
    if meant := closest(name, graphs):
        line = f"{head} Did you mean " + "`" + short(f"{command} stats {meant}".replace("`", "'"), _TASK_SHOWN) + "`?"
    else:
        line = f"{head} {_graphs(graphs, command=command)}"
    return fit(line, REPLY_LIMIT, total=len(line))


def _run_line(command: str, graph: str, task: str) -> str:
    """``/graph run <graph> <task>`` as inline code, the task repeated (cut) or a placeholder."""
    words = f"{command} run {graph[:_TYPED_LIMIT]} {task or '<task text>'}"
    return "`" + short(words.replace("`", "'"), _TASK_SHOWN) + "`"


def _graphs(graphs: Sequence[str], *, command: str) -> str:
    """The graphs in one sentence when there are few; else where to see them."""
    cmd = escape(command)
    if not graphs:
        return f"No graphs are registered yet (`{cmd} list` says how to add them)."
    if len(graphs) > MAX_NAMES_IN_LINE:
        return f"`{cmd} list` shows the {len(graphs)} graphs."
    return f"Graphs: {', '.join(_code(g) for g in graphs)} (`{cmd} list` describes them)."


def _code(raw: str) -> str:
    """What a person typed (a word, a graph's name) as inline code on one line, cut with "…"."""
    return "`" + short(raw.replace("`", "'"), _TYPED_LIMIT) + "`"
