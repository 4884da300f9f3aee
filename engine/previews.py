"""What will happen if a person approves: previews, and the approval bound to them.

``graph_def(..., previews={"send_payout": fn})``: ``fn`` takes an ask's details (what a
rule's ``when`` gets, ``engine.sources.details_of``) and returns what approving it will do,
as text (line breaks kept; a unified diff is shown as one) or a flat dict (shown as a
table). The card shows it under "What will happen", and the preview is part of the ask's
digest: a person approves that preview, not only the tool's input.

The approval binds to it. Right before a pass hands approvals to the graph (the moment the
approved tool call is about to run), the preview of every approved ask that has one is
computed again (``changed``). One that now differs, because the world it describes moved
(a balance, a rate, what a deploy would change), is not sent: the ask is closed as changed,
its answer discarded, and the graph, which gets no answer, raises it again, with the new
preview on a new card. A preview that cannot be computed shows that on the card, and two
failures compare equal: the person approved knowing there was no preview.

Under a preview a card offers no Edit and no Trust (``engine.settle``): an edited call's
preview was never shown to anyone, and Trust would approve later calls unseen.

Both computations run in a worker thread, never on the event loop that acks clicks, and on
a deep copy of the details, so a preview cannot change what the tool runs with.
"""

from __future__ import annotations

import copy
import json
import logging
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from engine.policy import PolicyError
from engine.records import Ask, AskStatus, Verdict
from engine.sources import call_of, gated_tool_use_id

logger = logging.getLogger(__name__)

Preview = str | dict[str, str]  # as stored, shown and compared
PreviewFn = Callable[[Any], Any]

MAX_PREVIEW_CHARS = 2500  # a text preview: the card's section holds 3,000 with its heading
MAX_ROWS = 20  # rows of a dict preview
MAX_KEY_CHARS = 80
MAX_VALUE_CHARS = 300
FAILED = "(the preview could not be computed: {error})"
BINDING = frozenset({Verdict.APPROVE, Verdict.RETRY})  # answers that let the call run as shown


def check_previews(previews: object) -> dict[str, PreviewFn]:
    """``previews`` as ``graph_def`` takes it: names of tools or asks to functions."""
    if previews is None:
        return {}
    if not isinstance(previews, Mapping):
        raise PolicyError(f"previews must map tool or ask names to functions, got {type(previews).__name__}")
    checked: dict[str, PreviewFn] = {}
    for name, fn in previews.items():
        if not isinstance(name, str) or not name:
            raise PolicyError(f"previews: keys are tool or interrupt names, got {name!r}")
        if not callable(fn):
            raise PolicyError(f"previews[{name!r}] must be a function of the ask's details, got {fn!r}")
        checked[name] = fn
    return checked


def preview_fn(previews: Mapping[str, PreviewFn], *, name: str, tool: str | None) -> PreviewFn | None:
    """The preview of an ask, keyed like ``asks``: by the gated tool's name, else the ask's."""
    if tool and tool in previews:
        return previews[tool]
    return previews.get(name)


def compute(fn: PreviewFn, details: Any, *, name: str) -> Preview:
    """``fn``'s preview of ``details``, bounded, as the card shows it; a failure is shown too."""
    try:
        given = fn(copy.deepcopy(details))
    except Exception as error:  # the graph author's code
        logger.warning("previews[%r] raised %s: the card says so", name, type(error).__name__, exc_info=True)
        return FAILED.format(error=type(error).__name__)
    return bounded(given)


def bounded(value: Any) -> Preview:
    """A preview in the one shape the record keeps: cut text, or a flat table of text."""
    if isinstance(value, Mapping):
        rows = list(value.items())
        table: dict[str, str] = {}
        for k, v in rows[:MAX_ROWS]:
            # A blank key would be an attribute name DynamoDB refuses, and shows nothing anyway.
            key = _cut(str(k), MAX_KEY_CHARS) or "(blank)"
            # Keys the cut (or str, or the replacement of surrogates) made equal stay two rows:
            # one overwriting the other would hide a row from the card and from the binding.
            table[_unique(key, table)] = _cut(_text(v), MAX_VALUE_CHARS)
        if len(rows) > MAX_ROWS:
            table[_unique("…", table)] = f"{len(rows) - MAX_ROWS} more rows"
        return table
    return _cut(value if isinstance(value, str) else _text(value), MAX_PREVIEW_CHARS)


