"""Worker threads of the bot's own, apart from the ones graph code uses.

Strands runs synchronous tools in asyncio's default thread pool (a handful of threads on
a small machine). Store calls, lease renewals and state encoding must never wait behind
a long-running tool: a renewal that cannot run lets the lease lapse, another process
takes the run over and the approved tool runs twice; a decision inside a modal's ack
that waits for a thread misses Slack's 3 seconds. So they get a pool of their own.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

_POOL = ThreadPoolExecutor(max_workers=16, thread_name_prefix="approval-bot-io")
# Lease renewals get threads of their own too: during a store outage every other store call
# can sit in botocore's retries for minutes, and a renewal queued behind them would let
# the lease lapse while the pass it protects is still running.
_LEASES = ThreadPoolExecutor(max_workers=4, thread_name_prefix="approval-bot-lease")


async def in_thread(fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """``asyncio.to_thread``, on the bot's own pool."""
    return await asyncio.get_running_loop().run_in_executor(_POOL, functools.partial(fn, *args, **kwargs))


async def in_lease_thread(fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """Like ``in_thread``, on the pool only lease renewals use."""
    return await asyncio.get_running_loop().run_in_executor(_LEASES, functools.partial(fn, *args, **kwargs))
