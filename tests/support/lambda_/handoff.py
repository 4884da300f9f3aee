"""The work handed off: replaying recorded self-invocations in containers (``replay``).

What the bot hands off through ``LocalLambda`` is recorded, not run; ``replay`` runs it, in
the containers the test chooses, as Lambda's asynchronous queue would.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tests.support.lambda_.containers import LambdaContainer, LambdaError
from tests.support.lambda_.invoke_api import Invocation, LocalLambda
from tests.support.lambda_.pool import ContainerChooser, _chooser


@dataclass(frozen=True)
class Replayed:
    """One recorded invocation run in a container."""

    invocation: Invocation
    container: str
    result: Any = None
    error: LambdaError | None = None


async def replay(
    local_lambda: LocalLambda,
    containers: ContainerChooser | LambdaContainer,
    *,
    invocations: Sequence[Invocation] | None = None,
    concurrently: bool = False,
    until_idle: bool = False,
    raise_errors: bool = True,
    timeout: float | None = None,
) -> list[Replayed]:
    """Run recorded invocations' payloads as events in containers, as Lambda's async queue would.

    By default takes what ``local_lambda`` recorded so far (``invocations`` replays a given
    list instead, e.g. the same one twice, as Lambda's at-least-once delivery may). One after
    the other unless ``concurrently``; with ``until_idle`` it keeps taking and replaying what
    the replayed handlers invoke in turn until nothing new arrives. The first handler error is
    raised unless ``raise_errors`` is False; then errors are in the results.
    """
    choose = _chooser(containers)
    done: list[Replayed] = []

    async def run(invocation: Invocation) -> Replayed:
        container = choose()
        try:
            result = await container.invoke(invocation.event(), timeout=timeout)
        except LambdaError as exc:
            return Replayed(invocation, container.name, error=exc)
        return Replayed(invocation, container.name, result=result)

    batch = list(local_lambda.take() if invocations is None else invocations)
    while batch:
        if concurrently:
            done.extend(await asyncio.gather(*(run(i) for i in batch)))
        else:
            for invocation in batch:
                done.append(await run(invocation))
        if raise_errors:
            failed = next((r for r in done if r.error is not None), None)
            if failed is not None and failed.error is not None:
                raise failed.error
        batch = local_lambda.take() if until_idle else []
    return done
