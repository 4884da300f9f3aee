"""Reading a channel's approval statistics for one person: through the index, bounded, and
only for the graphs they may oversee.

The runs are read with ``RunStore.recent(channel=..., since=..., limit=...)``: the store's
channel index bounded by the window (DynamoDB: one Query of the keys-only ``by_channel``
index and a BatchGetItem per 100 runs; SQLite: its index on the channel), never a scan,
and at most ``MAX_RUNS_READ`` of them, the newest. Nothing is written: statistics cost the
approval cycle nothing.

Who sees a graph's rows is who its policy lets decide its asks
(``engine.oversight.may_oversee_graph``): the people and groups it names, and the
channel's members when its own terms name no approvers. A graph whose definition cannot
be read (removed since its runs) is left out: nobody can be shown to oversee it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from engine.oversight import may_oversee_graph
from engine.policy import Directory, Policy
from engine.stats import MAX_RUNS_READ, GraphStats, tally, window_seconds
from engine.store import RunStore
from engine.threads import in_thread

logger = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class StatsReport:
    """What ``/graph stats`` shows one person."""

    window: float  # seconds read back from ``now``: min(30 days, the run retention)
    since: float
    runs_read: int  # runs of the window read (of every graph; at most ``MAX_RUNS_READ``)
    capped: bool  # the window holds more runs than were read: the oldest are not counted
    graphs: tuple[GraphStats, ...]  # the graphs this person may oversee, by name
    any_runs: bool  # the window has runs at all (of the graph asked for, if one was)


async def read_stats(
    *,
    store: RunStore,
    directory: Directory | None,
    policy: Callable[[str], Policy],
    channel: str,
    user: str,
    graph: str | None,
    now: float,
    retention_seconds: float | None,
) -> StatsReport:
    """The statistics of ``channel``'s runs of the window (of ``graph`` only, if given) that
    ``user`` may see. ``policy`` gives a graph's policy (raising for a graph not defined)."""
    window = window_seconds(retention_seconds)
    since = now - window
    runs = await in_thread(store.recent, channel=channel, since=since, limit=MAX_RUNS_READ + 1)
    capped = len(runs) > MAX_RUNS_READ
    runs = runs[:MAX_RUNS_READ]
    counted = tally((r for r in runs if graph is None or r.graph == graph), since=since)
    shown: list[GraphStats] = []
    for stats in counted:
        try:
            terms = policy(stats.graph)
        except Exception:  # a graph no longer defined: nobody can be shown to oversee it
            logger.info("stats: graph %s is not defined here; its runs are left out", stats.graph)
            continue
        if await may_oversee_graph(directory, terms, user, channel=channel):
            shown.append(stats)
    return StatsReport(
        window=window, since=since, runs_read=len(runs), capped=capped, graphs=tuple(shown), any_runs=bool(counted)
    )
