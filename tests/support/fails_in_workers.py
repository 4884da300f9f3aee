"""A graph module that imports in the serving process and fails in every worker process.

It stands for a module with an import-time side effect only one process can have (it binds
a metrics port, takes a single-instance lock, opens a device): fine without workers, fatal
in each worker of ``serve --workers``. ``tests/e2e/test_workers_health.py`` uses it.
"""

from __future__ import annotations

import sys

if any(arg.startswith("--read-fd") for arg in sys.argv):
    raise RuntimeError("this module's import-time resource is already taken (by the serving process)")
