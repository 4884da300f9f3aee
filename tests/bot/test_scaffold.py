"""``approval-bot init``: the project it writes, the bot it pins, the template it derives, the wheel that ships it.

The project's Lambda package itself (``sam build`` through its Makefile, then run) is
proven by ``.ci/package-check`` and ``tests/e2e/test_built_package.py``.
"""

from __future__ import annotations

import ast
import json
import os
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from bot.cli import main
from bot.scaffold import init_project, lambda_python
from bot.scaffold.source import (
    DISTRIBUTION,
    BotSourceError,
    installed_requirement,
    requirement_from_direct_url,
    requirement_from_spec,
)
from bot.scaffold.template import EDITS, EXAMPLE_MODULE, SHIPPED, TemplateDrift, derive

REPO = Path(__file__).resolve().parents[2]
FILES = {
    ".gitignore",
    "Makefile",
    "README.md",
    "graphs/__init__.py",
    "graphs/refunds.py",
    "pytest.ini",
    "requirements.txt",
    "template.yaml",
    "tests/__init__.py",
    "tests/test_refunds.py",
}
RUNTIME = "python{}.{}".format(*lambda_python(sys.version_info[:2]))


class _CfnLoader(yaml.SafeLoader):
    """YAML with CloudFormation's short tags (!Ref, !Sub …) read as plain values."""


_CfnLoader.add_multi_constructor("!", lambda loader, suffix, node: None)


def _template(path: Path) -> dict[str, object]:
    loaded: dict[str, object] = yaml.load(path.read_text(), Loader=_CfnLoader)  # a SafeLoader
    return loaded


@pytest.fixture
def project(tmp_path: Path) -> Path:
    init_project(tmp_path / "ours", bot_source=str(REPO))
    return tmp_path / "ours"


# -- what init writes --------------------------------------------------------------------------------------


def test_init_writes_a_project_that_pins_the_bot_and_names_its_graphs(project: Path) -> None:
    assert {str(p.relative_to(project)) for p in project.rglob("*") if p.is_file()} == FILES
    requirements = [line for line in (project / "requirements.txt").read_text().splitlines() if line[:1] != "#"]
    assert requirements == [str(REPO)]
    template = _template(project / "template.yaml")
    function = template["Resources"]["ApprovalBotFunction"]  # type: ignore[index]
    assert function["Metadata"] == {"BuildMethod": "makefile"}
    assert function["Properties"]["Runtime"] == RUNTIME, "the Python that ran init, never one AWS retires"
    assert template["Parameters"]["GraphModules"]["Default"] == EXAMPLE_MODULE  # type: ignore[index]
    assert "build-ApprovalBotFunction:" in (project / "Makefile").read_text()


@pytest.mark.parametrize(
    ("running", "lambda_version"),
    [
        ((3, 11, 7), (3, 12)),
        ((3, 12, 1), (3, 12)),
        ((3, 13, 0), (3, 13)),
        ((3, 14, 2), (3, 14)),
        ((3, 15, 0), (3, 14)),
        ((4, 0, 0), (3, 14)),
    ],
)
def test_a_project_gets_the_python_running_init_but_never_one_aws_retires_nor_one_it_lacks(
    running: tuple[int, int, int], lambda_version: tuple[int, int]
) -> None:
    assert lambda_python(running) == lambda_version


