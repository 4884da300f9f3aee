"""Which rule of ``asks={name: [AskPolicy, ...]}`` applies to an ask: rules by content.

The first rule whose ``when`` holds for the ask's details applies (a rule without ``when``
always holds); when none holds, the graph's own terms do. The choice is made once, when
the ask is raised, in the pass that raised it (never on the path that acks a click), and
its terms are frozen into the ask (``AskRules``): the same question raised again keeps its
ask and its terms, so a ``when`` that would now say otherwise (it reads the clock, a
random number, a remote service) cannot move an open ask to another rule. A question
raised again with other content is a new ask and is judged anew.

``when`` gets a deep copy of the details, so a ``when`` that changes what it was given
cannot change what the card shows or what the tool runs with. A ``when`` that raises or
returns something other than True or False fails closed: the strictest rule of the list
applies (``strictest``), never an automatic approval, and the log says why once, when the
ask is raised. A ``when`` runs in the pass, under the run's lease (renewed meanwhile): a slow
one delays the pass, never a click's acknowledgement; one slower than ``SLOW_WHEN_SECONDS``
is named in the log. It is not cut short (a thread cannot be stopped safely).

An Edit changes the content the rule was chosen by. Right before a pass hands an Edit to
the graph, the rules are asked again about the edited input (``moved_by_edit``): an edit
they would put under another rule (say an amount past the one-approver threshold, or into
an automatic rejection) is not sent. The ask is closed as changed and the graph, which gets
no answer, asks again about the call it proposed: one person's edit never passes a rule
that was not the one its card showed.
"""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from engine.policy import AskPolicy, AskRules

if TYPE_CHECKING:
    from engine.policy import Policy
    from engine.records import Ask

logger = logging.getLogger(__name__)

FAIL_CLOSED = "fail-closed"
SLOW_WHEN_SECONDS = 0.5  # a when this slow holds up the pass (and its lease): said in the log


def choose(rules: AskPolicy | Sequence[AskPolicy] | None, *, details: Any, name: str) -> tuple[AskPolicy, str | None]:
    """The rule that applies to an ask about ``name`` with ``details``, and its label."""
    if rules is None:
        return AskPolicy(), None
    listed = (rules,) if isinstance(rules, AskPolicy) else tuple(rules)
    for index, rule in enumerate(listed):
        if rule.when is None:
            return rule, label_of(rule, index=index, name=name, listed=listed)
        began = time.monotonic()
        try:
            holds = rule.when(copy.deepcopy(details))
        except Exception as error:  # the graph author's code: any failure fails closed
            return _failed(listed, name=name, index=index, why=f"raised {type(error).__name__}: {error}")
        if (took := time.monotonic() - began) > SLOW_WHEN_SECONDS:
            logger.warning(
                "asks[%r]: the when of rule %d took %.1f s; keep it to the details given", name, index + 1, took
            )
        if not isinstance(holds, bool):
            return _failed(listed, name=name, index=index, why=f"returned {type(holds).__name__}, not True or False")
        if holds:
            return rule, label_of(rule, index=index, name=name, listed=listed)
    return AskPolicy(), None  # no rule holds: the graph's terms


def label_of(rule: AskPolicy, *, index: int, name: str, listed: Sequence[AskPolicy]) -> str | None:
    """The rule's label; an unlabelled rule of a list is named by its place in it."""
    if rule.label is not None:
        return rule.label
    return f"{name} rule {index + 1}" if len(listed) > 1 or rule.when is not None else None


def strictest(listed: Sequence[AskPolicy]) -> AskPolicy:
    """The rule that lets the least through: an automatic rejection, else the rule asking
    the most approvals (an ``all_of`` rule: at least one per team), from the most teams,
    from the fewest named people; never an automatic approval (with only those, the
    graph's terms: a person decides)."""
    candidates = [r for r in listed if r.auto != "approve"]
    if not candidates:
        return AskPolicy()

    def severity(rule: AskPolicy) -> tuple[int, int, int, int, int]:
        # An all_of rule's quorum is at least its entries (``Policy.rules_for``), and one
        # approval from each team is stricter than as many from anyone: it ranks above a
        # rule naming people, though it names no approvers itself.
        teams = len(rule.all_of or ())
        named = rule.approvers is not None
        return (rule.auto == "reject", max(rule.quorum or 1, teams), teams, named, -len(rule.approvers or ()))

    return max(candidates, key=severity)


def _failed(listed: Sequence[AskPolicy], *, name: str, index: int, why: str) -> tuple[AskPolicy, str]:
    chosen = strictest(listed)
    position = listed.index(chosen) if chosen in listed else -1
    label = label_of(chosen, index=position, name=name, listed=listed) if position >= 0 else None
    logger.warning(
        "asks[%r]: the when of rule %d (%s) %s; failing closed with the strictest rule (%s)",
        name,
        index + 1,
        label_of(listed[index], index=index, name=name, listed=listed),
        why,
        label or "the graph's terms",
    )
    return chosen, f"{label or 'graph terms'} ({FAIL_CLOSED})"


def moved_by_edit(asks: Iterable[Ask], policy: Policy, *, now: float, default_expires_after: float) -> dict[str, str]:
    """The asks decided by an Edit whose edited input the policy would judge by other terms
    than those the ask was raised with, by key, with the rule it would fall under (its label).

    Runs in the pass (the ``when`` functions are the graph author's code), right before the
    answers are handed to the graph. An Edit of an ask whose call is unknown fails closed.
    A Retry on a "may have acted" card sends its Edit again (``engine.takeover``): it is
    judged the same way, under the terms the first card had.
    """
    moved: dict[str, str] = {}
    for ask in asks:
        edited = _edit_sent(ask)
        if edited is None:
            continue
        if ask.tool is None or not isinstance(edited, dict):
            moved[ask.key] = "unknown"
            continue
        terms = policy.rules_for(
            name=ask.name, tool=ask.tool.name, now=now, default_expires_after=default_expires_after, details=edited
        )
        if _who_decides(terms) != _who_decides(ask.rules):
            logger.warning(
                "ask %s (%s): an edit moved the call from rule %r to rule %r; not sent, asked again",
                ask.key,
                ask.name,
                ask.rules.label,
                terms.label,
            )
            moved[ask.key] = terms.label or "the graph's terms"
    return moved


def _edit_sent(ask: Ask) -> Any:
    """The edited input ``ask``'s answer would send the graph, if its answer sends one."""
    from engine.records import Verdict

    decision = ask.decision
    if decision is None or decision.expired:
        return None
    if decision.verdict is Verdict.EDIT:
        return decision.edited_input if decision.edited_input is not None else "unknown"
    again = ask.retry_of.response if ask.retry_of is not None else None
    if decision.verdict in (Verdict.RETRY, Verdict.APPROVE) and isinstance(again, dict) and "edited_input" in again:
        return again["edited_input"]
    return None


def _who_decides(terms: AskRules) -> tuple[Any, ...]:
    """The terms that say who decides and how (not the times, which depend on when it was asked)."""
    return (terms.label, terms.approvers, terms.quorum, terms.all_of, terms.auto, terms.allow_self)
