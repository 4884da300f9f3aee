"""How a question reads on a card: Strands' ``handoff_to_user`` asks, it does not seek approval.

Every other card's buttons say Approve, Reject and Reply. A question (``engine.sources.
is_question``) offers only Reply and Reject, and a person asked "Which region?" should not
have to reply to an approval nor reject a question: the buttons read **Answer** and
**Decline**, and the decided card says who answered or declined. Only the words change:
the action ids stay ``ask:reply`` and ``ask:reject``, so the card, App Home, the modals,
the sweeper's expiry and the decision rules on both stores treat a question exactly like
any Reply or Reject.
"""

from __future__ import annotations

from typing import Final

from engine.records import Verdict

QUESTION_TITLE: Final = "Question from the agent"
QUESTION_LABELS: Final = {Verdict.REPLY: "Answer", Verdict.REJECT: "Decline"}
QUESTION_STYLES: Final = {Verdict.REPLY: "primary"}  # declining a question is no danger
QUESTION_OUTCOMES: Final = {Verdict.REPLY: "💬 Answered", Verdict.REJECT: "🙅 Declined"}
QUESTION_NEEDS: Final = "asks a question"
