"""A graph module that turns traces on as docs/traces.md says: Strands' own set-up, from a
module in ``GRAPH_MODULES``. Each finished span is appended as one JSON line to the file
``APPROVAL_BOT_TEST_SPANS`` names (nothing is set up without it)."""

from __future__ import annotations

import os

from strands.telemetry import StrandsTelemetry

_PATH = os.environ.get("APPROVAL_BOT_TEST_SPANS")
if _PATH:
    _OUT = open(_PATH, "a", encoding="utf-8", buffering=1)  # noqa: SIM115 (open for the process's life)
    StrandsTelemetry().setup_console_exporter(out=_OUT, formatter=lambda span: span.to_json(indent=None) + "\n")
