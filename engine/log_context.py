"""What a log line is about: the run, ask, graph and request whose work is under way.

The engine sets these around a run's work (a start, a decision, a pass, a sweep of one run)
and the edge sets the request id (Lambda's ``aws_request_id``, or one per HTTP request on a
server); ``bot.logs`` adds them to every record, so that a structured log line names its run
without each call site passing it. Context variables, so each asyncio task (a click handed
off, the sweeper) carries its own and a value set for one run never leaks into another's
lines.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar, Token
from typing import Final, ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

RUN_ID: Final[ContextVar[str | None]] = ContextVar("run_id", default=None)
ASK_ID: Final[ContextVar[str | None]] = ContextVar("ask_id", default=None)
GRAPH: Final[ContextVar[str | None]] = ContextVar("graph", default=None)
REQUEST_ID: Final[ContextVar[str | None]] = ContextVar("request_id", default=None)

_VARS: Final = {"run_id": RUN_ID, "ask_id": ASK_ID, "graph": GRAPH, "request_id": REQUEST_ID}


def current() -> dict[str, str]:
    """The fields set now (only those that are)."""
    return {name: value for name, var in _VARS.items() if (value := var.get()) is not None}


def fields(**given: str | None) -> dict[str, str]:
    """``current()`` with the ``given`` values that are not None on top."""
    return {**current(), **{k: v for k, v in given.items() if v is not None}}


@contextlib.contextmanager
def about(
    *, run_id: str | None = None, ask_id: str | None = None, graph: str | None = None, request_id: str | None = None
) -> Iterator[None]:
    """Within the block, lines are about these (a None leaves the outer value as it is)."""
    tokens: list[tuple[ContextVar[str | None], Token[str | None]]] = []
    for var, value in ((RUN_ID, run_id), (ASK_ID, ask_id), (GRAPH, graph), (REQUEST_ID, request_id)):
        if value is not None:
            tokens.append((var, var.set(value)))
    try:
        yield
    finally:
        for var, token in reversed(tokens):
            var.reset(token)


def about_run(method: Callable[P, Awaitable[T]]) -> Callable[P, Awaitable[T]]:
    """``method``'s lines are about the run its arguments name: ``run_id`` (and ``ask_key``,
    ``graph``) by name, or a ``run`` record's id and graph."""
    signature = inspect.signature(method)

    @functools.wraps(method)
    async def call(*args: P.args, **kwargs: P.kwargs) -> T:
        given = signature.bind_partial(*args, **kwargs).arguments
        run = given.get("run")
        run_id = given.get("run_id") or getattr(run, "run_id", None)
        graph = given.get("graph") or getattr(run, "graph", None)
        with about(run_id=run_id, ask_id=given.get("ask_key"), graph=graph):
            return await method(*args, **kwargs)

    return call
