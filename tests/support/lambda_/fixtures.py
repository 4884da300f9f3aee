"""The pytest fixtures, ``local_lambda`` and ``lambda_pool``.

Registered through the package (``pytest_plugins = ["tests.support.lambda_"]`` in
``tests/conftest.py``), which re-exports them: pytest collects fixtures from the plugin
module's attributes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.support.lambda_.invoke_api import LocalLambda
from tests.support.lambda_.pool import LambdaPool


@pytest.fixture
def local_lambda() -> Iterator[LocalLambda]:
    """A started ``LocalLambda``; hand ``local_lambda.env()`` to the bot's containers."""
    with LocalLambda() as server:
        yield server


@pytest.fixture
def lambda_pool(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Callable[..., LambdaPool]]:
    """Factory: ``lambda_pool(env, policy="warm", handler=None, timeout=900.0)``; closed after the test.

    Logs go to the test's ``tmp_path``; when the test failed, each container's log tail is printed.
    """
    pools: list[LambdaPool] = []

    def make(env: Mapping[str, str] | None = None, **options: Any) -> LambdaPool:
        log_dir = tmp_path / f"lambda-pool-{len(pools) + 1}"
        log_dir.mkdir(exist_ok=True)
        pool = LambdaPool(env, log_dir=log_dir, **options)
        pools.append(pool)
        return pool

    yield make
    for pool in pools:
        pool.close()
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        for pool in pools:
            for container in pool.containers:
                print(f"--- {container.name} ---\n{container.stderr_text()[-4000:]}")
