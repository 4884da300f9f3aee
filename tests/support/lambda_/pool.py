"""Choosing the container that gets the next event: ``LambdaPool``, ``round_robin``.

``LambdaPool`` hands out containers the way Lambda scales (an idle warm one, else a new cold
one) or always a new one; ``round_robin`` cycles a fixed set.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Literal, Self

from tests.support.lambda_.containers import LambdaContainer

ContainerChooser = Callable[[], LambdaContainer]
"""Picks the container that gets the next event (``LambdaPool``, ``round_robin(...)``, ``lambda: c``)."""


class LambdaPool:
    """Containers of one function, handed out the way Lambda scales.

    ``policy="warm"``: an idle live container if there is one (the most recently used, as
    Lambda favours), else a new cold one. ``policy="cold"``: always a new one, so every event
    pays a cold start. Calling the pool picks; ``new()`` adds one explicitly. Containers get
    their logs in ``log_dir`` and are all closed by ``close()``.
    """

    def __init__(
        self,
        env: Mapping[str, str] | None = None,
        *,
        policy: Literal["warm", "cold"] = "warm",
        log_dir: Path | None = None,
        handler: str | None = None,
        function_name: str | None = None,
        timeout: float = 900.0,
        memory_mb: int = 1024,
    ) -> None:
        self.env = dict(env or {})
        self.policy = policy
        self.log_dir = log_dir
        self.handler = handler
        self.function_name = function_name
        self.timeout = timeout
        self.memory_mb = memory_mb
        self.containers: list[LambdaContainer] = []
        self._last_used: dict[str, int] = {}
        self._uses = itertools.count()

    def new(self) -> LambdaContainer:
        name = f"container-{len(self.containers) + 1}"
        container = LambdaContainer(
            self.env,
            handler=self.handler,
            function_name=self.function_name,
            timeout=self.timeout,
            memory_mb=self.memory_mb,
            log_path=None if self.log_dir is None else self.log_dir / f"lambda-{name}.log",
            name=name,
        )
        self.containers.append(container)
        return container

    def __call__(self) -> LambdaContainer:
        chosen: LambdaContainer | None = None
        if self.policy == "warm":
            idle = [c for c in self.containers if c.alive and not c.busy]
            if idle:
                chosen = max(idle, key=lambda c: self._last_used.get(c.name, -1))
        if chosen is None:
            chosen = self.new()
        chosen.reserve()
        self._last_used[chosen.name] = next(self._uses)
        return chosen

    def close(self) -> None:
        """Close every container, all at once (each exit takes an interpreter's teardown)."""
        for container in self.containers:
            container.hang_up()
        for container in self.containers:
            container.close()

    def stderr_text(self) -> str:
        """Every container's log, each under its name."""
        return "\n".join(f"--- {c.name} ---\n{c.stderr_text()}" for c in self.containers)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def round_robin(containers: Sequence[LambdaContainer]) -> ContainerChooser:
    """A chooser cycling through a fixed set of containers, whatever their state."""
    cycle = itertools.cycle(list(containers))
    return lambda: next(cycle)


def _chooser(containers: ContainerChooser | LambdaContainer) -> ContainerChooser:
    if isinstance(containers, LambdaContainer):
        only = containers
        return lambda: only
    return containers
