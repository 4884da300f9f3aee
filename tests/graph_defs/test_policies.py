"""Approval policies declared with ``graph_def``: checked at decoration, kept on the definition,
and read through ``GraphCatalog``."""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.services import GraphCatalog
from engine.policy import Policy, PolicyError
from graph_defs import AskPolicy, GraphDefinitionError, GraphModuleError, get_graph, graph_def, registry


@pytest.fixture(autouse=True)
def isolated_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Registrations made by a test vanish afterwards."""
    monkeypatch.setattr(registry, "_registry", dict(registry._registry))


def _factory() -> Any:
    raise AssertionError("never built here")


def test_a_graph_without_a_policy_gets_the_default() -> None:
    graph_def("plain")(_factory)
    assert get_graph("plain").policy == Policy()


def test_the_policy_is_kept_on_the_definition() -> None:
    graph_def(
        "policy-kept",
        description="pay",
        approvers=["U0ALICE", "S0FINANCE"],
        quorum=2,
        expires_after=3600,
        allow_self_approval=True,
        starters=("S0SUPPORT",),
        remind_after=[600, 1800],
        escalate_to=["S0LEADS"],
        escalate_after=1200,
        asks={"send_payment": AskPolicy(quorum=3, approvers=["S0CFO"])},
    )(_factory)
    policy = get_graph("policy-kept").policy
    assert policy == Policy(
        approvers=("U0ALICE", "S0FINANCE"),
        quorum=2,
        expires_after=3600,
        allow_self_approval=True,
        starters=("S0SUPPORT",),
        remind_after=(600, 1800),
        escalate_to=("S0LEADS",),
        escalate_after=1200,
        asks={"send_payment": AskPolicy(quorum=3, approvers=["S0CFO"])},
    )


BAD: list[tuple[str, dict[str, Any]]] = [
    ("approvers", {"approvers": "U0ALICE"}),
    ("approvers", {"approvers": ["@alice"]}),
    ("approvers", {"approvers": []}),
    ("approvers", {"approvers": [f"U0{i:04d}" for i in range(51)]}),
    ("quorum", {"quorum": 0}),
    ("quorum", {"quorum": 11}),
    ("quorum", {"quorum": True}),
    ("quorum", {"quorum": 1.5}),
    ("quorum", {"approvers": ["U0ALICE", "U0BOB"], "quorum": 3}),  # never reachable
    ("escalate_after", {"escalate_after": 60}),  # without escalate_to
    ("expires_after", {"expires_after": 0}),
    ("expires_after", {"expires_after": -60}),
    ("expires_after", {"expires_after": math.inf}),
    ("expires_after", {"expires_after": "1h"}),
    ("allow_self_approval", {"allow_self_approval": "yes"}),
    ("starters", {"starters": ["bob"]}),
    ("starters", {"starters": "S0DEV"}),
    ("remind_after", {"remind_after": [0]}),
    ("remind_after", {"remind_after": "600"}),
    ("escalate_to", {"escalate_to": ["S0LEADS"]}),  # without escalate_after
    ("escalate_to", {"escalate_to": ["leads"], "escalate_after": 60}),
    ("escalate_after", {"escalate_to": ["S0LEADS"], "escalate_after": -1}),
    ("asks", {"asks": {"": AskPolicy()}}),
    ("asks", {"asks": {"send_payment": {"quorum": 2}}}),
]


@pytest.mark.parametrize(("keyword", "kwargs"), BAD, ids=[f"{k}-{i}" for i, (k, _) in enumerate(BAD)])
def test_a_bad_policy_is_a_definition_error_naming_the_keyword(keyword: str, kwargs: dict[str, Any]) -> None:
    with pytest.raises(GraphDefinitionError) as raised:
        graph_def("strict", **kwargs)(_factory)
    message = str(raised.value)
    assert message.startswith("graph 'strict': ") and keyword in message, message
    assert "\n" not in message
    assert raised.value.__cause__ is None  # the policy's line is the whole story
    assert "strict" not in [d.name for d in registry.list_graphs()]


def test_a_bad_ask_policy_fails_where_it_is_written() -> None:
    with pytest.raises(PolicyError, match="quorum"):
        AskPolicy(quorum=0)


def test_graph_defs_exports_ask_policy_without_importing_strands() -> None:
    code = "import sys; from graph_defs import graph_def, AskPolicy; assert 'strands' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[2])


# -- GraphCatalog --------------------------------------------------------------------------------

MODULE = """
from graph_defs import AskPolicy, graph_def


@graph_def(
    "policy-graph",
    approvers=["S0OPS", "U0ALICE"],
    starters=["S0DEV"],
    asks={"deploy": AskPolicy(approvers=["S0SRE"])},
)
def build():
    raise AssertionError("not built")
"""


@pytest.fixture
def graph_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    name = f"policy_graphs_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


def test_policy_loads_and_reads_the_definition(graph_module: str) -> None:
    catalog = GraphCatalog(extra_modules=[graph_module])
    assert catalog.policy("policy-graph").approvers == ("S0OPS", "U0ALICE")
    assert catalog.loaded


def test_a_bad_ask_policy_in_a_module_names_the_module_and_the_keyword(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "bad_policy_graphs.py").write_text(
        "from graph_defs import AskPolicy, graph_def\n"
        "@graph_def('bad-policy', asks={'deploy': AskPolicy(expires_after=-1)})\n"
        "def build(): ...\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(GraphModuleError) as raised:
        GraphCatalog(extra_modules=["bad_policy_graphs"]).load()
    assert "bad_policy_graphs" in str(raised.value) and "expires_after" in str(raised.value)
    assert "bad_policy_graphs" not in sys.modules  # a failed import leaves nothing behind
