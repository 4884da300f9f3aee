"""Graph output may mention people and user groups; nothing else it says becomes markup.

The adversarial cases are the ones a model or a hostile task text could produce: a
mention glued to a broadcast, half a mention, a label on a user mention, lower case,
look-alike characters from other scripts, ids too long to be Slack's, nesting.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.render.messages import split_output
from bot.render.mrkdwn import cut, escape_keeping_mentions, fit, mention_safe_cut, quote
from tests.bot.render import assert_harmless

KEPT = re.compile(r"<(@[UW][A-Z0-9]+|!subteam\^S[A-Z0-9]+(\|@[A-Za-z0-9._-]+)?)>")


def _unescape(text: str) -> str:
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


@pytest.mark.parametrize(
    "text",
    [
        "approved by <@U0ALICE>",
        "<@W012ABCDE> is on call",
        "paging <!subteam^S0ONCALL>",
        "<@U1>",
    ],
)
def test_well_formed_mentions_stay_live(text: str) -> None:
    assert escape_keeping_mentions(text) == text


def test_a_group_mention_loses_its_label() -> None:
    """Slack shows the group's real handle; a label chosen by the graph could read "@here"."""
    assert escape_keeping_mentions("paging <!subteam^S0ONCALL|@oncall-team>") == "paging <!subteam^S0ONCALL>"
    assert escape_keeping_mentions("<!subteam^S1|@here>") == "<!subteam^S1>"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<!channel>", "&lt;!channel&gt;"),
        ("<!here> and <!everyone>", "&lt;!here&gt; and &lt;!everyone&gt;"),
        ("<https://evil.example|x>", "&lt;https://evil.example|x&gt;"),
        ("<#C0123|general>", "&lt;#C0123|general&gt;"),
        ("<@U1|x>", "&lt;@U1|x&gt;"),  # a label on a user mention: not a shape graphs may use
        ("<@U1><!channel>", "<@U1>&lt;!channel&gt;"),
        ("<@u1>", "&lt;@u1&gt;"),
        ("<@B0BOT>", "&lt;@B0BOT&gt;"),
        ("<@U" + "A" * 21 + ">", "&lt;@U" + "A" * 21 + "&gt;"),  # overlong
        ("<@U\uff10ALICE>", "&lt;@U\uff10ALICE&gt;"),  # a fullwidth digit zero
        ("<@U\u0410LICE>", "&lt;@U\u0410LICE&gt;"),  # a Cyrillic capital A
        ("\uff1c@U1\uff1e", "\uff1c@U1\uff1e"),  # fullwidth brackets are no markup to escape
        ("<<@U1>>", "&lt;<@U1>&gt;"),
        ("<@<@U1>>", "&lt;@<@U1>&gt;"),
        ("<@U1", "&lt;@U1"),
        ("@U1>", "@U1&gt;"),
        ("<@U1\n>", "&lt;@U1\n&gt;"),
        ("<!subteam^S1|team>", "&lt;!subteam^S1|team&gt;"),  # the label must start with @
        ("<!subteam^S1|@te am>", "&lt;!subteam^S1|@te am&gt;"),
        ("<!subteam^S1|@x<!here>>", "&lt;!subteam^S1|@x&lt;!here&gt;&gt;"),
        ("<!subteam^U1>", "&lt;!subteam^U1&gt;"),
        ("&lt;@U1&gt;", "&amp;lt;@U1&amp;gt;"),  # pre-escaped text stays text
        ("a & b", "a &amp; b"),
    ],
)
def test_everything_else_stays_escaped(text: str, expected: str) -> None:
    assert escape_keeping_mentions(text) == expected
    assert_harmless(expected)


@given(st.text(alphabet=st.sampled_from(list("<>&@!^|#:/UWSabc01 \n")) | st.characters(), max_size=80))
def test_only_mentions_survive_and_the_text_reads_back(text: str) -> None:
    escaped = escape_keeping_mentions(text)
    inert = KEPT.sub("", escaped)
    assert "<" not in inert and ">" not in inert
    assert _unescape(escaped) == text


@pytest.mark.parametrize("limit", range(50, 110))
def test_a_cut_never_leaves_half_a_mention(limit: int) -> None:
    text = "x" * 30 + "<@U0ALICE> and <!subteam^S0TEAM|@oncall> and <@W0BOB>" + "y" * 30
    for cut_text in (cut(text, limit, mentions=True), quote(text, limit, mentions=True)):
        assert len(cut_text) <= limit
        assert_harmless(cut_text)
    assert_harmless(fit(escape_keeping_mentions(text), limit, total=len(text)))


def test_mention_safe_cut_moves_back_to_the_mention_start() -> None:
    text = "hi <@U0ALICE> there"
    assert mention_safe_cut(text, 8) == 3
    assert mention_safe_cut(text, 13) == 13  # right after it: nothing to move
    assert mention_safe_cut("a <!channel> b", 6) == 6  # not a kept mention: no reason to move


def test_long_output_keeps_mentions_whole_across_sections() -> None:
    output = "".join(f"line {i} approved by <@U0ALICE> not <!channel>\n" for i in range(3000))
    parts, shown = split_output(output, max_sections=40, max_chars=200_000)
    assert len(parts) > 5
    for part in parts:
        assert_harmless(part)
        assert part.count("<@U0ALICE>") == part.count("approved by"), "no mention cut in half"
    assert _unescape("".join(parts)) == output[:shown]
