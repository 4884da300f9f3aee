"""What an edited tool input may hold: numbers exactly as typed, bounded nesting, text only.

An approver who types ``123456789012345678901234567890123456789012`` into the Edit modal
approves that number; Python's ``json`` would hand the tool ``1e+42`` once anything
downstream turns it into a float, and ``1e-400`` silently becomes ``0.0``. So numbers are
read with hooks that keep the text of any number that would not reach the tool exactly,
and :func:`input_problem` names the field it is in, for an inline error under the input.
Deep nesting (which later turns into a ``RecursionError`` far from the modal) and strings
that are not text (an unpaired surrogate from ``"\\ud800"``) are refused the same way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Final

from bot.payloads import not_text

MAX_DEPTH: Final = 32
"""Objects and lists inside each other, the input object itself being level 1."""
MAX_EXACT_INT: Final = 2**53
"""Beyond it a number stops being exact in a double (JSON readers, JavaScript, many tools)."""
_SHOWN: Final = 40  # characters of a refused number quoted in the error


@dataclass(frozen=True)
class Refused:
    """A number as typed that the tool would not get exactly, and why."""

    typed: str
    why: str


def exact_int(text: str) -> int | Refused:
    """``parse_int``: integers within ±2**53; the digit count is checked before ``int()``
    so a 4,000-digit number costs nothing (and never meets Python's digit limit)."""
    digits = text.lstrip("-")
    if len(digits) > 16 or abs(int(text)) > MAX_EXACT_INT:
        return Refused(text, f"is too large a whole number to pass on exactly (at most ±{MAX_EXACT_INT:,})")
    return int(text)


def exact_float(text: str) -> float | Refused:
    """``parse_float``: a number with a fraction or exponent, only when the float the tool
    gets reads back as the number typed (``0.1`` does; ``1e-400``, ``1e400`` and
    ``0.30000000000000001`` do not)."""
    value = float(text)
    if not math.isfinite(value):
        return Refused(text, "is too large a number")
    try:
        exact = Decimal(repr(value)) == Decimal(text)
    except InvalidOperation:  # float() took it, so this does not happen; refuse all the same
        exact = False
    if not exact:
        return Refused(text, f"would reach the tool as {value!r}; write the number it should get")
    return value


def input_problem(value: Any) -> str | None:
    """The first problem in a parsed input, naming where it is, or None when it may go on."""
    stack: list[tuple[Any, tuple[str, ...]]] = [(value, ())]
    while stack:
        node, path = stack.pop()
        if isinstance(node, dict | list) and len(path) >= MAX_DEPTH:
            return f"The input is nested more than {MAX_DEPTH} levels deep (at {_where(path)}); flatten it."
        if isinstance(node, Refused):
            typed = node.typed if len(node.typed) <= _SHOWN else f"{node.typed[:_SHOWN]}… ({len(node.typed)} chars)"
            return f"The number at {_where(path)} ({typed}) {node.why}."
        if isinstance(node, str) and (problem := not_text(node)):
            return f"The text at {_where(path)} cannot be used: {problem}."
        if isinstance(node, dict):
            for key, item in reversed(node.items()):
                if problem := not_text(key):
                    return f"A key in {_where(path)} cannot be used: {problem}."
                stack.append((item, (*path, key)))
        elif isinstance(node, list):
            stack += [(item, (*path, str(index))) for index, item in reversed(list(enumerate(node)))]
    return None


def _where(path: tuple[str, ...]) -> str:
    shown = "/".join(part if len(part) <= _SHOWN else part[:_SHOWN] + "…" for part in path[:6])
    return (shown + ("/…" if len(path) > 6 else "")) if path else "the top level"
