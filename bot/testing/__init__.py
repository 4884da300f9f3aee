"""Test your approval flows: the real bot, offline, driven from a synchronous test.

    from bot.testing import Rehearsal

    with Rehearsal(graph_modules=["graphs.refunds"]) as r:
        run = r.start("refunds A-1001", user="U0REQUESTER")
        run.card().approve(user="U0ALICE")
        assert run.end().status == "completed"

docs/testing.md says what runs for real and where the limits are. The local Slack and the
demo's stack it runs on are imported only when a rehearsal starts, so importing this
package costs nothing where they are not installed.
"""

from bot.testing.driver import Refused, RehearsalError
from bot.testing.rehearsal import Rehearsal
from bot.testing.runs import Card, End, RehearsedRun

__all__ = ["Card", "End", "Refused", "Rehearsal", "RehearsalError", "RehearsedRun"]
