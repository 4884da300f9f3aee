"""A store wrapper that loses the response of one write, in-process.

The fault proxy (``tests/support/faults.py``) loses DynamoDB responses at the HTTP level,
where botocore then retries by itself. This wrapper does it one level up, for any
backend: the next write lands in the real store and then raises ``StoreUnavailable``, as
the engine sees a response that never came back once the client gave up. The engine must
recognise its own landed write when it retries, or leave the run for the sweeper.
"""

from __future__ import annotations

from typing import Any

from engine.store import RunStore, StoreUnavailable

WRITES = frozenset({"create", "decide", "claim", "renew", "save", "record_delivery", "note", "index_asks"})


class LossyStore:
    """Delegates everything to ``inner``; after ``lose_next()`` the next write's response is lost."""

    def __init__(self, inner: RunStore) -> None:
        self.inner = inner
        self._lose: set[str] | None = None
        self.lost: list[str] = []  # the writes whose response was lost, in order

    def lose_next(self, operations: frozenset[str] = WRITES) -> None:
        self._lose = set(operations)

    @property
    def armed(self) -> bool:
        return self._lose is not None

    def __getattr__(self, name: str) -> Any:
        target = getattr(self.inner, name)
        if name not in WRITES:
            return target

        def write(*args: Any, **kwargs: Any) -> Any:
            result = target(*args, **kwargs)
            if self._lose is not None and name in self._lose:
                self._lose = None
                self.lost.append(name)
                raise StoreUnavailable(f"{name}: the response was lost (it landed)")
            return result

        return write
