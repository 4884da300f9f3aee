"""``bot.ack_first.AckFirst`` on a real event loop: work waits for acks, but not for ever."""

from __future__ import annotations

import asyncio

from bot.ack_first import AckFirst


async def test_quiet_returns_at_once_when_nothing_is_being_acked() -> None:
    gate = AckFirst(longest_wait=10.0)
    await asyncio.wait_for(gate.quiet(), 1.0)


async def test_work_waits_until_the_last_request_in_flight_is_acked() -> None:
    gate = AckFirst(longest_wait=10.0)
    order: list[str] = []

    async def work() -> None:
        await gate.quiet()
        order.append("work")

    with gate.request():
        with gate.request():
            task = asyncio.create_task(work())
            await asyncio.sleep(0.05)
            order.append("first ack")
        await asyncio.sleep(0.05)
        order.append("second ack")
    await asyncio.wait_for(task, 1.0)
    assert order == ["first ack", "second ack", "work"]
    assert gate.acking == 0


async def test_a_request_arriving_while_work_waits_keeps_it_waiting() -> None:
    gate = AckFirst(longest_wait=10.0)
    started = asyncio.Event()

    async def work() -> None:
        await gate.quiet()
        started.set()

    with gate.request():
        task = asyncio.create_task(work())
        await asyncio.sleep(0.02)
    with gate.request():  # the next one came in the same turn as the ack before it
        await asyncio.sleep(0.05)
        assert not started.is_set()
    await asyncio.wait_for(task, 1.0)


async def test_work_starts_after_longest_wait_if_requests_never_stop() -> None:
    gate = AckFirst(longest_wait=0.1)
    loop = asyncio.get_running_loop()
    with gate.request():
        began = loop.time()
        await asyncio.wait_for(gate.quiet(), 2.0)
        waited = loop.time() - began
    assert 0.09 <= waited < 1.0, waited


async def test_a_request_that_raises_is_still_counted_out() -> None:
    gate = AckFirst()
    try:
        with gate.request():
            raise ValueError("a listener bug")
    except ValueError:
        pass
    assert gate.acking == 0
    await asyncio.wait_for(gate.quiet(), 1.0)