def changed(asks: Iterable[Ask], previews: Mapping[str, PreviewFn], *, details: Callable[[Ask], Any]) -> list[str]:
    """The keys of approved asks whose preview, computed now, differs from the one shown.

    Runs right before their answers would be handed to the graph. Only answers that let
    the call run are checked: a rejection or a reply stands whatever the preview says now.
    """
    void: list[str] = []
    for ask in asks:
        decision = ask.decision
        if ask.preview is None or decision is None or decision.verdict not in BINDING:
            continue
        fn = preview_fn(previews, name=ask.name, tool=ask.gated_tool)
        now = compute(fn, details(ask), name=ask.name) if fn is not None else None
        if now != ask.preview:
            logger.warning("ask %s (%s): what will happen changed since its approval; asked again", ask.key, ask.name)
            void.append(ask.key)
    return void


def rebound(
    asks: Iterable[Ask], sending: Iterable[Ask], previews: Mapping[str, PreviewFn], *, details: Callable[[Ask], Any]
) -> list[str]:
    """The interrupt ids of approvals handed to the graph in an earlier pass whose call runs
    only now, and whose preview changed meanwhile.

    Two gates on one call (or a gate, then an interrupt inside the tool): the first answer
    is handed to the graph, which holds it while the call waits for the other; the call
    runs (again, from its start) in the pass that sends the last answer
    (``sending``). An approval binds to its preview until its call runs, so those held
    answers are checked then too. One that changed is forgotten (``engine.prepare``'s stale
    answers, like an approval given before an Edit): its gate asks again, with the new
    preview on a new card, and the call does not run in this pass.
    """
    sending = list(sending)
    calls = {call for a in sending if (call := call_of(a.interrupt_id)) is not None}
    answering = {a.interrupt_id for a in sending}
    latest: dict[str, Ask] = {}
    for ask in sorted(asks, key=lambda a: a.created_at):  # an interrupt asked again: its newest ask
        latest[ask.interrupt_id] = ask
    held = [
        a
        for a in latest.values()
        if a.status is AskStatus.CONSUMED
        and a.interrupt_id not in answering
        and gated_tool_use_id(a.interrupt_id) in calls
    ]
    void = set(changed(held, previews, details=details))
    return [a.interrupt_id for a in held if a.key in void]


def previews_for(
    raised: Sequence[Any], previews: Mapping[str, PreviewFn], *, details: Callable[[Any], Any]
) -> dict[tuple[str, str | None], Preview]:
    """The preview of each raised interrupt that has one, by (interrupt id, node id)."""
    shown: dict[tuple[str, str | None], Preview] = {}
    for one in raised:
        fn = preview_fn(previews, name=one.name, tool=one.gated_tool)
        if fn is not None:
            shown[(one.interrupt_id, one.node_id)] = compute(fn, details(one), name=one.name)
    return shown


def _unique(key: str, taken: Mapping[str, str]) -> str:
    """``key``, or ``key (2)``, ``key (3)``… when ``taken`` has it already."""
    found, n = key, 1
    while found in taken:
        n += 1
        found = f"{key} ({n})"
    return found


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, default=str, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return str(value)


def _cut(text: str, limit: int) -> str:
    text = _NOT_TEXT.sub("\ufffd", text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# A surrogate code point in a Python string is never text (UTF-8 cannot hold it): a preview
# built from what a model wrote may carry one. Kept, it would break the ask's digest and its
# storage; it is shown as the replacement character instead.
_NOT_TEXT = re.compile("[\ud800-\udfff]")
