"""``approval-bot demo < /dev/null``: the scripted walk-through CI runs, as a log reads it.

It runs in an environment set up for a real deployment, the way an engineer's shell is:
the demo must take none of it (no table, endpoint, Slack command or lease of the real bot).

``docs/demo.md`` shows the walk-through (and a second sequence to try) as a new user sees
it; both are played here, at once, and every line the page shows is checked against what
the demo printed for that step, so the page cannot fall behind the demo.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from demo.mrkdwn import cols
from demo.session import SCRIPT as WALK_THROUGH
from tests.demo.pty_demo import SCRIPT, clean_env

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "demo.md"

COLUMNS = 40
TYPED = re.compile(r"@[a-z]+ in #demo> ")  # the prompt before each typed line, in words
# A deployment's settings: each one, if the demo read it, sends its runs elsewhere or breaks it.
DEPLOYED = {
    "DYNAMODB_TABLE": "approval-runs",
    "AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:9",  # a closed port: a write there fails the run
    "AWS_ENDPOINT_URL": "http://127.0.0.1:9",
    "AWS_REGION": "eu-west-1",
    "AWS_ACCESS_KEY_ID": "AKIAEXAMPLEEXAMPLE",
    "AWS_SECRET_ACCESS_KEY": "not-a-secret",
    "SNAPSHOT_BUCKET": "approval-snapshots",
    "SLACK_COMMAND": "/approve",
    "SLACK_API_URL": "http://127.0.0.1:9/api/",
    "LEASE_SECONDS": "1",
    "PORT": "99999",
    "DELIVERY_GRACE_SECONDS": "nonsense",
    "EXAMPLE_GRAPHS": "false",
    "GRAPH_MODEL": "bedrock",
    "BEDROCK_MODEL_ID": "eu.anthropic.claude-haiku-4-5-20251001-v1:0",
}


# Plays the lines given on its command line as a walk-through (``demo.session._scripted``).
_PLAY = (
    "import asyncio, sys, demo.session as s; s.SCRIPT[:] = sys.argv[1:]; "
    "s.RUNS = sum(1 for l in s.SCRIPT if l.startswith('/graph run ')); "
    "sys.exit(asyncio.run(s.run_demo(scripted=True)))"
)


@dataclass(frozen=True)
class Played:
    returncode: int
    stdout: str
    stderr: str


@dataclass(frozen=True)
class Demos:
    walk_through: Played  # ``approval-bot demo --script`` in a deployed environment, 40 columns
    tmp: Path  # its TMPDIR
    sqlite: Path  # the SQLITE_PATH it must ignore
    tried: Played  # docs/demo.md's "try it yourself" lines, in a fresh demo


def doc_blocks() -> dict[str, list[str]]:
    """docs/demo.md's transcripts, by the name in the comment before each."""
    found = re.findall(r"<!-- walk-through: (.+?) -->\n```text\n(.*?)```", DOC.read_text(), re.DOTALL)
    return {name: block.splitlines() for name, block in found}


