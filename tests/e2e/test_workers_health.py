"""``/healthz`` with ``serve --workers``: 503, with a one-line reason, while no worker is ready.

When every worker dies at start-up (a graph module whose import has a side effect only
one process can have, a store the workers cannot reach), the pool restarts them with a
back-off and the serving process goes on acking, while the work only waits. The health
check exists so that a load balancer or an orchestrator stops sending traffic to such a
process and replaces it: it must not answer 200.
"""

from __future__ import annotations

from typing import Any

import aiohttp

from bot.health import WORKERS_FAILING
from tests.e2e.conftest import Backend, StartBot, eventually


async def test_healthz_is_not_ok_while_every_worker_keeps_dying_at_start(
    start_bot: StartBot, backend: Backend, user_for: Any
) -> None:
    modules = {"GRAPH_MODULES": "tests.support.graphs,tests.support.fails_in_workers"}
    bot = await start_bot(backend=backend, extra_env=modules, args=["--workers", "1"], healthy=False)
    await eventually(lambda: bot.output().count("worker 0 (pid") >= 2, timeout=20, what="the worker to die twice")
    async with aiohttp.ClientSession() as session, session.get(bot.url + "/healthz") as health:
        body, status = await health.json(), health.status
    assert body.get("workers") == 0, body
    assert status == 503 and body.get("ok") is False, (status, body, bot.output()[-1500:])
    assert body.get("reason") == WORKERS_FAILING, body
