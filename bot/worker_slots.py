"""What ``bot.workers``'s pool keeps per worker (``Slot``) and per piece of work (``Item``).

A piece counts a delivery only when a worker reported it started and then died with it:
a piece the worker never read did nothing, and must not be given up because of another.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from dataclasses import dataclass, field

from bot.perform import _tell as tell
from bot.work import Work


@dataclass(kw_only=True)
class Item:
    seq: int
    line: bytes
    work: Work
    what: str
    started: bool = False  # by the worker that holds it now
    deliveries: int = 0  # starts by workers that died with it


@dataclass(kw_only=True)
class Slot:
    """One worker: its process (None while it restarts) and the work it has in hand."""

    index: int
    process: asyncio.subprocess.Process | None = None
    pipe: asyncio.WriteTransport | None = None
    in_hand: dict[int, Item] = field(default_factory=dict)
    started_at: float = 0.0
    ready: bool = False  # it loaded the graphs and reads its pipe
    young_deaths: int = 0  # in a row, before it was ready
    watcher: asyncio.Task[None] | None = None


def preference(slot: Slot) -> tuple[bool, bool, int]:
    """A ready worker first, then one starting; the least work in hand among them."""
    return (slot.process is None, not slot.ready, len(slot.in_hand))


def tell_given_up(item: Item) -> None:
    """Tell the person whose request it was (best effort: a task; the log line was written)."""
    response_url = getattr(item.work, "response_url", "")
    if response_url:
        text = (
            f"The bot gave up on your request ({item.what}): the worker running it died {item.deliveries} times. "
            "It may be partly done; the run's card or `status` shows where it stands."
        )
        task = asyncio.get_running_loop().create_task(tell(response_url, text))
        _TELLING.add(task)
        task.add_done_callback(_TELLING.discard)


_TELLING: set[asyncio.Task[None]] = set()


def exit_named(code: int) -> str:
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"signal {signal.Signals(-code).name}"
    return f"status {code}"
