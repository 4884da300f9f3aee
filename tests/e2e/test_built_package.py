"""The Lambda package that ``sam build`` made from an ``approval-bot init`` project, run for real.

``.ci/package-check`` makes a project with ``approval-bot init``, builds it with
``sam build`` (the project's Makefile: the bot and its dependencies as Lambda wheels, less
what Lambda's runtime has, plus ``graphs/``) and points ``APPROVAL_BOT_BUILT_PACKAGE`` at
the result. These tests then prove that what was left out was not needed: ``handler()``
runs in a fresh ``python -S`` process whose path holds only the built package and a
stand-in for Lambda's Python runtime (boto3, botocore, s3transfer, jmespath, dateutil,
six, urllib3 from this venv), against moto's DynamoDB, the local Slack and the local
Invoke API: a ``/graph run refunds …`` command, its card, an Approve, the end message.

Without the variable the tests are skipped (a developer's run has no built package);
with it, anything wrong fails them, a missing package included.
"""

from __future__ import annotations

import importlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pytest

from tests.e2e.conftest import CHANNEL, all_text, finished_message, live_buttons
from tests.e2e.lambda_env import LambdaDeployment
from tests.support import lambda_container
from tests.support.lambda_ import LambdaContainer

BUILT_ENV: Final = "APPROVAL_BOT_BUILT_PACKAGE"
BUILT: Final = os.environ.get(BUILT_ENV, "")
SIZE_LIMIT_MB: Final = 56.0
"""The package unzipped in MiB, as ``.ci/package-check`` limits it (``du -m``): measured at ~51 MiB
(x86_64, Python 3.11: the files' sizes, cryptography's 14 MiB included); the full install is ~94 MB."""
RUNTIME_PROVIDES: Final = ("boto3", "botocore", "s3transfer", "jmespath", "dateutil", "six", "urllib3")
"""What Lambda's Python runtime has on its path besides the standard library."""
LEFT_OUT: Final = (
    "tests",
    "bench",
    "docs",
    "demo",
    "localslack",
    "boto3",
    "botocore",
    "s3transfer",
    "jmespath",
    "bin",
)
WHERE_FROM: Final = "import bot, strands, boto3; print(bot.__file__, strands.__file__, boto3.__file__)"
NEEDED: Final = ("bot", "engine", "persistence", "graph_defs", "graphs", "slack_bolt", "slack_sdk", "strands")
GRAPH_IMPORTS: Final = (
    "strands",
    "strands.multiagent",
    "strands.multiagent.graph",
    "strands.hooks",
    "strands.types.tools",
    "strands.types.interrupt",
    "strands.vended_interventions.hitl",
    "strands.models.bedrock",
    "strands.tools.mcp",
)
"""What a team's graph commonly imports (``strands.tools.mcp`` imports ``mcp``, which imports
``cryptography`` unconditionally): each must import from the package as Lambda runs it."""

pytestmark = pytest.mark.skipif(not BUILT, reason=f"{BUILT_ENV} names no built package (.ci/package-check sets it)")


@pytest.fixture(scope="module")
def package() -> Path:
    path = Path(BUILT)
    assert (path / "bot" / "lambda_handler.py").is_file(), f"{BUILT_ENV}={BUILT} is not a built package"
    return path


def size_mb(root: Path) -> float:
    return sum(f.stat().st_size for f in root.rglob("*") if f.is_file() and not f.is_symlink()) / 1048576


def test_the_package_holds_the_bot_and_the_graphs_and_nothing_else(package: Path) -> None:
    names = {p.name for p in package.iterdir()}
    assert not [n for n in LEFT_OUT if n in names], f"left in the package: {sorted(set(LEFT_OUT) & names)}"
    assert not [n for n in NEEDED if n not in names], f"missing from the package: {sorted(set(NEEDED) - names)}"
    assert not [p for p in ("bot/scaffold", "bot/testing") if (package / p).exists()], "a developer's tools"
    assert not list(package.rglob("__pycache__"))
    assert not [n for n in names if re.match(r"(boto3|botocore)-.*\.dist-info$", n)]
    assert size_mb(package) <= SIZE_LIMIT_MB, f"{size_mb(package):.1f} MB > {SIZE_LIMIT_MB} MB"


def _python_tag(package: Path) -> str:
    (core,) = (package / "pydantic_core").glob("_pydantic_core.*.so")
    match = re.search(r"cpython-(\d)(\d+)", core.name)
    assert match, core.name
    return f"{match[1]}.{match[2]}"


@dataclass(frozen=True)
class Runtime:
    """A stand-in for Lambda's Python runtime: its path entries, and its bootstrap (the harness)."""

    path: Path
    bootstrap: Path