def test_the_example_graph_registers_and_builds_offline(project: Path) -> None:
    """In a fresh process with the project as its folder, as pytest and Lambda import it."""
    code = (
        "import graphs.refunds as m\n"
        "from graph_defs import get_graph\n"
        "assert get_graph('refunds').name == 'refunds'\n"
        "assert type(m.build()).__name__ == 'Graph'\n"
        "assert m.parse_refund('A-1001 40 EUR') == ('A-1001', 40.0)\n"
    )
    env = {**os.environ, "GRAPH_MODEL": "offline", "PYTHONPATH": f"{project}{os.pathsep}{REPO}"}
    done = subprocess.run([sys.executable, "-c", code], cwd=project, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_example_graph_uses_only_the_public_api(project: Path) -> None:
    tree = ast.parse((project / "graphs" / "refunds.py").read_text())
    modules = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    ours = {m for m in modules if m and m.split(".")[0] in ("graph_defs", "bot", "engine", "persistence")}
    assert ours == {"graph_defs", "graph_defs.models", "graph_defs.scripted"}, ours


def test_the_generated_test_rehearses_an_approval_and_a_rejection(project: Path) -> None:
    source = (project / "tests" / "test_refunds.py").read_text()
    tree = ast.parse(source)
    imports = {(n.module, a.name) for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
    assert ("bot.testing", "Rehearsal") in imports
    calls = {n.func.attr for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)}
    assert {"start", "card", "approve", "reject", "end"} <= calls
    assert "graph_modules=GRAPHS" in source and f'GRAPHS = ["{EXAMPLE_MODULE}"]' in source


def test_the_generated_tests_pass(project: Path) -> None:
    """The project's own test, run as its README says (python -m pytest in the project), with this bot."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]


# (a requirements.txt line, where the Makefile sends it: "local" is built into a wheel first)
SPLIT = [
    ("numpy==2.1.0  # ask ops@example.com", "registry", "numpy==2.1.0"),
    ("requests  # see https://example.org/x", "registry", "requests"),
    ("  -e ./x", "local", "./x"),
    ("--editable=../bot", "local", "../bot"),
    ("-r graphs-requirements.txt", "registry", "-r {here}/graphs-requirements.txt"),
    ("--constraint /abs/c.txt", "registry", "--constraint /abs/c.txt"),
    ("--index-url https://pypi.example.org/simple", "registry", "--index-url https://pypi.example.org/simple"),
    ('attrs>=23 ; python_version < "3.12"', "registry", 'attrs>=23 ; python_version < "3.12"'),
    ("foo#bar", "registry", "foo#bar"),
    ("# only a comment, with / and @", None, None),
    ("   ", None, None),
    ("/home/me/bot", "local", "/home/me/bot"),
    ("  ./vendor/pkg   # ours", "local", "./vendor/pkg"),
    ("~/src/thing", "local", "~/src/thing"),
    (f"{DISTRIBUTION} @ git+https://github.com/o/b@v1", "local", f"{DISTRIBUTION} @ git+https://github.com/o/b@v1"),
    ("pkg[extra]@ https://e.org/p-1.0-py3-none-any.whl", "local", "pkg[extra]@ https://e.org/p-1.0-py3-none-any.whl"),
    ("git+https://github.com/o/b@v1#egg=b", "local", "git+https://github.com/o/b@v1#egg=b"),
    ("https://e.org/a-1.0-py3-none-any.whl", "local", "https://e.org/a-1.0-py3-none-any.whl"),
]


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_the_makefile_builds_only_paths_and_urls_into_wheels(project: Path) -> None:
    """The Makefile's own split (``make split-requirements``, as ``sam build`` runs it): a comment
    or leading spaces never make a registry requirement local, nor hide an option."""
    (project / "requirements.txt").write_text("".join(f"{line}\n" for line, _, _ in SPLIT))
    done = subprocess.run(
        ["make", "-s", "split-requirements", "WORK=w"], cwd=project, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    got = {kind: (project / "w" / f"{kind}.txt").read_text().splitlines() for kind in ("local", "registry")}
    want = {kind: [out.format(here=project) for _, k, out in SPLIT if k == kind] for kind in ("local", "registry")}
    assert got == want


# -- the command: refusals in one line ---------------------------------------------------------------------


def _one_line_refusal(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("approval-bot init: "), err
    return err


def test_init_refuses_a_folder_that_is_not_empty(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "notes.txt").write_text("ours")
    assert "is not empty" in _one_line_refusal(capsys, ["init", str(tmp_path)])
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"], "nothing written"


def test_init_refuses_a_file_and_a_missing_bot_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "file").write_text("")
    assert "is a file" in _one_line_refusal(capsys, ["init", str(tmp_path / "file")])
    missing = ["init", str(tmp_path / "new"), "--bot-source", "./no-such-checkout"]
    assert "no such file or folder" in _one_line_refusal(capsys, missing)
    assert not (tmp_path / "new").exists()


def test_init_refuses_a_folder_it_cannot_make_or_write_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "afile").write_text("")
    source = ["--bot-source", f"{DISTRIBUTION}==0.1.0"]
    assert "cannot write the project" in _one_line_refusal(capsys, ["init", str(tmp_path / "afile" / "sub"), *source])

    def refuse(self: Path, *args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "mkdir", refuse)  # root may write anywhere: the refusal is faked
    line = _one_line_refusal(capsys, ["init", str(tmp_path / "locked" / "new"), *source])
    assert "cannot write the project" in line and "Permission denied" in line, line


def test_init_takes_a_folder_that_holds_only_git(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    assert main(["init", str(tmp_path), "--bot-source", f"{DISTRIBUTION}==0.1.0"]) == 0
    assert (tmp_path / "template.yaml").is_file() and (tmp_path / ".git" / "HEAD").is_file()


def test_init_quotes_the_folder_and_warns_about_a_local_bot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "our approvals"
    assert main(["init", str(folder), "--bot-source", str(REPO)]) == 0
    out, err = capsys.readouterr()
    assert f"Next: cd {shlex.quote(str(folder))} && " in out, out
    (warning,) = err.splitlines()
    assert str(REPO) in warning and "teammates and CI cannot build from it" in warning
    assert f"{DISTRIBUTION}==" in warning and "git+https://" in warning, warning


def test_init_into_an_empty_folder_prints_its_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", str(tmp_path), "--bot-source", f"{DISTRIBUTION}==0.1.0"]) == 0
    out, err = capsys.readouterr()
    assert "template.yaml" in out and not err, "a pinned version: no warning"
    assert (tmp_path / "requirements.txt").read_text().count(f"\n{DISTRIBUTION}==0.1.0\n") == 1


# -- the bot's requirement ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        (None, f"{DISTRIBUTION}==1.2.3"),
        ({"url": "file:///home/me/approval%20bot", "dir_info": {"editable": True}}, "/home/me/approval bot"),
        ({"url": "file:///srv/bot", "dir_info": {}}, "/srv/bot"),
        (
            {"url": "https://github.com/o/bot.git", "vcs_info": {"vcs": "git", "commit_id": "abc123"}},
            f"{DISTRIBUTION} @ git+https://github.com/o/bot.git@abc123",
        ),
        (
            {"url": "https://example.org/bot-1.2.3-py3-none-any.whl", "archive_info": {}},
            f"{DISTRIBUTION} @ https://example.org/bot-1.2.3-py3-none-any.whl",
        ),
        ({"url": "file:///tmp/w/bot-1.2.3-py3-none-any.whl", "archive_info": {}}, "/tmp/w/bot-1.2.3-py3-none-any.whl"),
    ],
    ids=["index", "editable", "folder", "git", "archive-url", "local-wheel"],
)
def test_the_bot_is_pinned_where_it_was_installed_from(record: dict[str, object] | None, expected: str) -> None:
    assert requirement_from_direct_url(json.dumps(record) if record else None, version="1.2.3") == expected


def test_this_install_pins_itself() -> None:
    """The bot these tests import runs from this checkout: the checkout's path."""
    assert installed_requirement() == str(REPO)


def test_a_bot_source_is_a_path_or_a_requirement(tmp_path: Path) -> None:
    assert requirement_from_spec(str(tmp_path)) == str(tmp_path.resolve())
    assert (
        requirement_from_spec(" slack-approval-bot @ git+https://x/y@v1 ") == "slack-approval-bot @ git+https://x/y@v1"
    )
    for bad in ("", "-e .", "a\nb", "/no/such/folder"):
        with pytest.raises(BotSourceError):
            requirement_from_spec(bad)


KEPT_AS_GIVEN = [
    f"{DISTRIBUTION}==0.1.0",
    "Slack_Approval.Bot>=0.1",
    f"{DISTRIBUTION} @ git+https://${{GIT_TOKEN}}@github.com/org/bot.git@v1",
    f"{DISTRIBUTION} @ git+https://${{GIT_USER}}:${{GIT_TOKEN}}@github.com/org/bot.git@v1",
    f"{DISTRIBUTION} @ git+ssh://git@github.com/org/bot.git@v1",
    f"{DISTRIBUTION} @ git+https://github.com:8443/org/bot.git@v1",  # a port, not a password
    f"{DISTRIBUTION} @ https://e.org/bot-0.1.0.tar.gz?token=${{BOT_TOKEN}}",
]
REFUSED = [
    ("git+https://alice:ghp_SECRET@github.com/org/bot.git@v1", "environment variable"),
    (f"{DISTRIBUTION} @ git+https://alice:ghp_SECRET@github.com/org/bot.git@v1", "environment variable"),
    (f"{DISTRIBUTION} @ git+https://ghp_SECRET@github.com/org/bot.git@v1", "environment variable"),
    (f"{DISTRIBUTION} @ git+ssh://git:ghp_SECRET@github.com/org/bot.git@v1", "environment variable"),
    (f"{DISTRIBUTION} @ git+https://alice:pa/SECRET@github.com/org/bot.git@v1", "environment variable"),
    (f"{DISTRIBUTION} @ git+ssh://ghp_SECRET@github.com/org/bot.git@v1", "environment variable"),
    (f"{DISTRIBUTION} @ https://e.org/bot-0.1.0.tar.gz?X-Amz-Signature=SECRET", "environment variable"),
    ("x --index-url https://pypi.example.org/simple", "not one requirement"),
    ("git+https://github.com/org/bot.git@v1", "not one requirement"),
    (f"{DISTRIBUTION}==0.1.0 --hash=sha256:00", "not one requirement"),
    ("requests==2.32.0", "not the bot"),
    (f'{DISTRIBUTION}==0.1.0; python_version < "3.13"', "environment marker"),
]


@pytest.mark.parametrize("spec", KEPT_AS_GIVEN)
def test_a_bot_requirement_is_written_as_given(spec: str) -> None:
    assert requirement_from_spec(spec) == spec


@pytest.mark.parametrize(("spec", "why"), REFUSED)
def test_a_bot_source_that_is_not_the_bot_or_holds_a_secret_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], spec: str, why: str
) -> None:
    line = _one_line_refusal(capsys, ["init", str(tmp_path / "p"), "--bot-source", spec])
    assert why in line, line
    assert "SECRET" not in line, "a credential is never printed"
    if why == "environment variable":
        assert "${GIT_TOKEN}" in line, line
    assert not (tmp_path / "p").exists()


