"""A tiny condition language over a stored record, judged in Python or rendered for a store.

The decision rules (``engine.decision_rules``) are written once as these nodes. SQLite
judges them here, against the record as a dict (``evaluate``); DynamoDB gets the very
same nodes rendered as a ConditionExpression (``persistence.dynamo_items.render``), so
its atomic write enforces what Python enforces and neither can gain or lose a rule alone.

The semantics are DynamoDB's, so that both judge alike: a path that is absent makes
every comparison false (and so ``Not`` of it true); comparisons only hold between
values of one type (numbers with numbers, strings with strings); ``Contains`` tests a
list's elements or a string's substrings.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

Value = str | int | float | bool


@dataclass(frozen=True)
class Path:
    """A document path: ``Path("asks", key, "rules", "approvers")``."""

    parts: tuple[str, ...]

    def __init__(self, *parts: str) -> None:
        object.__setattr__(self, "parts", tuple(parts))

    def __truediv__(self, part: str) -> Path:
        return Path(*self.parts, part)


@dataclass(frozen=True)
class Exists:
    path: Path


@dataclass(frozen=True)
class Missing:
    path: Path


@dataclass(frozen=True)
class Eq:
    path: Path
    value: Value


@dataclass(frozen=True)
class Gt:
    path: Path
    value: float


@dataclass(frozen=True)
class Le:
    path: Path
    value: float


@dataclass(frozen=True)
class Contains:
    path: Path
    value: str


@dataclass(frozen=True)
class In:
    path: Path
    values: tuple[str, ...]


@dataclass(frozen=True)
class Empty:
    """A list (or string) of size zero; false when absent."""

    path: Path


@dataclass(frozen=True)
class And:
    items: tuple[Condition, ...]

    def __init__(self, *items: Condition) -> None:
        object.__setattr__(self, "items", tuple(items))


@dataclass(frozen=True)
class Or:
    items: tuple[Condition, ...]

    def __init__(self, *items: Condition) -> None:
        object.__setattr__(self, "items", tuple(items))


@dataclass(frozen=True)
class Not:
    item: Condition


Condition = Exists | Missing | Eq | Gt | Le | Contains | In | Empty | And | Or | Not

_ABSENT: Any = object()


def evaluate(condition: Condition, doc: Mapping[str, Any]) -> bool:
    """Whether ``condition`` holds for ``doc`` (a record as plain JSON-like values)."""
    match condition:
        case Exists(path):
            return _at(doc, path) is not _ABSENT
        case Missing(path):
            return _at(doc, path) is _ABSENT
        case Eq(path, value):
            found = _at(doc, path)
            return _same_type(found, value) and found == value
        case Gt(path, value):
            found = _at(doc, path)
            return _number(found) and found > value
        case Le(path, value):
            found = _at(doc, path)
            return _number(found) and found <= value
        case Contains(path, value):
            found = _at(doc, path)
            if isinstance(found, str):
                return value in found
            return isinstance(found, (list, tuple, set, frozenset)) and value in found
        case In(path, values):
            found = _at(doc, path)
            return isinstance(found, str) and found in values
        case Empty(path):
            found = _at(doc, path)
            return isinstance(found, (list, tuple, str, dict)) and len(found) == 0
        case And(items):
            return all(evaluate(item, doc) for item in items)
        case Or(items):
            return any(evaluate(item, doc) for item in items)
        case Not(item):
            return not evaluate(item, doc)
    raise TypeError(f"not a condition: {condition!r}")


def _at(doc: Mapping[str, Any], path: Path) -> Any:
    here: Any = doc
    for part in path.parts:
        if not isinstance(here, Mapping) or part not in here or here[part] is None:
            return _ABSENT
        here = here[part]
    return here


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _same_type(found: Any, value: Value) -> bool:
    if isinstance(value, bool) or isinstance(found, bool):
        return isinstance(value, bool) and isinstance(found, bool)
    if _number(value):
        return _number(found)
    return isinstance(found, type(value))
