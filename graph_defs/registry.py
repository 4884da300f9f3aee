"""The registry of graph definitions.

A graph definition is a function with no required parameters that builds a
``strands.multiagent.Graph``. The bot never keeps a graph object between requests: it
calls the definition anew for every start and every resume (possibly in another
process) and restores the saved state into the fresh graph. That is why a definition
is registered as a factory, by a stable name, rather than as a built graph.

This module must stay cheap to import: the Slack ack path imports ``graph_defs`` and
importing strands takes seconds. Strands is only imported by ``build_graph`` and by the
graph modules themselves, which ``load_graph_modules`` imports when they are needed.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypeVar

from engine.policy import AskPolicy, Policy, PolicyError
from engine.previews import check_previews

if TYPE_CHECKING:
    from strands.multiagent.graph import Graph

__all__ = [
    "AskPolicy",
    "GraphDefinition",
    "GraphDefinitionError",
    "GraphModuleError",
    "UnknownGraph",
    "build_graph",
    "get_graph",
    "graph_def",
    "list_graphs",
    "load_graph_modules",
]

NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")
"""Graph names are typed in a slash command, so they are short, lower case and space free."""

_PACKAGE = "graph_defs"
# The package's own machinery: not graph modules, so load_graph_modules skips them.
_INFRASTRUCTURE_MODULES = frozenset({"registry", "scripted", "models", "review", "answers", "examples"})
_EXAMPLES = f"{_PACKAGE}.examples"

GraphFactory = Callable[[], "Graph"]
F = TypeVar("F", bound=Callable[[], "Graph"])


class GraphDefinitionError(ValueError):
    """A graph definition is invalid (bad name, duplicate name, bad policy, wrong return type)."""


class GraphModuleError(ImportError):
    """A module with graph definitions could not be imported."""

    def __init__(self, *, module: str, cause: BaseException) -> None:
        super().__init__(f"could not import graph module {module!r}: {type(cause).__name__}: {cause}")
        self.module = module
        self.cause = cause

    @property
    def not_found(self) -> bool:
        """Whether the module itself (or a package it is in) does not exist, as opposed to
        existing and failing to import (a ``ModuleNotFoundError`` for one of *its* imports
        is the module's own problem, not a wrong name)."""
        if not isinstance(self.cause, ModuleNotFoundError) or not self.cause.name:
            return False
        missing = self.cause.name
        return self.module == missing or self.module.startswith(missing + ".")


class UnknownGraph(LookupError):
    """No graph definition is registered under the requested name."""

    def __init__(self, *, name: str, known: Sequence[str]) -> None:
        choices = ", ".join(known) if known else "none are registered"
        super().__init__(f"unknown graph {name!r}; known graphs: {choices}")
        self.name = name
        self.known = list(known)


@dataclass(frozen=True)
class GraphDefinition:
    """One registered graph: its name, a one-line description for ``/graph list``, its
    factory, and its approval policy (who may start it and decide its asks)."""

    name: str
    description: str
    factory: GraphFactory
    module: str
    policy: Policy = field(default_factory=Policy)


_registry: dict[str, GraphDefinition] = {}


def _same_function(a: Callable[..., object], b: Callable[..., object]) -> bool:
    """Whether two functions are the same definition, even from a re-import of its module.

    Re-importing a module (``importlib.reload``, or a test that imports a module file
    under the same name twice) creates a new function object for the same definition,
    which must not count as a duplicate.
    """
    return (getattr(a, "__module__", None), getattr(a, "__qualname__", None)) == (
        getattr(b, "__module__", None),
        getattr(b, "__qualname__", None),
    )


def graph_def(
    name: str,
    *,
    description: str = "",
    approvers: Sequence[str] | None = None,
    quorum: int = 1,
    expires_after: float | None = None,
    allow_self_approval: bool = False,
    starters: Sequence[str] | None = None,
    remind_after: Sequence[float] | None = None,
    escalate_to: Sequence[str] | None = None,
    escalate_after: float | None = None,
    asks: Mapping[str, AskPolicy | Sequence[AskPolicy]] | None = None,
    idempotent: Sequence[str] | None = None,
    previews: Mapping[str, Callable[[Any], Any]] | None = None,
) -> Callable[[F], F]:
    """Register the decorated function as the factory of the graph called ``name``.

    The other keywords are the graph's approval policy (``engine.policy`` explains each):
    Slack user ids (``U…``) or user-group ids (``S…``) for ``approvers``, ``starters`` and
    ``escalate_to``, seconds for the waits, and ``asks`` for stricter terms on particular
    tools or interrupts (``asks={"send_payment": AskPolicy(quorum=2)}``), or a list of
    rules by content where the first whose ``when`` holds applies (``AskPolicy(when=...,
    label=..., auto="approve" | "reject")``: ``engine.rule_choice``). The policy is
    checked here, when the module is imported, so a mistake stops the bot at start.

    ``idempotent`` names tools or asks whose approved call may safely run twice (it
    passes ``approval_id`` on as an idempotency key, or only reads). When the process
    running an approved call dies before saving, the bot cannot know whether the call
    ran: it posts a "may have acted" card (Retry or Skip) for it, unless it is named
    here, in which case it simply sends the approval again.

    ``previews`` maps tool or ask names to functions of the ask's details returning what
    approving it will do (text, or a flat dict shown as a table): the card shows it under
    "What will happen", and the approval binds to it (``engine.previews``).

    The function is returned unchanged, so it can still be called directly (e.g. in tests).

    Raises:
        GraphDefinitionError: ``name`` does not match ``NAME_PATTERN``, a policy keyword has
            a value the bot cannot enforce (the message names it), or another function
            already registered the name.
    """
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        raise GraphDefinitionError(
            f"invalid graph name {name!r}: use 1-40 characters from a-z, 0-9, '_' and '-', "
            "starting with a letter or digit"
        )
    try:
        policy = Policy.declare(
            approvers=approvers,
            quorum=quorum,
            expires_after=expires_after,
            allow_self_approval=allow_self_approval,
            starters=starters,
            remind_after=remind_after,
            escalate_to=escalate_to,
            escalate_after=escalate_after,
            asks=asks,
        )
        if idempotent is not None:
            if isinstance(idempotent, str) or not all(isinstance(n, str) and n for n in idempotent):
                raise PolicyError("idempotent must be a list of tool or ask names")
            policy = replace(policy, idempotent=frozenset(idempotent))
        if previews is not None:
            policy = replace(policy, previews=check_previews(previews))
    except PolicyError as error:
        raise GraphDefinitionError(f"graph {name!r}: {error}") from None

    def register(factory: F) -> F:
        if not callable(factory):
            raise GraphDefinitionError(f"@graph_def({name!r}) must decorate a function, got {factory!r}")
        module = getattr(factory, "__module__", None) or "<unknown>"
        existing = _registry.get(name)
        if existing is not None and not _same_function(existing.factory, factory):
            raise GraphDefinitionError(
                f"graph {name!r} is defined twice: by {existing.module}.{_qualname(existing.factory)} "
                f"and by {module}.{_qualname(factory)}"
            )
        _registry[name] = GraphDefinition(
            name=name, description=" ".join(description.split()), factory=factory, module=module, policy=policy
        )
        return factory

    return register


def _qualname(func: Callable[..., object]) -> str:
    return str(getattr(func, "__qualname__", repr(func)))


def unregister(name: str) -> None:
    """Forget a definition; for tests that register throwaway graphs."""
    _registry.pop(name, None)


def _package_modules(*, examples: bool) -> list[str]:
    """Public graph modules of the ``graph_defs`` package (and of ``graph_defs.examples``
    when ``examples``), in name order."""
    names: list[str] = []
    for package_name in (_PACKAGE, _EXAMPLES) if examples else (_PACKAGE,):
        package = importlib.import_module(package_name)
        names.extend(
            f"{package_name}.{info.name}"
            for info in pkgutil.iter_modules(package.__path__)
            if not info.name.startswith("_") and info.name not in _INFRASTRUCTURE_MODULES
        )
    return sorted(names)


def load_graph_modules(extra: Sequence[str] = (), *, examples: bool = False) -> list[str]:
    """Import every graph module of the package plus ``extra`` and return their names.

    ``extra`` is the caller's list (the bot passes its ``GRAPH_MODULES`` setting) and
    ``examples`` says whether the example graphs of ``graph_defs.examples`` are wanted
    too (the bot passes its ``EXAMPLE_GRAPHS`` setting; off by default, so that a
    deployment offers only the graphs its team wrote). This function deliberately reads
    no environment itself. Importing an already imported module is a no-op, so calling
    this again is cheap and harmless; a module imported earlier stays registered.

    Modules are imported from ``sys.path`` as it is: putting the current directory on it,
    for ``GRAPH_MODULES=refunds`` next to ``refunds.py``, is the console script's job
    (``bot.cli``), not a side effect of loading graphs.

    Raises:
        GraphModuleError: a module failed to import; names the module and the cause
            (a ``GraphDefinitionError`` when two modules define the same graph name).
    """
    wanted = _package_modules(examples=examples)
    for raw in extra:
        name = raw.strip()
        if name and name not in wanted:
            wanted.append(name)
    for module in wanted:
        try:
            importlib.import_module(module)
        except Exception as error:
            raise GraphModuleError(module=module, cause=error) from error
    return wanted


def list_graphs() -> list[GraphDefinition]:
    """All registered definitions, sorted by name."""
    return [_registry[name] for name in sorted(_registry)]


def get_graph(name: str) -> GraphDefinition:
    """The definition registered as ``name``.

    Raises:
        UnknownGraph: nothing is registered under that name; carries the known names.
    """
    try:
        return _registry[name]
    except KeyError:
        raise UnknownGraph(name=name, known=sorted(_registry)) from None


def build_graph(name: str) -> Graph:
    """Build a fresh graph from the definition registered as ``name``.

    Raises:
        UnknownGraph: nothing is registered under that name.
        GraphDefinitionError: the factory returned something other than a strands ``Graph``,
            or (``graph_defs.models.OfflineModelError``) ``GRAPH_MODEL=offline`` and one of
            its agents has a model that would call a provider.
    """
    from strands.multiagent.graph import Graph

    definition = get_graph(name)
    graph = definition.factory()
    if not isinstance(graph, Graph):
        raise GraphDefinitionError(
            f"graph definition {name!r} ({definition.module}.{_qualname(definition.factory)}) returned "
            f"{type(graph).__name__}, expected strands.multiagent.Graph (did you forget builder.build()?)"
        )
    from graph_defs.models import check_offline

    check_offline(graph)  # every graph, before any node runs: offline must mean no provider call
    return graph
