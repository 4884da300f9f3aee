"""The graph registry: decorator, name rules, duplicates, module loading and build checks."""

from __future__ import annotations

import importlib
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import graph_defs
from graph_defs import (
    GraphDefinition,
    GraphDefinitionError,
    GraphModuleError,
    UnknownGraph,
    build_graph,
    get_graph,
    graph_def,
    list_graphs,
    load_graph_modules,
    registry,
)

GRAPH_MODULE_SOURCE = """
from strands import Agent
from strands.multiagent.graph import Graph, GraphBuilder

from graph_defs import graph_def
from graph_defs.scripted import ScriptedModel, say


@graph_def("{name}", description="a graph from a temporary package")
def build() -> Graph:
    builder = GraphBuilder()
    builder.add_node(Agent(model=ScriptedModel([say("hi")]), callback_handler=None), "only")
    builder.set_max_node_executions(2)
    return builder.build()
"""


@pytest.fixture(autouse=True)
def isolated_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test sees the real registrations but its own additions vanish afterwards.

    The package's graph modules are imported first: a definition registers when its module
    is first imported, so an import inside a test would otherwise only reach that test's copy.
    """
    load_graph_modules(examples=True)
    monkeypatch.setattr(registry, "_registry", dict(registry._registry))


@pytest.fixture
def temp_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Path]]:
    """An importable package with a unique name, removed from sys.modules afterwards."""
    name = f"tmp_graphs_{tmp_path.name.replace('-', '_')}"
    package = tmp_path / name
    package.mkdir()
    (package / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name, package
    for module in [m for m in sys.modules if m == name or m.startswith(f"{name}.")]:
        del sys.modules[module]


def _factory() -> Any:
    return object()


def test_decorator_registers_and_returns_the_function_unchanged() -> None:
    def make() -> Any:
        return object()

    decorated = graph_def("demo-x_1", description="  Does\n  a thing  ")(make)

    assert decorated is make
    definition = get_graph("demo-x_1")
    assert definition == GraphDefinition(
        name="demo-x_1",
        description="Does a thing",
        factory=make,
        module=__name__,
    )
    names = [d.name for d in list_graphs()]
    assert "demo-x_1" in names
    assert names == sorted(names)


@pytest.mark.parametrize("bad", ["", "Deploy", "-deploy", "_x", "has space", "a/b", "x" * 41, "dé"])
def test_invalid_names_are_refused_with_a_clear_message(bad: str) -> None:
    with pytest.raises(ValueError, match="invalid graph name") as info:
        graph_def(bad)
    assert isinstance(info.value, GraphDefinitionError)
    assert repr(bad) in str(info.value)


def test_longest_valid_name_is_accepted() -> None:
    graph_def("a" * 40)(_factory)
    assert get_graph("a" * 40).factory is _factory


def test_same_name_from_another_function_is_an_error() -> None:
    def first() -> Any:
        return object()

    def second() -> Any:
        return object()

    graph_def("dup")(first)
    with pytest.raises(GraphDefinitionError, match="defined twice") as info:
        graph_def("dup")(second)
    assert "first" in str(info.value) and "second" in str(info.value)
    assert get_graph("dup").factory is first


def test_reimporting_a_module_is_harmless(temp_package: tuple[str, Path]) -> None:
    name, package = temp_package
    (package / "graphs.py").write_text(GRAPH_MODULE_SOURCE.format(name="reloaded"))
    module = importlib.import_module(f"{name}.graphs")

    importlib.reload(module)
    load_graph_modules([f"{name}.graphs"])

    assert get_graph("reloaded").factory is module.build


def test_load_graph_modules_imports_package_modules_and_extra(temp_package: tuple[str, Path]) -> None:
    name, package = temp_package
    (package / "graphs.py").write_text(GRAPH_MODULE_SOURCE.format(name="from-temp"))

    loaded = load_graph_modules([f" {name}.graphs ", ""], examples=True)

    assert loaded[-1] == f"{name}.graphs"
    assert {"graph_defs.examples.deploy", "graph_defs.examples.release_check", "graph_defs.examples.cleanup"} <= set(
        loaded
    )
    # Infrastructure and private modules are not graph modules.
    assert not {
        "graph_defs.registry",
        "graph_defs.scripted",
        "graph_defs.models",
        "graph_defs.answers",
    } & set(loaded)
    assert get_graph("from-temp").module == f"{name}.graphs"
    assert {"deploy", "release-check", "cleanup", "from-temp"} <= {d.name for d in list_graphs()}

    from strands.multiagent.graph import Graph

    graph = build_graph("from-temp")
    assert isinstance(graph, Graph)
    assert list(graph.nodes) == ["only"]


def test_import_error_names_the_module_and_the_cause(temp_package: tuple[str, Path]) -> None:
    name, package = temp_package
    (package / "broken.py").write_text("raise RuntimeError('no credentials for the graph')\n")

    with pytest.raises(GraphModuleError) as info:
        load_graph_modules([f"{name}.broken"])

    message = str(info.value)
    assert f"{name}.broken" in message
    assert "RuntimeError: no credentials for the graph" in message
    assert info.value.module == f"{name}.broken"
    assert isinstance(info.value.cause, RuntimeError)


def test_missing_module_is_a_graph_module_error() -> None:
    with pytest.raises(GraphModuleError, match="'no_such_graph_module_xyz'") as info:
        load_graph_modules(["no_such_graph_module_xyz"])
    assert info.value.not_found


def test_a_module_whose_own_import_is_missing_was_found(temp_package: tuple[str, Path]) -> None:
    """``not_found`` is about the listed module, not about what it imports: the fix differs."""
    name, package = temp_package
    (package / "needs_dep.py").write_text("import no_such_dependency_xyz\n")

    with pytest.raises(GraphModuleError) as info:
        load_graph_modules([f"{name}.needs_dep"])
    assert not info.value.not_found
    with pytest.raises(GraphModuleError) as missing_in_package:
        load_graph_modules([f"{name}.absent"])
    assert missing_in_package.value.not_found


def test_the_examples_load_only_when_asked_for() -> None:
    without = load_graph_modules()
    with_examples = load_graph_modules(examples=True)

    assert not [m for m in without if m.startswith("graph_defs.examples")]
    examples = {m for m in with_examples if m.startswith("graph_defs.examples.")}
    assert {"graph_defs.examples.deploy", "graph_defs.examples.incident", "graph_defs.examples.nested"} <= examples
    assert "graph_defs.answers" not in without


def test_a_fresh_process_without_examples_registers_none_and_imports_none() -> None:
    """In one process a module imported once stays registered, so "off" is checked in a new one."""
    code = textwrap.dedent(
        """
        import sys
        from graph_defs import list_graphs, load_graph_modules
        load_graph_modules()
        print([d.name for d in list_graphs()], [m for m in sys.modules if m.startswith("graph_defs.examples")])
        load_graph_modules(examples=True)
        print(sorted(d.name for d in list_graphs())[:2])
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(graph_defs.__file__).parents[1],
    )
    assert out.stdout.splitlines() == ["[] []", "['batch-gate', 'cleanup']"], out.stdout + out.stderr


