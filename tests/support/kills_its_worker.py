"""Loaded as a graph module: every approved tool of ``tests.support.graphs`` that runs in a
worker process of ``serve --workers`` kills that process (SIGKILL), as a graph's native
crash or an out-of-memory pass would. ``tests/e2e/test_workers_poison_run.py`` uses it.
"""

from __future__ import annotations

import os
import signal
import sys

from tests.support.graphs import DURING_PASS


def _die_in_a_worker() -> None:
    if any(arg.startswith("--read-fd") for arg in sys.argv):
        os.kill(os.getpid(), signal.SIGKILL)


DURING_PASS.append(_die_in_a_worker)
