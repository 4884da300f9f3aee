"""Text from people and graphs never becomes markup, and never hides characters.

The adversarial cases are the ones a model or a hostile task text could produce: a
mention glued to a broadcast, half a mention, a label on a link that reads as another
URL, look-alike characters, nesting, right-to-left overrides and zero-width characters.
The only live markup is what the bot builds itself from ids it checked.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.render.messages import split_output
from bot.render.mrkdwn import code_block, cut, escape, fit, inline_code, mention, quote, short, visible
from bot.render.titles import mention_id, mention_ids
from localslack import live_tokens
from tests.bot.render import assert_harmless

HOSTILE = [
    "approved by <@U0ALICE>",
    "<@W012ABCDE> is on call",
    "paging <!subteam^S0ONCALL>",
    "paging <!subteam^S0ONCALL|@oncall-team>",
    "<!channel>",
    "<!here> and <!everyone>",
    "<https://evil.example|https://good.example>",
    "<mailto:a@evil.example|support>",
    "<#C0123|general>",
    "<@U1|x>",
    "<@U1><!channel>",
    "<<@U1>>",
    "<@<@U1>>",
    "<!subteam^S1|@x<!here>>",
    "&lt;@U1&gt;",  # pre-escaped text stays text
    "a & b",
]


def _unescape(text: str) -> str:
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


@pytest.mark.parametrize("text", HOSTILE)
def test_every_mention_broadcast_and_link_stays_text(text: str) -> None:
    for rendered in (escape(text), cut(text, 3000), quote(text, 3000), short(text), code_block(text, 3000)):
        assert live_tokens(rendered) == [], rendered
        assert_harmless(rendered)
    assert _unescape(escape(text)) == text, "and reads as what was sent"
    assert live_tokens(inline_code(text)) == []


@given(st.text(alphabet=st.sampled_from(list("<>&@!^|#:/UWSabc01 \n\u202e\u200b")) | st.characters(), max_size=80))
def test_nothing_survives_and_the_text_reads_back(text: str) -> None:
    escaped = escape(text)
    assert "<" not in escaped and ">" not in escaped
    assert _unescape(escaped) == visible(text)


HIDDEN = [chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A), *range(0x200B, 0x2010))]
HIDDEN += ["\u2060", "\ufeff", "\u00ad", "\u061c", "\x00", "\x1b", "\x7f", "\x85", "\ud800", "\U000e0041", "\u2028"]


@pytest.mark.parametrize("char", HIDDEN)
def test_invisible_characters_show_as_markers(char: str) -> None:
    marker = f"⟨U+{ord(char):04X}⟩"
    assert visible(f"pay{char}ACME") == f"pay{marker}ACME"
    for rendered in (escape(f"a{char}b"), cut(f"a{char}b", 100), code_block(f"a{char}b", 100)):
        assert char not in rendered and marker in rendered
    assert char not in short(f"a{char}b"), "one line: a marker, or a space where it was a line break"


def test_ordinary_text_emoji_and_line_breaks_are_left_alone() -> None:
    for text in ("ünïcödé, 日本語, עברית, عربي", "family 👨\u200d👩\u200d👧 and ⚙\ufe0f", "a\tb\nc\r\nd"):
        assert visible(text) == text
    assert visible("a\u200db") == "a⟨U+200D⟩b", "a joiner between letters is not an emoji"


def test_a_code_block_still_breaks_a_fence_with_its_own_zero_width_space() -> None:
    shown = code_block("x ``` y \u200b z", 200)
    assert shown.count("```") == 2 and "`\u200b``" in shown and "⟨U+200B⟩" in shown


@pytest.mark.parametrize("limit", range(50, 110))
def test_a_cut_never_leaves_half_an_entity_or_a_marker_raw(limit: int) -> None:
    text = "x" * 30 + "<@U0ALICE> & <!subteam^S0TEAM|@oncall> \u202e and <@W0BOB>" + "y" * 30
    for shown in (cut(text, limit), quote(text, limit)):
        assert len(shown) <= limit and "\u202e" not in shown
        assert_harmless(shown)
        assert live_tokens(shown) == []
    assert_harmless(fit(escape(text), limit, total=len(text)))


def test_long_output_stays_text_across_sections() -> None:
    output = "".join(f"line {i} approved by <@U0ALICE> not <!channel> \u202e\n" for i in range(3000))
    parts, shown = split_output(output, max_sections=40, max_chars=200_000)
    assert len(parts) > 5
    for part in parts:
        assert live_tokens(part) == [] and "\u202e" not in part
    assert _unescape("".join(parts)) == visible(output[:shown])


def test_the_bot_mentions_only_ids_it_checked() -> None:
    assert mention("U0ALICE") == "<@U0ALICE>"
    assert mention("<!here>") == "&lt;!here&gt;"
    assert mention_id("U0ALICE") == "<@U0ALICE>" and mention_id("S0OPS") == "<!subteam^S0OPS>"
    assert mention_id("<!channel>") == "&lt;!channel&gt;"
    assert mention_ids(["U0ALICE", "S0OPS", "here>"]) == "<@U0ALICE>, <!subteam^S0OPS> or here&gt;"
