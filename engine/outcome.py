"""What a finished run amounts to, read from its record: approved, rejected, or what failed.

Strands reports a graph whose gate said no as *completed*: HumanInTheLoop turns a denial
into a tool error the agent reads (``CONFIRMATION_FAILED: ...``), a tool gate's
``cancel_tool`` into a tool result, and the graph then ends normally. Its status alone
would announce every rejection as a success. The record says more: it holds every
ask of the run with the answer it got. The answers the ending rests on, the
*decisive* ones, are those given after the run's last question was raised (earlier
answers only led to more questions). When any of them said no, the run is shown as
rejected, naming who and why, whatever the graph's last words were.

A failure is stored as one line of text saying where it happened (``node <id>: Type:
message``); :func:`failure_parts` reads it back for the message that reports it.
"""

from __future__ import annotations

from engine.records import Ask, AskStatus, Run
from engine.sources import denies

_NODE_PREFIX = "node "


def decisive_asks(run: Run) -> list[Ask]:
    """The answered asks the run's ending rests on, in the order they were answered.

    Those raised last, and any answered after the last was raised (a parallel question
    answered late). An ask answered before a later question was raised only led to that
    question: a draft rejected, rewritten and then approved ended approved. Asks a run
    kept apart by node (batch gates) count each.
    """
    if not run.asks:
        return []
    last_raised = max(a.created_at for a in run.asks.values())
    answered = [a for a in run.asks.values() if a.status is AskStatus.CONSUMED and a.decision is not None]
    # The last-raised asks always count: a click's clock may run a little behind the engine's.
    decisive = [a for a in answered if a.created_at >= last_raised or _decided_at(a) >= last_raised]
    return sorted(decisive, key=_decided_at)


def rejections(run: Run) -> list[Ask]:
    """The decisive asks whose answer said no (see :func:`engine.sources.denies`)."""
    return [a for a in decisive_asks(run) if denies(a)]


def failure_text(*, node_id: str | None, error: BaseException) -> str:
    """How a failure is stored: ``node <id>: <Type>: <message>`` (no node if none was running)."""
    described = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    return f"{_NODE_PREFIX}{node_id}: {described}" if node_id else described


def failure_parts(error: str | None) -> tuple[str | None, str, bool]:
    """A stored failure as ``(node, first line, whether more lines follow)``."""
    text = (error or "").strip() or "(no error message)"
    node: str | None = None
    if text.startswith(_NODE_PREFIX) and ": " in text.split("\n", 1)[0]:
        node, text = text.removeprefix(_NODE_PREFIX).split(": ", 1)
    first, _, rest = text.partition("\n")
    return node, first.strip(), bool(rest.strip())


def _decided_at(ask: Ask) -> float:
    return ask.decision.at if ask.decision is not None else 0.0