def test_graph_modules_of_the_package_itself_load_without_the_examples(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A team's own module in graph_defs/ is not an example: it loads with EXAMPLE_GRAPHS off."""
    module = f"team_graphs_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{module}.py").write_text(GRAPH_MODULE_SOURCE.format(name="team-graph"))
    monkeypatch.setattr(graph_defs, "__path__", [*graph_defs.__path__, str(tmp_path)])
    try:
        loaded = load_graph_modules()
        assert f"graph_defs.{module}" in loaded
        assert get_graph("team-graph").module == f"graph_defs.{module}"
    finally:
        sys.modules.pop(f"graph_defs.{module}", None)


def test_unknown_graph_lists_the_known_names() -> None:
    graph_def("known-one")(_factory)
    with pytest.raises(UnknownGraph) as info:
        get_graph("nope")
    assert "'nope'" in str(info.value)
    assert "known-one" in str(info.value)
    assert "known-one" in info.value.known
    with pytest.raises(UnknownGraph):
        build_graph("nope")


def test_build_graph_checks_the_factory_returns_a_graph() -> None:
    graph_def("not-a-graph")(_factory)
    with pytest.raises(GraphDefinitionError, match=r"returned object, expected strands\.multiagent\.Graph"):
        build_graph("not-a-graph")


def test_importing_graph_defs_does_not_import_strands() -> None:
    code = textwrap.dedent(
        """
        import sys
        import graph_defs
        from graph_defs import graph_def, list_graphs, GraphDefinition
        loaded = sorted(m for m in sys.modules if m == "strands" or m.startswith("strands."))
        print(loaded)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(graph_defs.__file__).parent.parent,
    )
    assert out.stdout.strip() == "[]", out.stdout
