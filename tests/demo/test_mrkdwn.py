"""Slack mrkdwn in the demo's terminal: styling instead of markers, names instead of ids."""

from __future__ import annotations

import re

from demo.mrkdwn import EMOJI, Run, cols, inline, paint, plain, printable, visible, wrap

NAMES = {"U0ALICE": "alice"}


def _name(user_id: str) -> str:
    return NAMES.get(user_id, user_id)


def test_markers_become_styles_and_code_stays_literal() -> None:
    runs = inline("*deploy* is _done_, ~not~ `a *b* c`", user_name=_name)
    assert runs == [
        Run("deploy", frozenset({"bold"})),
        Run(" is "),
        Run("done", frozenset({"italic"})),
        Run(", "),
        Run("not", frozenset({"strike"})),
        Run(" "),
        Run("a *b* c", frozenset({"code"})),
    ]


def test_markers_inside_words_are_text() -> None:
    assert plain("snake_case_name 2*3*4 a~b~c", user_name=_name) == "snake_case_name 2*3*4 a~b~c"


def test_mentions_groups_links_dates_and_entities_resolve() -> None:
    text = (
        "<@U0ALICE> and <@U0NOBODY> ask <!subteam^S0OPS|@oncall> (<!here>): "
        "see <https://example.com/a_b|the runbook>, <https://example.com>, "
        "<!date^1700000000^{date}|Nov 14> &lt;tag&gt; &amp; more"
    )
    assert plain(text, user_name=_name) == (
        "@alice and @U0NOBODY ask @oncall (@here): see the runbook (https://example.com/a_b), "
        "https://example.com, Nov 14 <tag> & more"
    )


def test_the_bots_shortcodes_are_emoji_and_unknown_ones_stay() -> None:
    text = ":arrow_forward: :white_check_mark: :x: :no_entry: :no_entry_sign: :warning: :unknown_code: 10:30:45"
    shown = plain(text, user_name=_name)
    assert shown == "▶ ✅ ❌ ⛔ 🚫 ⚠ :unknown_code: 10:30:45"
    assert {"arrow_forward", "white_check_mark", "x", "no_entry", "no_entry_sign", "warning"} <= set(EMOJI)


def test_paint_styles_only_with_color_and_one_escape_per_stretch() -> None:
    line = inline("*two words* and `x`", user_name=_name)
    assert paint(line, color=False) == "two words and x"
    assert paint(line, color=True) == "\x1b[1mtwo words\x1b[0m and \x1b[36mx\x1b[0m"
    assert visible(paint(line, color=True)) == "two words and x"


def test_cols_counts_wide_characters_twice() -> None:
    assert cols("abc") == 3
    assert cols("✅ ok") == 5
    assert cols("日本") == 4 and cols("ｶ") == 1  # East Asian wide two, halfwidth one
    assert cols("✏") == 1 and cols("✏️") == 2  # U+FE0F asks for the emoji, drawn two wide
    assert cols("✅️") == 2 and cols("\ufe0f") == 0  # wide already; alone it is nothing
    assert cols("é") == 1  # e and a combining accent: one column


def test_control_characters_in_graph_output_cannot_drive_the_terminal() -> None:
    shown = printable("a\tb\x1b]0;title\x07\x1b[2J\x9b1m\r\x00\nnext\tline")
    assert shown == "a   b^[]0;title^G^[[2J\ufffd1m^M^@\nnext    line"
    assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]", shown)


def test_a_quote_of_one_long_word_leaves_no_line_of_only_its_bar() -> None:
    texts = [paint(w, color=False) for w in wrap([Run("▎ "), Run("x" * 50)], 20)]
    assert texts[0] == "▎ " + "x" * 18 and all(cols(t) <= 20 for t in texts)


def test_wrap_keeps_words_styles_and_indents_continuations() -> None:
    line = [Run("  plan: "), Run("deploy " * 12, frozenset({"bold"}))]
    wrapped = wrap(line, 30)
    texts = [paint(w, color=False) for w in wrapped]
    assert all(cols(t) <= 30 for t in texts)
    assert texts[0].startswith("  plan: deploy") and all(t.startswith("    deploy") for t in texts[1:])
    assert " ".join(t.strip() for t in texts).split() == ["plan:", *["deploy"] * 12]
    assert {run.style for w in wrapped for run in w if run.text == "deploy"} == {frozenset({"bold"})}


def test_wrap_cuts_a_word_longer_than_the_line_and_keeps_hard_breaks() -> None:
    texts = [paint(w, color=False) for w in wrap([Run("x" * 50 + "\nnext")], 20)]
    assert texts == ["x" * 20, "  " + "x" * 18, "  " + "x" * 12, "next"]


def test_the_status_message_and_home_tab_shortcodes_are_emoji_and_channels_are_named() -> None:
    shown = plain(":white_circle: :large_blue_circle: :raised_hand: :gear: :information_source:", user_name=_name)
    assert shown == "⚪ 🔵 ✋ ⚙ \u2139"
    channels = {"C0DEMO": "demo"}
    assert plain("in <#C0DEMO> and <#C0OTHER>", user_name=lambda c: channels.get(c, c)) == "in #demo and #C0OTHER"
