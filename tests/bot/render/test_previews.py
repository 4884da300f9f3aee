""" "What will happen" on a card: a table (plain fields where a workspace lacks tables), a
diff at a glance, text with its line breaks; foreign text inert everywhere."""

from __future__ import annotations

from typing import Any

from bot.render import ask_card, decided_card, obsolete_card
from bot.render.previews import MAX_DIFF_LINES, is_diff, preview_blocks
from engine.records import AskStatus, Closed, Decision, Verdict
from localslack.limits import check_message
from tests.bot.render import all_text, assert_within_limits
from tests.bot.render.test_cards import make_ask, make_run

TABLE = {"pays": "5 EUR", "to": "<!channel> ACME <@U0EVIL>"}
DIFF = "--- a/app.yaml\n+++ b/app.yaml\n@@ -1 +1 @@\n-replicas: 2\n+replicas: 3\n same: line"


def _types(blocks: list[dict[str, Any]]) -> list[str]:
    return [b["type"] for b in blocks]


def test_a_table_preview_has_a_plain_variant_and_both_pass_slacks_checks() -> None:
    card = ask_card(run=make_run(), ask=make_ask(preview=TABLE))
    assert _types(card.blocks).count("table") == 1 and card.plain_blocks is not None
    assert "table" not in _types(card.plain_blocks)
    table = next(b for b in card.blocks if b["type"] == "table")
    assert table["rows"][1] == [{"type": "raw_text", "text": "to"}, {"type": "raw_text", "text": TABLE["to"]}]
    for blocks in (card.blocks, card.plain_blocks):
        assert check_message({"text": card.text, "blocks": blocks}) is None
    plain = " ".join(b["text"] for block in card.plain_blocks for b in block.get("fields") or [])
    assert "*pays*\n5 EUR" in plain and "&lt;!channel&gt;" in plain and "<@U0EVIL>" not in plain
    assert_within_limits(card)


def test_a_diff_preview_is_rich_text_with_changes_marked() -> None:
    assert is_diff(DIFF) and is_diff("-a\n+b\n c")
    assert not is_diff("pay 5 EUR\nto ACME") and not is_diff("- buy milk\n- call Bob"), "a list is not a diff"
    (heading, rich) = preview_blocks(DIFF)
    assert heading.to_dict()["text"]["text"] == "*What will happen*"
    elements = rich.to_dict()["elements"][0]["elements"]
    styled = {e["text"]: e.get("style") for e in elements if e["text"] != "\n"}
    assert styled["-replicas: 2"] == {"code": True, "strike": True}
    assert styled["+replicas: 3"] == {"code": True, "bold": True}
    assert styled["--- a/app.yaml"] == {"code": True} and styled[" same: line"] == {"code": True}
    long = "-old\n" + "\n".join(f"+line {i}" for i in range(MAX_DIFF_LINES + 4))
    assert "… and 5 more lines" in str(preview_blocks(long)[1].to_dict())
    card = ask_card(run=make_run(), ask=make_ask(preview=DIFF))
    assert card.plain_blocks is None and check_message({"text": card.text, "blocks": card.blocks}) is None


def test_a_text_preview_keeps_its_lines_and_pings_nobody() -> None:
    card = ask_card(run=make_run(), ask=make_ask(preview="pays 5 EUR\nto <!here> ACME"))
    text = all_text(card)
    assert "*What will happen*\npays 5 EUR\nto &lt;!here&gt; ACME" in text
    assert_within_limits(card)


def test_every_variant_of_the_card_keeps_the_preview_it_was_decided_on() -> None:
    decided = make_ask(
        preview=TABLE, status=AskStatus.DECIDED, decision=Decision(verdict=Verdict.APPROVE, user="U0A", at=1.0)
    )
    assert "table" in _types(decided_card(run=make_run(), ask=decided).blocks)
    void = make_ask(preview="pays 5 EUR", status=AskStatus.OBSOLETE, closed=Closed.CHANGED)
    rendered = obsolete_card(run=make_run(), ask=void)
    assert "pays 5 EUR" in all_text(rendered) and "changed before the step ran" in all_text(rendered)
    without = obsolete_card(run=make_run(), ask=make_ask(status=AskStatus.OBSOLETE, closed=Closed.CHANGED))
    assert "The question changed" in all_text(without) and "What will happen" not in all_text(without)


def test_localslack_checks_tables_as_slack_does() -> None:
    row = [{"type": "raw_text", "text": "a"}]
    two = [{"type": "table", "rows": [row]}, {"type": "table", "rows": [row]}]
    problem = check_message({"text": "t", "blocks": two})
    assert problem is not None and "only_one_table_allowed" in problem[1][0]
    assert check_message({"text": "t", "blocks": [{"type": "table", "rows": [row] * 101}]}) is not None
    assert check_message({"text": "t", "blocks": [{"type": "table", "rows": [[{"type": "x"}]]}]}) is not None


def test_app_home_shows_the_preview_as_fields_since_views_have_no_tables() -> None:
    from bot.render.home import home_view
    from localslack.limits import check_view

    run = make_run(channel="C0")
    view = home_view(
        waiting=[(run, make_ask(preview=TABLE)), (run, make_ask(key="a2", preview=TABLE))],
        runs=[],
        link=lambda r, a: None,
    )
    assert check_view(view, surface="home") == []
    assert "table" not in _types(view["blocks"]) and "*pays*\n5 EUR" in [
        f["text"] for b in view["blocks"] for f in b.get("fields") or []
    ]
    assert check_view(
        {"type": "home", "blocks": [{"type": "table", "rows": [[{"type": "raw_text", "text": "a"}]]}]}, surface="home"
    )


def test_an_all_of_card_never_says_more_approvals_than_it_needed() -> None:
    from engine.policy import AskRules

    rules = AskRules(quorum=2, all_of=("S0FIN", "S0LEGAL"), approvers=("S0FIN", "S0LEGAL"))
    votes = {u: Decision(verdict=Verdict.APPROVE, user=u, at=float(i)) for i, u in enumerate(["U0A", "U0B"])}
    final = Decision(verdict=Verdict.APPROVE, user="U0C", at=3.0, counts_for="S0LEGAL")
    ask = make_ask(rules=rules, votes=votes, status=AskStatus.DECIDED, decision=final)
    text = all_text(decided_card(run=make_run(), ask=ask))
    assert "3 of 2" not in text and "3 approvals, one from each of 2 teams" in text, text
