"""One entry of ``LocalSlack.calls``: the ``(method, params)`` pair, plus when it came and what it got.

Still a 2-tuple, so ``for method, params in slack.calls`` and ``(method, params) in slack.calls``
keep working; ``at`` lets a test check pacing (Slack allows about one update per second to a
message) and ``result`` what the bot was answered.
"""

from __future__ import annotations

import time
from typing import Any, Self


class Call(tuple[str, dict[str, Any]]):
    """``(method, params)`` with ``at`` (``time.time()`` on arrival) and ``result`` (the JSON answered)."""

    at: float
    result: dict[str, Any] | None

    def __new__(cls, method: str, params: dict[str, Any], *, at: float | None = None) -> Self:
        call = super().__new__(cls, (method, params))
        call.at = time.time() if at is None else at
        call.result = None
        return call

    def __getnewargs__(self) -> tuple[str, dict[str, Any]]:
        return (self[0], self[1])  # so copy/pickle rebuild it through __new__ above

    @property
    def method(self) -> str:
        return self[0]

    @property
    def params(self) -> dict[str, Any]:
        return self[1]

    @property
    def ok(self) -> bool:
        """Answered ``ok: true`` (False while the handler runs and for refusals)."""
        return bool(self.result and self.result.get("ok"))
