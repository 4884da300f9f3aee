"""The mention counter: what Slack would turn into a ping or a link, wherever the bot sent it."""

from __future__ import annotations

from localslack import Call, LocalSlack, live_tokens, sent_mentions
from localslack.mentions import message_tokens


def test_live_tokens_are_markup_and_escaped_text_is_not() -> None:
    text = "hi <@U1> <!here> <!subteam^S1|@x> <#C1> <https://a.example|b> &lt;@U2&gt; <!date^1^{date}|d>"
    assert live_tokens(text) == ["<@U1>", "<!here>", "<!subteam^S1|@x>", "<#C1>", "<https://a.example|b>"]
    assert live_tokens("&lt;!channel&gt; @here") == []


def test_only_parsed_texts_count() -> None:
    message = {
        "text": "<@U1>",
        "blocks": [
            {"type": "header", "text": {"type": "plain_text", "text": "<@U2>"}},
            {"type": "section", "text": {"type": "mrkdwn", "text": "<!channel>"}, "fields": [
                {"type": "mrkdwn", "text": "<@U3>"}, {"type": "plain_text", "text": "<@U4>"}
            ]},
            {"type": "context", "elements": [{"type": "mrkdwn", "text": "<!subteam^S5>"}]},
            {"type": "rich_text", "elements": [{"type": "rich_text_section", "elements": [
                {"type": "user", "user_id": "U6"},
                {"type": "broadcast", "range": "here"},
                {"type": "text", "text": "<@U7>"},
            ]}]},
            {"type": "input", "element": {"type": "plain_text_input", "initial_value": "<@U8>"}},
        ],
    }  # fmt: skip
    assert sorted(message_tokens(message)) == sorted(
        ["<@U1>", "<!channel>", "<@U3>", "<!subteam^S5>", "<@U6>", "<!here>"]
    )
    assert message_tokens({"text": "<@U1>", "mrkdwn": False}) == []
    assert message_tokens({"view": {"blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": "<@U9>"}}]}}) == [
        "<@U9>"
    ]


def test_every_call_response_and_ephemeral_is_searched() -> None:
    slack = LocalSlack()
    slack.calls.append(Call("chat.postMessage", {"channel": "C1", "text": "to <@U1>"}))
    slack.calls.append(Call("chat.postMessage", {"channel": "C1", "text": "@here", "link_names": True}))
    slack.calls.append(Call("views.publish", {"view": {"blocks": [{"type": "markdown", "text": "<!everyone>"}]}}))
    slack.responses.append({"body": {"text": "<!here>"}})
    slack.post_ephemeral(channel="C1", user="U1", params={"text": "<#C2>"})
    found = [(s.where, s.target) for s in sent_mentions(slack)]
    assert found[0] == ("chat.postMessage", "@U1")
    assert found[1][0] == "chat.postMessage" and "link_names=True" in found[1][1], "bare @here would ping"
    assert found[2:] == [("views.publish", "!everyone"), ("response_url", "!here"), ("ephemeral", "#C2")]
