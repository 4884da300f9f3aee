"""The interactive demo as a new user meets it: a real ``approval-bot demo`` in an 80x24 terminal.

One session makes every mistake a person makes on a first try, runs two graphs to the end
and leaves one waiting (which a Home tab then lists), then presses Ctrl-C; another runs the
README's graph example from its folder and ends with Ctrl-D. After each typed line the
prompt must be the last thing on screen, also when cards arrive while it is showing; no
line may be wider than the terminal; no traceback or logged error may appear; the
temporary folder must be gone.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.demo.pty_demo import SGR, PtyDemo

REPO = Path(__file__).resolve().parents[2]
EDIT = '{"amount": 80, "currency": "EUR", "to": "acme", "invoice": "INV-7"}'


@pytest.fixture
def folders(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """(cwd, TMPDIR) for one demo; TMPDIR is where its state folder must appear and go."""
    cwd, tmp = tmp_path / "cwd", tmp_path / "tmp"
    cwd.mkdir()
    tmp.mkdir()
    yield cwd, tmp


def _check_screen(demo: PtyDemo) -> None:
    lines = demo.screen_lines()
    too_wide = demo.too_wide()
    assert not too_wide, too_wide  # what a person types may wrap; what the demo prints may not
    assert "Traceback" not in demo.raw
    assert not re.search(r"\b(ERROR|error from)\b", demo.raw), demo.raw[-2000:]
    glued = [line for line in lines if re.match(r"^@[a-z]+ in #demo> .*[┌│└]", line)]
    assert not glued, glued  # output after the prompt on the same line


def _state_folders(tmp: Path) -> list[str]:
    return [p.name for p in tmp.iterdir() if p.name.startswith("approval-bot-demo-")]


def test_every_mistake_is_answered_and_ctrl_c_ends_with_a_summary(folders: tuple[Path, Path]) -> None:
    cwd, tmp = folders
    demo = PtyDemo(cwd=cwd, env={"TMPDIR": str(tmp)})
    try:
        demo.wait_for("Answer card N")  # the help, under a one-line banner
        demo.settle()
        assert len(_state_folders(tmp)) == 1
        assert demo.step("").count("in #demo>") == 1  # the prompt again, on the next line
        assert "not a demo command" in demo.step("hello")
        assert "there is no card 9" in demo.step("approve 9")
        for command in ("/graph", "/graph help"):
            assert "show the graphs you can run" in demo.step(command, "only @you sees this")
        demo.step("/graph run", "only @you sees this")  # refused: which graph?
        demo.step("/graph run deploy", "only @you sees this")  # refused: no task
        typo = demo.step("/graph rn deploy x", "only @you sees this")
        assert "Did you mean run? Usage: /graph run <graph> <task" in typo and "/graph list" not in typo
        assert "there is no run 3 (no runs yet)" in demo.step("/graph status 3")
        assert "there is no user 'carol' here" in demo.step("as carol")
        assert "@you (now), @alice, @bob" in " ".join(demo.step("as").split())

        demo.step("/graph run tool-gate pay INV-7", re.compile(r"card 1 ─.*\[Edit\]", re.DOTALL))
        assert demo.step("as alice").splitlines()[-1] == "@alice in #demo> "  # the prompt says who you are
        shown = demo.step("reply 1")
        assert "reply 1 <text>" in shown and "updated" not in shown  # told what to type; nothing clicked
        assert "the bot refused it" in demo.step("edit 1 {bad")
        assert "Paid 80 EUR to acme" in demo.step(f"edit 1 {EDIT}", "tool-gate finished")
        assert "card 1 has no Approve button" in demo.step("approve 1")

        demo.step("as you")
        demo.step("/graph run deploy billing 1.2.3", "card 2 ─")
        refused = " ".join(demo.step("approve 2", "only @you sees this").split())
        assert "You started this run" in refused and "card 2 updated" not in refused  # nothing recorded
        demo.step("as alice")
        shown = demo.step("approve 2", "deploy finished")
        assert "Approved by @alice" in shown and "*" not in shown and ":white_check_mark:" not in shown
        assert "card 2 has no Approve button" in demo.step("approve 2")

        # Typing goes on while the cards arrive: they are printed above the prompt, the typed text kept.
        since = demo.type("/graph run release-check 2.0.0\rcar")
        demo.wait_for("card 4 ─", since=since)
        demo.settle(since=since, typed="car")
        demo.typed += ["/graph run release-check 2.0.0", "cards"]
        assert "card 3: Approve Reject Reply" in demo.step("ds")
        assert "Rejected by @alice" in demo.step("reject 3", "card 3 updated")  # the reason is optional

        # The Home tab lists what waits for its viewer: nothing for alice, who started this
        # run; card 4 for bob, under the number it has in the channel.
        assert "Nothing waits for you" in demo.step("home", "@alice's Home tab")
        demo.step("as bob")
        shown = demo.step("home", "@bob's Home tab")
        assert "card 4: [Approve] [Reject] [Reply]" in shown and "card 3:" not in shown
        refused = " ".join(demo.step("home approve 3").split())
        assert "card 3 is not in @bob's Home tab (it shows card 4)" in refused

        status = demo.finish("\x03")
    finally:
        demo.kill()
    assert status == 130
    assert demo.screen_lines()[-2:] == ["demo ended: 2 runs finished, 1 waiting", ""]
    assert "\x1b[1m" in demo.raw  # a terminal without NO_COLOR gets bold
    _check_screen(demo)
    assert _state_folders(tmp) == []


def test_the_readme_graph_runs_from_its_folder_and_ctrl_d_ends(folders: tuple[Path, Path]) -> None:
    cwd, tmp = folders
    section = (REPO / "docs" / "graphs.md").read_text()
    module = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert module is not None and '@graph_def("refunds"' in module.group(1)
    (cwd / "refunds.py").write_text(module.group(1))
    demo = PtyDemo(cwd=cwd, env={"TMPDIR": str(tmp), "GRAPH_MODULES": "refunds", "NO_COLOR": "1"})
    try:
        demo.wait_for("Answer card N")
        demo.settle()
        demo.step("/graph run refunds A-1001", "card 1 ─")
        demo.step("as alice")  # whoever started a run may not approve it
        assert "Refunded 25.0 on order A-1001, approved by U0ALICE" in demo.step("approve 1", "refunds finished")
        status = demo.finish("\x04")
    finally:
        demo.kill()
    assert status == 0
    assert demo.screen_lines()[-3:] == ["@alice in #demo> ", "demo ended: 1 run finished, 0 waiting", ""]
    assert not SGR.search(demo.raw)  # NO_COLOR: no styling at all
    _check_screen(demo)
    assert _state_folders(tmp) == []


def test_closing_the_terminal_window_is_an_ordinary_end_and_leaves_no_folder(folders: tuple[Path, Path]) -> None:
    """A hang-up (the window closed: the pty's master side gone, SIGHUP) ends the demo with status 0,
    as Ctrl-D does: closing the window is how a terminal session normally ends. Standard error goes
    to a file, so that what the demo says after the terminal is gone can still be read."""
    cwd, tmp = folders
    with (tmp.parent / "stderr.txt").open("w+") as stderr:
        demo = PtyDemo(cwd=cwd, env={"TMPDIR": str(tmp)}, stderr=stderr)
        try:
            demo.wait_for("Answer card N")
            demo.settle()
            assert len(_state_folders(tmp)) == 1
            status = demo.hang_up()
        finally:
            demo.kill()
        stderr.seek(0)
        said = stderr.read()
    assert status == 0, said
    assert said == ""  # no termios.error traceback, nothing about the lost terminal
    assert "Traceback" not in demo.raw
    assert list(tmp.iterdir()) == []
