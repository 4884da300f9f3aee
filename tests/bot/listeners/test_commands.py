"""The slash command's text: entities decoded exactly once, then parsed into run, list or help."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.listeners.commands import MAX_TASK_CHARS, Command, UsageError, decode_entities, parse_command


@pytest.mark.parametrize(
    ("sent", "typed"),
    [
        ("&lt;b&gt; &amp; payload", "<b> & payload"),
        ("a &amp;&amp; b", "a && b"),
        ("&amp;lt;", "&lt;"),  # the person typed "&lt;": decoded once, it stays "&lt;"
        ("&amp;gt;", "&gt;"),
        ("&amp;amp;", "&amp;"),
        ("&lt;&lt;&gt;&gt;", "<<>>"),
        ("&lt;!channel&gt;", "<!channel>"),
        ("&quot;x&quot; &#39;y&#39; &nbsp;", "&quot;x&quot; &#39;y&#39; &nbsp;"),  # Slack escapes only & < >
        ("&LT; &Amp;", "&LT; &Amp;"),
        ("&lt", "&lt"),
        ("fish & chips", "fish & chips"),  # a bare & (older clients) is left alone
        ("", ""),
        ("no entities at all", "no entities at all"),
        ('<@U0ALICE> {"payload": 1}', '<@U0ALICE> {"payload": 1}'),
    ],
)
def test_decode_entities(sent: str, typed: str) -> None:
    assert decode_entities(sent) == typed


def _slack_escape(text: str) -> str:
    """What Slack does to command text: ``&`` first, then ``<`` and ``>``."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(st.text(alphabet=st.sampled_from("&;<>ltgamp# x"), max_size=40) | st.text(max_size=40))
def test_decoding_undoes_slacks_escaping_exactly(typed: str) -> None:
    assert decode_entities(_slack_escape(typed)) == typed


@pytest.mark.parametrize(
    ("text", "command"),
    [
        ("", Command(action="help")),
        ("   ", Command(action="help")),
        ("help", Command(action="help")),
        ("HELP me", Command(action="help")),
        ("list", Command(action="list")),
        ("  List  ", Command(action="list")),
        ("run deploy billing 1.2.3", Command(action="run", graph="deploy", task="billing 1.2.3")),
        ("RUN deploy   billing  ", Command(action="run", graph="deploy", task="billing")),
        ("run deploy line one\nline two", Command(action="run", graph="deploy", task="line one\nline two")),
        ("run deploy payload", Command(action="run", graph="deploy", task="payload")),
        ("run deploy " + "x" * MAX_TASK_CHARS, Command(action="run", graph="deploy", task="x" * MAX_TASK_CHARS)),
    ],
)
def test_parse_command(text: str, command: Command) -> None:
    assert parse_command(text) == command


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("list extra", "`list` takes no arguments."),
        ("run", "Name the graph to run."),
        ("run deploy", "Give `deploy` a task"),
        ("run deploy   ", "Give `deploy` a task"),
        ("frobnicate", "Unknown subcommand `frobnicate`."),
        ("x" * 100, "Unknown subcommand `" + "x" * 39 + "…`."),
        ("run deploy " + "x" * (MAX_TASK_CHARS + 1), f"({MAX_TASK_CHARS + 1} characters, at most {MAX_TASK_CHARS})"),
    ],
)
def test_usage_errors(text: str, problem: str) -> None:
    with pytest.raises(UsageError) as raised:
        parse_command(text)
    assert problem in str(raised.value)


def test_entities_are_decoded_once_before_parsing() -> None:
    """As the listener does it: decode, then parse; the task is what the person typed."""
    sent = "run deploy &lt;b&gt; &amp; payload &amp;lt;i&amp;gt;"
    assert parse_command(decode_entities(sent)) == Command(action="run", graph="deploy", task="<b> & payload &lt;i&gt;")


def test_the_task_limit_counts_what_was_typed_not_the_entities() -> None:
    typed = "<" * MAX_TASK_CHARS
    sent = "run deploy " + _slack_escape(typed)  # 4 times longer on the wire
    assert len(sent) > MAX_TASK_CHARS * 4
    assert parse_command(decode_entities(sent)).task == typed
