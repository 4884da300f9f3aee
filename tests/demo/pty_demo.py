"""``approval-bot demo`` in a pseudo-terminal of 80x24, driven as a person types.

The process gets the pty as its controlling terminal (so Ctrl-C is a real SIGINT from
the terminal driver) and a window size, and a reader thread keeps everything it writes.
:meth:`PtyDemo.step` types a line and waits until the expected text has appeared, the
screen has been quiet for a moment and its last line is the prompt again.
"""

from __future__ import annotations

import fcntl
import os
import re
import select
import struct
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from demo.commands import USERS
from demo.mrkdwn import cols

SCRIPT = Path(sys.executable).parent / "approval-bot"
REPO = Path(__file__).resolve().parents[2]
COLUMNS, ROWS = 80, 24
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
SGR = re.compile(r"\x1b\[[0-9;]*m")
PROMPT = re.compile(r"^@[a-z]+ in #demo> $")
# Nothing of the test process's bot, Slack or AWS configuration reaches the demo.
_OURS = re.compile(
    r"^(AWS_|SLACK_|DYNAMODB_|SNAPSHOT_|GRAPH_|APPROVAL_BOT_|SQLITE_)|^(EXAMPLE_GRAPHS|LOG_LEVEL|NO_COLOR|PYTHONPATH)$"
)


class PtyDemo:
    """One demo process on a pty; ``raw`` is every byte it wrote, decoded."""

    def __init__(self, *, cwd: Path, env: Mapping[str, str], stderr: IO[Any] | None = None) -> None:
        """``stderr``: where the demo's standard error goes instead of the pty (to outlive it)."""
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
        # PYTHONPATH: this checkout's code, also where the console script was installed from another (a worktree).
        full = clean_env({"COLUMNS": str(COLUMNS), "LINES": str(ROWS), "TERM": "xterm", "PYTHONPATH": str(REPO), **env})
        self.process = subprocess.Popen(
            [str(SCRIPT), "demo"],
            stdin=slave,
            stdout=slave,
            stderr=slave if stderr is None else stderr,
            cwd=cwd,
            env=full,
            start_new_session=True,
            preexec_fn=_take_terminal,
        )
        os.close(slave)
        self._master = master
        self._bytes = bytearray()
        self._lock = threading.Lock()
        self._last = time.monotonic()
        self.typed: list[str] = []
        self._closing = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while not self._closing.is_set():
            try:
                # A read blocked in the kernel would keep the master open after os.close (no hang-up).
                if not select.select([self._master], [], [], 0.1)[0]:
                    continue
                chunk = os.read(self._master, 65536)
            except OSError:  # the process is gone and the pty closed
                return
            if not chunk:
                return
            with self._lock:
                self._bytes.extend(chunk)
                self._last = time.monotonic()

    @property
    def raw(self) -> str:
        with self._lock:
            return self._bytes.decode("utf-8", errors="replace")

    def screen_lines(self, since: int = 0) -> list[str]:
        """Lines as a terminal shows them: escapes dropped, ``\\r`` overwriting the line."""
        text = ANSI.sub("", self.raw[since:]).replace("\r\n", "\n")
        return [line.rsplit("\r", 1)[-1] for line in text.split("\n")]

    def type(self, text: str) -> int:
        """Send keys; returns the output position before them, for :meth:`screen_lines`."""
        mark = len(self.raw)
        os.write(self._master, text.encode())
        return mark

    def wait_for(self, predicate: str | re.Pattern[str], *, since: int = 0, timeout: float = 40.0) -> None:
        deadline = time.monotonic() + timeout
        while not _found(predicate, "\n".join(self.screen_lines(since))):
            if time.monotonic() > deadline:
                tail = "\n".join(self.screen_lines(since)[-30:])
                raise AssertionError(f"{predicate!r} did not appear within {timeout}s; screen ends:\n{tail}")
            time.sleep(0.05)

    def settle(self, *, since: int = 0, typed: str = "", quiet: float = 0.5, timeout: float = 20.0) -> None:
        """Wait until the prompt (and ``typed``, not yet entered) is the last line after ``since``, and stays so."""
        deadline = time.monotonic() + timeout
        last = re.compile(PROMPT.pattern.removesuffix("$") + re.escape(typed) + "$")
        while True:
            with self._lock:
                idle = time.monotonic() - self._last
            lines = self.screen_lines(since)
            if idle >= quiet and len(lines) >= 2 and last.match(lines[-1]):
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"no prompt as the last line; screen ends:\n{self.screen_lines()[-15:]}")
            time.sleep(0.05)

    def step(self, line: str, expect: str | re.Pattern[str] | None = None, *, timeout: float = 40.0) -> str:
        """Type ``line`` and Enter; returns what the screen showed for it, once the prompt is back."""
        self.typed.append(line)
        since = self.type(line + "\r")
        if expect is not None:
            self.wait_for(expect, since=since, timeout=timeout)
        self.settle(since=since)
        return "\n".join(self.screen_lines(since))

    def finish(self, keys: str, *, timeout: float = 30.0) -> int:
        """Press ``keys`` (Ctrl-C, Ctrl-D) and wait for the process to exit."""
        self.type(keys)
        try:
            return self.process.wait(timeout=timeout)
        finally:
            time.sleep(0.2)  # the reader thread drains the last bytes
            os.close(self._master)

    def hang_up(self, *, timeout: float = 30.0) -> int:
        """Close the terminal window (the pty's master side) and wait for the process to exit."""
        self._closing.set()
        self._reader.join()
        os.close(self._master)
        return self.process.wait(timeout=timeout)

    def too_wide(self) -> list[str]:
        """Screen lines wider than the terminal, in columns (a wide character takes two)."""
        typed = {f"@{user} in #demo> {line}" for user in USERS.values() for line in self.typed}
        return [line for line in self.screen_lines() if cols(line) > COLUMNS and line not in typed]

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def clean_env(extra: Mapping[str, str]) -> dict[str, str]:
    """This process's environment without its bot, Slack or AWS settings, plus ``extra``."""
    return {**{k: v for k, v in os.environ.items() if not _OURS.match(k)}, **extra}


def _take_terminal() -> None:
    """In the child (a new session): make the pty its controlling terminal, as a login shell has."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def _found(predicate: str | re.Pattern[str], text: str) -> bool:
    return predicate in text if isinstance(predicate, str) else predicate.search(text) is not None
