"""Named points where a test can make the real bot process die, as a SIGKILL would.

Crash tests must kill the process at an exact step (after the state is saved, after the
cards are posted, before their references are recorded); killing it from outside at
the right microsecond is a race. ``APPROVAL_BOT_CRASH_AT=<point>`` in a bot's
environment makes it kill itself, with SIGKILL, the first time it reaches that point.
Unset (always, outside tests), a crash point costs one dictionary lookup.

In-process tests (``tests/engine/test_interleavings.py``) cannot lose their own process:
``arm(point)`` makes the next ``crash_point(point)`` raise ``SimulatedCrash`` instead, once.
It is a ``BaseException`` so that no ``except Exception`` on the way out mistakes the
death for an error it may handle; the test then treats that engine as dead.
"""

from __future__ import annotations

import os
import signal

ENV = "APPROVAL_BOT_CRASH_AT"

_armed: str | None = None  # set by tests only: the point whose next call raises SimulatedCrash


class SimulatedCrash(BaseException):
    """The process died at a crash point (in-process mode): nothing after it ran."""


def arm(point: str | None) -> None:
    """Make the next ``crash_point(point)`` in this process raise ``SimulatedCrash`` (None: disarm)."""
    global _armed
    _armed = point


def armed() -> str | None:
    """The point still armed, if no call reached it yet."""
    return _armed


def crash_point(name: str) -> None:
    global _armed
    if _armed is not None and _armed == name:
        _armed = None
        raise SimulatedCrash(name)
    if os.environ.get(ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)
