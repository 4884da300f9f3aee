"""A graph module that imports in the serving process and fails in worker processes.

It stands for a module with an import-time side effect only one process can have (it binds
a metrics port, takes a single-instance lock, opens a device): fine without workers, fatal
in each worker of ``serve --workers`` (``$FAILS_IN_WORKER``: only in the worker of that
index). ``tests/e2e/test_workers_health.py`` and ``test_workers_sweeper.py`` use it.
"""

from __future__ import annotations

import os
import sys

_ONLY = os.environ.get("FAILS_IN_WORKER")

if any(arg.startswith("--read-fd") for arg in sys.argv) and (not _ONLY or f"--index={_ONLY}" in sys.argv):
    raise RuntimeError("this module's import-time resource is already taken (by the serving process)")