@pytest.fixture(scope="module")
def demos(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Demos]:
    """Both demos at once (they mostly wait for the bot's pace): one wait instead of two."""
    root = tmp_path_factory.mktemp("demos")
    sqlite, tmp = root / "elsewhere" / "runs.sqlite3", root / "tmp"
    tmp.mkdir()
    # Deliberately not pty_demo.clean_env: these variables must reach the demo.
    env = {**os.environ, **DEPLOYED, "SQLITE_PATH": str(sqlite), "TMPDIR": str(tmp)}
    # PYTHONPATH: this checkout's code, also where the console script's install is another's (a worktree).
    env.update(COLUMNS=str(COLUMNS), LOG_LEVEL="WARNING", PYTHONPATH=str(REPO))
    script = subprocess.Popen(
        [str(SCRIPT), "demo", "--script"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    typed = [line for line, _ in _steps(doc_blocks()["try it yourself"])]
    tried = subprocess.Popen(
        [sys.executable, "-c", _PLAY, *typed],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_env({"COLUMNS": "80", "PYTHONPATH": str(REPO)}),
        cwd=root,
    )
    played = []
    try:
        for process in (script, tried):
            out, err = process.communicate(timeout=150)
            played.append(Played(process.returncode, out, err))
    finally:
        for process in (script, tried):
            if process.poll() is None:
                process.kill()
                process.communicate()
    yield Demos(walk_through=played[0], tmp=tmp, sqlite=sqlite, tried=played[1])


def test_the_walk_through_ignores_a_deployed_environment_and_fits_40_columns(demos: Demos) -> None:
    done = demos.walk_through
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    said = " ".join(done.stdout.split())  # wrapped to 40 columns: compare words
    assert said.endswith("Demo finished: 5 runs finished, 5 cards answered.")
    _the_payout_policy_held(_flat(done.stdout))  # box borders and wrapping gone
    _progress_and_home_shown(said)
    assert done.stderr == ""
    # What the demo prints fits the width; the echoed script lines are what a person typed.
    echoed = re.compile(r"^@[a-z]+ in #demo> ")
    assert not [line for line in done.stdout.splitlines() if cols(line) > COLUMNS and not echoed.match(line)]
    assert "Offline demo: the real bot and a local" in done.stdout  # the banner, wrapped
    assert not re.search(r"\x1b\[|:white_check_mark:|<@U|\*deploy\*", done.stdout)  # not a terminal: no styling
    # Each step's answer is printed before the next step starts, the graph list too.
    assert done.stdout.index("Graphs you can run") < done.stdout.index("> /graph run deploy billing 1.2.3")
    assert list(demos.tmp.iterdir()) == [] and not demos.sqlite.parent.exists()


def test_the_docs_walk_through_is_the_script_and_shows_what_the_demo_prints(demos: Demos) -> None:
    shown = _steps(doc_blocks()["the script (demo.session.SCRIPT)"])
    assert [line for line, _ in shown] == WALK_THROUGH  # the same lines, in the same order
    _each_step_shows(shown, demos.walk_through)


def test_the_docs_try_it_yourself_shows_what_the_demo_prints(demos: Demos) -> None:
    assert demos.tried.returncode == 0, demos.tried.stdout[-3000:] + demos.tried.stderr[-3000:]
    assert demos.tried.stderr == ""
    _each_step_shows(_steps(doc_blocks()["try it yourself"]), demos.tried)


def test_the_doc_checker_catches_two_cards_in_the_wrong_order() -> None:
    printed = "@you in #demo> x\n┌─ card 2 ───\n│ Security signoff\n└──\n┌─ card 3 ───\n│ Qa signoff\n"
    claimed = [("x", ["┌─ card 2 ─", "│ Qa signoff", "┌─ card 3 ─", "│ Security signoff"])]
    with pytest.raises(AssertionError, match="Qa signoff"):
        _each_step_shows(claimed, Played(0, printed, ""))
    _each_step_shows([("x", ["┌─ card 2 ─", "│ Security …", "┌─ card 3 ─"])], Played(0, printed, ""))


_PROMPT = re.compile(r"^@[a-z]+ in #demo> (.*)$")


def _steps(lines: list[str]) -> list[tuple[str, list[str]]]:
    """A transcript as (typed line, the lines shown after it); "…" alone stands for lines left out."""
    steps: list[tuple[str, list[str]]] = []
    for line in lines:
        typed = _PROMPT.match(line)
        if typed:
            steps.append((typed.group(1), []))
        elif steps and line.strip() and line.strip() != "…":
            steps[-1][1].append(line)
    return steps


def _flat(text: str) -> str:
    """Printed lines as one line of words: a box's top is its label in ⟦⟧, borders go."""
    words = []
    for line in text.splitlines():
        top = re.match(r"^\s*┌─ (.*?)[ ─]*$", line)
        words.append(f"⟦{top.group(1)}⟧" if top else re.sub(r"[│└─]", " ", line))
    return " ".join(" ".join(words).split())


def _each_step_shows(claimed: list[tuple[str, list[str]]], played: Played) -> None:
    """Each claimed line (its "…" parts in order) is printed by its step, after the previous one."""
    printed: list[tuple[str, str]] = []
    for line in played.stdout.splitlines():
        typed = _PROMPT.match(line)
        if typed:
            printed.append((typed.group(1), ""))
        elif printed:
            printed[-1] = (printed[-1][0], printed[-1][1] + line + "\n")
    assert [t for t, _ in printed] == [t for t, _ in claimed], played.stdout[-2000:]
    for (typed, lines), (_, output) in zip(claimed, printed, strict=True):
        flat, at = _flat(output), 0
        for line in lines:
            for part in filter(None, (p.strip() for p in _flat(line).split("…"))):
                found = flat.find(part, at)
                assert found >= 0, f"after {typed!r} the demo did not print {part!r} (in order):\n{output}"
                at = found + len(part)


def test_importing_the_session_leaves_the_bot_and_engine_for_after_the_environment_is_cleared() -> None:
    # engine.records reads DELIVERY_GRACE_SECONDS when imported: it must not be imported before run_demo.
    check = "import sys, demo.session; print(sorted(m for m in sys.modules if m.split('.')[0] in ('bot', 'engine')))"
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "[]"


def test_the_demo_owns_its_environment() -> None:
    from demo.session import own_environment

    environ = {**DEPLOYED, "SQLITE_PATH": "x", "GRAPH_MODULES": "refunds", "LOG_LEVEL": "INFO", "HOME": "/h"}
    own_environment(environ)
    assert environ == {
        "GRAPH_MODULES": "refunds",
        "LOG_LEVEL": "INFO",
        "HOME": "/h",
        "GRAPH_MODEL": "offline",
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        "AWS_CONFIG_FILE": os.devnull,
    }


def _progress_and_home_shown(said: str) -> None:
    """Each run's status message, once whole and then a line per change; bob's Home tab."""
    # (Which intermediate states get their own line depends on timing: live edits coalesce.)
    # (The box appears once a node is under way; what it shows then is timing too.)
    assert said.count("┌─ run 1 status ─") == 1 and "run 1 status: Completed · 3 nodes" in said
    assert said.count("┌─ run 4 status ─") <= 1 and "run 4 status: Completed · 2 nodes" in said  # never waits
    assert said.count("┌─ run 5 status ─") == 1 and "run 5 status: Completed · 2 nodes" in said
    steps = TYPED.split(said)
    opened = next(i for i, step in enumerate(steps) if step.startswith("home "))
    assert "@bob's Home tab" in steps[opened] and "card 3: [Approve] [Reject] [Reply]" in steps[opened]
    assert "card 2" not in steps[opened]  # alice answered the other sign-off on its card
    clicked = steps[opened + 1]
    assert clicked.startswith("home approve 3") and "Approved by @bob" in clicked
    assert clicked.index("Approved by @bob") < clicked.index("@bob's Home tab")  # then the tab, refreshed
    assert "Nothing waits for you" in clicked and "Release 2.0.0: GO" in clicked


def _the_payout_policy_held(said: str) -> None:
    """The walk-through's payouts, by the rules of ``graph_defs.examples.payout``: a small one
    approved by its rule with no card; a large one whose card shows what it will pay and
    needs finance and legal (two from finance complete nothing), never the requester."""
    small_at = said.index("@you in #demo> /graph run payout 20")
    large_at = said.index("@you in #demo> /graph run payout 1200")
    small = said[small_at:large_at]
    assert "approved by the rule small (no card: nobody was asked)" in small and "Paid 20 EUR to acme" in small
    assert "⟦card" not in small, "the rule decided it: no card"
    large = said[large_at:]
    steps = TYPED.split(large)[1:]  # each typed line with what it brought, in order
    assert [step.split(" ")[:2] for step in steps[1:8]] == [
        ["approve", "5"],
        ["as", "alice"],
        ["approve", "5"],
        ["as", "bob"],
        ["approve", "5"],
        ["as", "dana"],
        ["approve", "5"],
    ]
    asked, refused_self, _, finance, _, finance_again, _, legal = steps[:8]
    assert "What will happen" in asked and "pays 1200 EUR" in asked and "payee gets 1200 EUR (no fee)" in asked
    assert "Rule: large: finance and legal" in asked and "Still needed: one from @finance, one from @legal" in asked
    assert "⟦only @you sees this⟧" in refused_self and "You started this run" in refused_self
    assert "⟦card 5 updated⟧" not in refused_self  # nothing was recorded
    assert "⟦only @alice sees this⟧" in finance and "Still needed: one from @legal" in finance
    assert "(@finance: @alice)" in finance
    assert "⟦only @bob sees this⟧" in finance_again and "Still needed: one from @legal" in finance_again
    assert "payout finished" not in finance_again, "two approvals from finance complete nothing"
    assert "Approved by @alice, @bob and @dana" in legal and "Paid 1200 EUR to acme" in legal
