"""Injected Web API failures: the rate limits and server errors that real Slack serves now and then.

The bot must survive a ``429`` (slack_sdk's rate-limit handler waits ``Retry-After`` and tries
again) and a ``5xx`` (the server-error handler backs off and tries again), but real Slack
only fails when it wants to. A test plans failures here, in-process, while the bot under test
is a separate process that only sees HTTP; each planned failure answers exactly as Slack does
and never reaches the method's handler, so nothing is posted and nothing lands in ``calls``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any, Final

from aiohttp import web

RequestPredicate = Callable[[Mapping[str, Any]], bool]
"""Called with a request's decoded parameters (token removed); True means "fail this one"."""

_log = logging.getLogger(__name__)

# What Slack's edge answers for a 5xx: an HTML page, not JSON, so clients see a server error
# rather than an API error (slack_sdk finds no JSON body and hands the status to its handlers).
_SERVER_ERROR_PAGE: Final = (
    "<html><head><title>Slack is having trouble</title></head>"
    "<body><h1>{status} {reason}</h1><p>Injected by LocalSlack.</p></body></html>"
)


@dataclass(kw_only=True, eq=False)
class Fault:
    """One planned failure; the handle ``LocalSlack.inject_failures`` returns, to assert on later."""

    method: str
    status: int
    times: int | None
    """How many matching calls fail; None fails every one until ``clear_failures()``."""
    retry_after: int
    when: RequestPredicate | None = None
    hold: float = 0.0
    """Seconds to hold the answer of a call that still succeeds (``Faults.hold``); 0 for a failure."""
    served: int = 0
    """How many times this failure was answered."""

    @property
    def remaining(self) -> int | None:
        """Failures still to serve (None: unlimited)."""
        return None if self.times is None else max(self.times - self.served, 0)

    def matches(self, *, method: str, params: Mapping[str, Any]) -> bool:
        if method != self.method or self.remaining == 0:
            return False
        if self.when is None:
            return True
        try:
            return bool(self.when(params))
        except Exception:
            # A broken predicate is a test bug: say so, and let the call through rather than
            # answering with aiohttp's own 500, which the bot's retry handler would retry.
            _log.exception("LocalSlack fault predicate for %s raised; the call is not failed", method)
            return False


@dataclass
class Faults:
    """The planned failures of one ``LocalSlack`` and the record of those served."""

    planned: list[Fault] = field(default_factory=list)
    served: list[dict[str, Any]] = field(default_factory=list)
    """Every failure answered, in order: ``{"method", "status", "params"}``."""

    def inject(
        self,
        *,
        method: str,
        status: int,
        times: int | None = 1,
        retry_after: int = 1,
        when: RequestPredicate | None = None,
    ) -> Fault:
        """Plan a failure; see ``LocalSlack.inject_failures``."""
        if status != 429 and not 500 <= status <= 599:
            raise ValueError(f"status must be 429 or a 5xx, not {status}")
        if times is not None and times < 1:
            raise ValueError("times must be at least 1 (or None for every call)")
        if retry_after < 0:
            raise ValueError("retry_after is whole seconds, at least 0")
        fault = Fault(method=method, status=status, times=times, retry_after=retry_after, when=when)
        self.planned.append(fault)
        return fault

    def hold(
        self,
        *,
        method: str,
        seconds: float,
        times: int | None = 1,
        when: RequestPredicate | None = None,
    ) -> Fault:
        """Plan a slow answer: the call takes effect at once, its answer leaves ``seconds`` later.

        Held longer than the client's timeout, it is Slack's nastiest failure: the message
        was posted (or changed) but the caller saw a timeout and does not know it.
        Recorded in ``served`` with status 200 and ``hold``.
        """
        if seconds <= 0:
            raise ValueError("seconds must be positive")
        if times is not None and times < 1:
            raise ValueError("times must be at least 1 (or None for every call)")
        fault = Fault(method=method, status=200, times=times, retry_after=0, when=when, hold=seconds)
        self.planned.append(fault)
        return fault

    def clear(self) -> None:
        """Drop every planned failure; what was served stays on record."""
        self.planned.clear()

    def take(self, *, method: str, params: Mapping[str, Any]) -> Fault | None:
        """The first planned failure that applies to this call, counted as served, or None."""
        for fault in self.planned:
            if fault.matches(method=method, params=params):
                fault.served += 1
                served = {"method": method, "status": fault.status, "params": dict(params)}
                self.served.append(served | ({"hold": fault.hold} if fault.hold else {}))
                return fault
        return None


def fault_response(fault: Fault) -> web.Response:
    """Slack's answer for the failure: a 429 with ``Retry-After`` and ``ratelimited``, or a 5xx page."""
    if fault.status == 429:
        return web.json_response(
            {"ok": False, "error": "ratelimited"},
            status=429,
            headers={"Retry-After": str(fault.retry_after)},
        )
    try:
        reason = HTTPStatus(fault.status).phrase
    except ValueError:
        reason = "Server Error"
    return web.Response(
        status=fault.status,
        text=_SERVER_ERROR_PAGE.format(status=fault.status, reason=reason),
        content_type="text/html",
    )


def contains(needle: str) -> RequestPredicate:
    """A predicate for ``when=``: the call's ``text`` or ``blocks`` contain ``needle``.

    Lets a test fail only, say, the final summary post of a run and not the cards before it.
    """

    def predicate(params: Mapping[str, Any]) -> bool:
        text = params.get("text")
        blocks = params.get("blocks")
        return (isinstance(text, str) and needle in text) or (
            blocks is not None and needle in json.dumps(blocks, ensure_ascii=False)
        )

    return predicate
