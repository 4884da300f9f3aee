"""``approval-bot demo < /dev/null``: the scripted walk-through CI runs, as a log reads it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.demo.pty_demo import SCRIPT, clean_env


def test_the_walk_through_finishes_three_runs_in_80_columns_and_leaves_no_folder(tmp_path: Path) -> None:
    env = clean_env({"TMPDIR": str(tmp_path), "COLUMNS": "80"})
    done = subprocess.run(
        [str(SCRIPT), "demo"], stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert done.stdout.rstrip().endswith("Demo finished: 3 runs finished, 4 cards answered.")
    assert done.stderr == ""
    lines = done.stdout.splitlines()
    assert not [line for line in lines if len(line) > 80]
    assert not re.search(r"\x1b\[|:white_check_mark:|<@U|\*deploy\*", done.stdout)  # not a terminal: no styling
    # Each step's answer is printed before the next step starts, the graph list too.
    assert done.stdout.index("Graphs you can run") < done.stdout.index("> /graph run deploy billing 1.2.3")
    assert list(tmp_path.iterdir()) == []