@pytest.fixture(scope="module")
def runtime(package: Path, tmp_path_factory: pytest.TempPathFactory) -> Runtime:
    """Lambda's Python runtime, as far as the path goes: the SDK and its dependencies, nothing else."""
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert _python_tag(package) == here, f"the package was built for Python {_python_tag(package)}, this is {here}"
    folder = tmp_path_factory.mktemp("lambda-runtime")
    for name in RUNTIME_PROVIDES:
        origin = Path(importlib.import_module(name).__file__ or "")
        source = origin.parent if origin.name == "__init__.py" else origin
        (folder / source.name).symlink_to(source)
    bootstrap = tmp_path_factory.mktemp("bootstrap") / "bootstrap.py"
    shutil.copyfile(lambda_container.__file__, bootstrap)
    return Runtime(path=folder, bootstrap=bootstrap)


def test_what_a_graph_imports_imports_from_the_package(package: Path, runtime: Runtime) -> None:
    """In the same fresh ``python -S`` process as the handler's (the package and the runtime's SDK
    only), each import tried on its own: one line per module that fails, with its error."""
    probe = (
        "import importlib, sys\n"
        f"for name in {GRAPH_IMPORTS!r}:\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except Exception as error:\n"
        "        print(f'{name}: {type(error).__name__}: {error}')\n"
        "import yaml\n"  # without its C accelerator, which the Makefile leaves out
        "if yaml.safe_load('a: [1]') != {'a': [1]}: print('yaml.safe_load: wrong')\n"
    )
    done = subprocess.run(
        [sys.executable, "-S", "-c", probe],
        env={"PYTHONPATH": f"{package}{os.pathsep}{runtime.path}", "PYTHONDONTWRITEBYTECODE": "1"},
        cwd=package,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and not done.stdout, f"imports that fail here:\n{done.stdout}{done.stderr}"


class BuiltContainer(LambdaContainer):
    """A container whose process sees only the built package and the runtime stand-in.

    ``python -S``: no site-packages of this venv; the harness (stdlib only) runs as a
    script from a folder of its own, so neither the checkout nor the venv is importable.
    """

    def __init__(self, env: dict[str, str], *, package: Path, runtime: Runtime) -> None:
        paths = {
            "PYTHONPATH": f"{package}{os.pathsep}{runtime.path}",
            "LAMBDA_TASK_ROOT": str(package),
            "PYTHONDONTWRITEBYTECODE": "1",  # the package is read-only on Lambda
        }
        super().__init__({**env, **paths})
        self.package = package
        self.bootstrap = runtime.bootstrap

    def command(self) -> tuple[list[str], Path]:
        """The built package's bootstrap, with no site-packages (``-S``), in the package's folder."""
        return [sys.executable, "-S", str(self.bootstrap)], self.package


@pytest.fixture
def containers(deployment: LambdaDeployment, package: Path, runtime: Runtime) -> Iterator[list[BuiltContainer]]:
    env = {**deployment.env, "GRAPH_MODULES": "graphs.refunds", "EXAMPLE_GRAPHS": "false"}
    made = [BuiltContainer(env, package=package, runtime=runtime) for _ in range(3)]
    yield made
    for container in made:
        container.close()
    for container in made:
        print(f"--- {container.name} ---\n{container.stderr_text()[-3000:]}")


async def test_a_refund_is_approved_through_the_built_package(
    deployment: LambdaDeployment, containers: list[BuiltContainer]
) -> None:
    d = deployment
    front, starter, resumer = containers
    user, _ = d.user(front)

    ack = await user.slash_command(text="run refunds A-1001", user_id="U0REQUESTER", channel_id=CHANNEL)
    assert ack.status == 200, ack
    (start,) = d.local_lambda.take()
    assert await d.replay_in(starter, [start]) == [{"ok": True}]
    card = await d.card(timeout=20)
    assert "A-1001" in str(card["blocks"]) and live_buttons(card)[:2] == ["Approve", "Reject"], card

    click = await user.click(message=card, label="Approve", user_id="U0ALICE", channel_id=CHANNEL)
    assert click.status == 200, click
    (decide,) = d.local_lambda.take()
    assert await d.replay_in(resumer, [decide]) == [{"ok": True}]
    done = finished_message(d.slack)
    assert done is not None and "Refunded 25.00 EUR on order A-1001" in all_text(done), done

    for container in containers:
        log = container.stderr_text()
        assert "Traceback" not in log, log[-3000:]
        assert "older than the boto3" not in log, "the runtime's SDK is new enough (bot.aws_lambda.sdk)"
    # The handler ran from the package, not from this checkout or this venv.
    probe = subprocess.run(
        [sys.executable, "-S", "-c", WHERE_FROM],
        env={"PYTHONPATH": front.env["PYTHONPATH"], "PATH": os.environ.get("PATH", "")},
        cwd=front.package,
        capture_output=True,
        text=True,
        check=True,
    )
    bot_file, strands_file, boto3_file = probe.stdout.split()
    assert bot_file.startswith(str(front.package)) and strands_file.startswith(str(front.package)), probe.stdout
    assert not boto3_file.startswith(str(front.package)), probe.stdout
