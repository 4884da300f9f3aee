"""A fair share of the channel, through the real server: one person cannot flood it with runs.

A burst of signed ``/graph run`` commands from one person, all at once, starts exactly
``MAX_STARTS_PER_MINUTE`` runs; the others get one ephemeral line each and nothing in the
channel; a burst under ``MAX_WAITING_RUNS`` starts exactly that many. A person with
``MAX_WAITING_RUNS`` unfinished runs is told which to finish first, and may start again
once one has finished: the finished run leaves their book lazily, at that start.
Parametrized over SQLite and DynamoDB.
"""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

from engine.records import RunStatus
from localslack import LocalSlack, LocalSlackUser
from tests.e2e.conftest import CHANNEL, Backend, StartBot, UserFor, all_text, cards, eventually, finished_message

PER_MINUTE = 3
FIRED = 7
WAITING = 2
STARTER = "U0ALICE"


def _refusals(slack: LocalSlack, wording: str) -> list[dict[str, Any]]:
    return [e for e in slack.ephemerals(STARTER) if wording in all_text(e)]


async def _clear_of_a_new_minute() -> None:
    """The per-minute count is per clock minute: keep the burst inside one."""
    into = time.time() % 60
    if into > 50:
        await asyncio.sleep(60.2 - into)


async def _start(slack: LocalSlack, user: LocalSlackUser, task: str, *, cards_before: int) -> dict[str, Any]:
    response = await user.slash_command(text=f"run guarded-write {task}", user_id=STARTER, channel_id=CHANNEL)
    assert response.status == 200
    shown = await slack.wait_for(
        lambda: c if len(c := cards(slack)) > cards_before else None, timeout=30, what=f"the card of {task}"
    )
    return shown[-1]


async def test_a_burst_of_starts_gets_exactly_the_per_minute_share(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for: UserFor
) -> None:
    limits = {"MAX_STARTS_PER_MINUTE": str(PER_MINUTE), "MAX_WAITING_RUNS": "0"}
    bot = await start_bot(backend=backend, extra_env=limits)
    user = user_for(bot)
    await _clear_of_a_new_minute()

    fired = time.time()
    responses = await asyncio.gather(
        *(
            user.slash_command(text=f"run guarded-write burst {i}", user_id=STARTER, channel_id=CHANNEL)
            for i in range(FIRED)
        )
    )
    assert [r.status for r in responses] == [200] * FIRED
    assert all(r.text == "" for r in responses), "every command is acked bare: the limit is checked after the ack"

    refused = await local_slack.wait_for(
        lambda: r if len(r := _refusals(local_slack, "this minute")) >= FIRED - PER_MINUTE else None,
        timeout=30,
        what="the refusals of the starts beyond the share",
    )
    await local_slack.wait_for(
        lambda: c if len(c := cards(local_slack)) >= PER_MINUTE else None, timeout=30, what="the cards"
    )
    store = backend.open_store()
    runs = await eventually(
        lambda: (
            (mine := store.started_by(STARTER, limit=50))
            and all(r.status is RunStatus.WAITING and not r.owes_slack for r in mine)
            and mine
        ),
        what="the started runs to wait with nothing owed",
    )

    assert len(runs) == PER_MINUTE, [r.task for r in runs]
    assert len(cards(local_slack)) == PER_MINUTE, "no card for a refused start"
    announced = [m for m in local_slack.messages(CHANNEL, top_level=True) if "started" in str(m.get("text", ""))]
    assert len(announced) == PER_MINUTE, "nothing in the channel for a refused start"
    assert len(_refusals(local_slack, "this minute")) == FIRED - PER_MINUTE, "one line per refused start"
    for refusal in refused:
        text = all_text(refusal)
        assert "\n" not in text.strip(), text
        assert f"You have started {PER_MINUTE} runs this minute" in text and f"may start {PER_MINUTE} a minute" in text
        wait = re.search(r"try again in (\d+) s", text)
        assert wait and 1 <= int(wait.group(1)) <= 61 - int(fired % 60) + 1, text
    assert "refused_start" in bot.output(), "each refusal is in the audit log"


async def test_a_burst_of_starts_gets_exactly_the_waiting_share(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for: UserFor
) -> None:
    """Every start of the burst is checked before any of their runs is recorded: only the
    person's book, written conditionally, keeps the count exact across them."""
    limits = {"MAX_STARTS_PER_MINUTE": "0", "MAX_WAITING_RUNS": str(WAITING)}
    bot = await start_bot(backend=backend, extra_env=limits)
    user = user_for(bot)

    responses = await asyncio.gather(
        *(
            user.slash_command(text=f"run guarded-write burst {i}", user_id=STARTER, channel_id=CHANNEL)
            for i in range(FIRED)
        )
    )
    assert [r.status for r in responses] == [200] * FIRED

    await local_slack.wait_for(
        lambda: r if len(r := _refusals(local_slack, "unfinished runs")) >= FIRED - WAITING else None,
        timeout=30,
        what="the refusals of the starts beyond the share",
    )
    store = backend.open_store()
    runs = await eventually(
        lambda: (
            (mine := store.started_by(STARTER, limit=50))
            and all(r.status is RunStatus.WAITING and not r.owes_slack for r in mine)
            and mine
        ),
        what="the started runs to wait with nothing owed",
    )
    assert len(runs) == WAITING, [r.task for r in runs]
    assert len(cards(local_slack)) == WAITING, "no card for a refused start"
    assert len(_refusals(local_slack, "unfinished runs")) == FIRED - WAITING, "one line per refused start"
    assert "Traceback" not in bot.output()


async def test_a_person_with_their_share_of_unfinished_runs_finishes_one_first(
    start_bot: StartBot, backend: Backend, local_slack: LocalSlack, user_for: UserFor
) -> None:
    limits = {"MAX_STARTS_PER_MINUTE": "0", "MAX_WAITING_RUNS": str(WAITING)}
    bot = await start_bot(backend=backend, extra_env=limits)
    user = user_for(bot)
    first = await _start(local_slack, user, "one", cards_before=0)
    await _start(local_slack, user, "two", cards_before=1)
    store = backend.open_store()
    waiting = sorted(store.started_by(STARTER), key=lambda r: r.created_at)
    assert [r.task for r in waiting] == ["one", "two"]

    response = await user.slash_command(text="run guarded-write three", user_id=STARTER, channel_id=CHANNEL)
    assert response.status == 200
    (refusal,) = await local_slack.wait_for(
        lambda: _refusals(local_slack, "unfinished runs"), timeout=30, what="the refusal"
    )
    text = all_text(refusal)
    assert "\n" not in text.strip(), text
    assert f"You have {WAITING} unfinished runs (oldest: `{waiting[0].run_id}`, `{waiting[1].run_id}`)" in text
    assert f"may have {WAITING} at once" in text
    assert "/graph cancel" in text and "/graph runs" in text and "/graph pending" in text, text
    assert len(store.started_by(STARTER)) == WAITING, "the refused start recorded nothing"
    assert len(cards(local_slack)) == WAITING

    # One of them finishes: there is room again.
    await user.click(message=first, label="Approve", user_id="U0BOB", channel_id=CHANNEL)
    await local_slack.wait_for(lambda: finished_message(local_slack), timeout=30, what="the first run's end")
    await eventually(
        lambda: (r := store.load(waiting[0].run_id, snapshot=False)) is not None and r.status.terminal,
        what="the first run's end to be saved",
    )
    await _start(local_slack, user, "three", cards_before=WAITING)
    assert len(store.started_by(STARTER)) == WAITING + 1
    assert len(_refusals(local_slack, "unfinished runs")) == 1