# -- the template: the repository's, derived -----------------------------------------------------------------


def test_the_shipped_template_is_the_repository_template_derived() -> None:
    """If this fails after a change to template.yaml: python -m bot.scaffold.template (and check the diff)."""
    assert SHIPPED.read_text() == derive((REPO / "template.yaml").read_text())


def test_a_template_that_drifted_from_the_edits_is_refused() -> None:
    text = (REPO / "template.yaml").read_text()
    for edit in EDITS:
        with pytest.raises(TemplateDrift, match="copies of the text"):
            derive(text.replace(edit.old, ""))


@pytest.mark.skipif(shutil.which("cfn-lint", path=str(Path(sys.executable).parent)) is None, reason="no cfn-lint")
def test_the_project_template_passes_cfn_lint(project: Path) -> None:
    cfn_lint = str(Path(sys.executable).parent / "cfn-lint")
    done = subprocess.run([cfn_lint, str(project / "template.yaml")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


# -- the wheel ships the project files ---------------------------------------------------------------------


def test_a_wheel_built_from_a_path_carries_init_and_its_files(tmp_path: Path) -> None:
    """What `sam build` does with a path in requirements.txt: pip builds the bot's wheel from it.
    Built from a copy, so that setuptools' build/ folder lands there, not in the checkout."""
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    for package in ("bot", "engine", "persistence", "graph_defs", "localslack", "demo"):
        shutil.copytree(REPO / package, source / package, ignore=shutil.ignore_patterns("__pycache__"))
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    built = subprocess.run([*pip, "wheel", "--no-deps", "-w", str(tmp_path / "w"), str(source)], capture_output=True)
    assert built.returncode == 0, built.stderr.decode()[-2000:]
    (wheel,) = (tmp_path / "w").glob("slack_approval_bot-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {n for n in names if n.startswith("bot/scaffold/project/")}
    assert {f"bot/scaffold/project/{f}.template" for f in FILES - {".gitignore", "requirements.txt"}} | {
        "bot/scaffold/project/gitignore.template"
    } == shipped
    assert not [n for n in names if n.startswith(("tests/", "bench/", "docs/"))]

    target = tmp_path / "installed"
    installed = subprocess.run([*pip, "install", "--no-deps", "--target", str(target), str(wheel)], capture_output=True)
    assert installed.returncode == 0, installed.stderr.decode()[-2000:]
    code = (
        "import sys, bot.scaffold as s\n"
        f"assert s.__file__.startswith({str(target)!r}), s.__file__\n"
        f"s.init_project(__import__('pathlib').Path({str(tmp_path / 'p')!r}), bot_source='slack-approval-bot==0.1.0')\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(target)}, capture_output=True
    )
    assert run.returncode == 0, run.stderr.decode()[-2000:]
    assert {str(p.relative_to(tmp_path / "p")) for p in (tmp_path / "p").rglob("*") if p.is_file()} == FILES
