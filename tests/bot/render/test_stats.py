"""``/graph stats`` in words: the window read, the cap, escaped names, the one-line answers."""

from __future__ import annotations

from bot.render.stats import duration, stats_reply, window_words
from engine.stats import DAY, MAX_RUNS_READ, Ending, GraphStats, Row
from engine.stats_access import StatsReport


def _report(**changes: object) -> StatsReport:
    waits = (1.0, 2.0, 3.0, 4.0, 90.0)
    row = Row(name="pay <b>", label="*small* & <!channel>", counts={Ending.APPROVED: 5}, waits=waits)
    fields: dict[str, object] = {
        "window": 30 * DAY,
        "since": 1_800_000_000.0,
        "runs_read": 5,
        "capped": False,
        "graphs": (GraphStats(graph="<@U0X> graph", runs=5, rows=(row,)),),
        "any_runs": True,
    }
    return StatsReport(**(fields | changes))  # type: ignore[arg-type]


def _text(report: StatsReport, graph: str | None = None) -> str:
    rendered = stats_reply(report=report, graph=graph, command="/graph")
    return rendered.text + "\n" + "\n".join(str(b) for b in rendered.blocks)


def test_the_window_and_waits_read_naturally() -> None:
    assert [window_words(s) for s in (30 * DAY, DAY, 7.5 * DAY, 0.5 * DAY, 60)] == [
        "30 days",
        "1 day",
        "7.5 days",
        "12 hours",
        "1 hour",
    ]
    assert [duration(s) for s in (0.4, 12, 240, 3 * 3600, 2 * DAY)] == ["0.4 s", "12 s", "4 min", "3.0 h", "2.0 days"]


def test_names_from_graph_code_are_escaped_and_the_cap_is_said() -> None:
    text = _text(_report(capped=True, runs_read=MAX_RUNS_READ, window=7 * DAY))
    assert "over the last 7 days" in text
    assert f"Only the newest {MAX_RUNS_READ:,} runs of the window were read" in text
    assert "&lt;@U0X&gt; graph" in text and "<@U0X>" not in text
    assert "&lt;!channel&gt;" in text and "<!channel>" not in text and "`pay &lt;b&gt;`" in text
    assert "decided by people in 3.0 s (median), 90 s (p90)" in text
    assert "5 of 5 approved as shown" in text


def test_nothing_to_show_is_one_line() -> None:
    nothing = stats_reply(report=_report(graphs=(), any_runs=False), graph=None, command="/graph")
    assert (nothing.text, nothing.blocks) == ("No runs of this channel in the last 30 days.", [])
    hidden = stats_reply(report=_report(graphs=()), graph="deploy", command="/graph")
    assert hidden.text.startswith("Nothing to show: no graph run in *deploy* in this channel in the last 30 days")
    assert hidden.blocks == []
