"""Named points where a test can make the real bot process die, as a SIGKILL would.

Crash tests must kill the process at an exact step (after the state is saved, after the
cards are posted, before their references are recorded); killing it from outside at
the right microsecond is a race. ``APPROVAL_BOT_CRASH_AT=<point>`` in a bot's
environment makes it kill itself, with SIGKILL, the first time it reaches that point.
Unset (always, outside tests), a crash point costs one dictionary lookup.
"""

from __future__ import annotations

import os
import signal

ENV = "APPROVAL_BOT_CRASH_AT"


def crash_point(name: str) -> None:
    if os.environ.get(ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)
