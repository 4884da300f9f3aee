"""A mistyped ``/graph`` through the real server: one line with what was likely meant.

Signed slash commands to ``approval-bot serve``: a misspelt subcommand, a forgotten
``run``, a misspelt graph and a bare ``run`` each get one ephemeral line naming what the
person likely meant (and the usage line that applies), never the whole help, and start
nothing. Command text never reaches the store, so one store (SQLite) is enough.
"""

from __future__ import annotations

from localslack import LocalSlack
from tests.e2e.conftest import CHANNEL, Backend, StartBot, UserFor


async def test_typos_get_one_line_with_the_suggestion(
    start_bot: StartBot, sqlite_backend: Backend, local_slack: LocalSlack, user_for: UserFor
) -> None:
    bot = await start_bot(backend=sqlite_backend)
    user = user_for(bot)

    async def ack(text: str) -> str:
        response = await user.slash_command(text=text, user_id="U0ALICE", channel_id=CHANNEL)
        assert response.status == 200
        body = response.body if isinstance(response.body, str) else str(response.body.get("text"))
        assert "\n" not in body.strip(), f"{text!r} got more than one line: {body}"
        return body

    said = await ack("rn deploy billing 1.2.3")
    assert "Unknown subcommand `rn`. Did you mean `run`? Usage: `/graph run &lt;graph&gt; &lt;task text&gt;`" in said
    said = await ack("stauts")
    assert "Did you mean `status`? Usage: `/graph status &lt;run id&gt;`" in said
    # The server loaded its graphs at start-up, so the ack knows their names.
    said = await ack("deploy billing 1.2.3")
    assert "Unknown subcommand `deploy`. Did you mean `/graph run deploy billing 1.2.3`?" in said
    said = await ack("run")  # (the examples and the test graphs: too many to name in a line)
    assert "Name the graph to run. Usage: `/graph run &lt;graph&gt; &lt;task text&gt;` `/graph list` shows the" in said

    # A misspelt graph is found after the ack, where the graphs are: the answer comes by response_url.
    await user.slash_command(text="run deplyo billing 1.2.3", user_id="U0ALICE", channel_id=CHANNEL)
    [reply] = await local_slack.wait_for(lambda: local_slack.responses, timeout=30, what="the ephemeral answer")
    text = str(reply["body"]["text"])
    assert text == ":warning: There is no graph called `deplyo`. Did you mean `/graph run deploy billing 1.2.3`?"
    assert reply["body"]["response_type"] == "ephemeral"
    assert [m for m, _ in local_slack.calls if m == "chat.postMessage"] == [], "nothing started"
