"""The demo's terminal: a prompt that stays put while the bot talks.

Cards arrive whenever the bot gets to them, often while the person sits at the prompt.
``input()`` runs in a reader thread; everything else is written through
:meth:`Console.say`, which, when the prompt is on screen, clears that line, prints the
output and draws the prompt again with whatever was typed so far (``readline``'s line
buffer), the way a chat client does. Standard library only: GNU readline or libedit
where Python has it, plain ``input()`` otherwise (the typed text then stays in the
terminal's own line buffer, it is just not redrawn).

The reader thread is a daemon: a person ending the demo with Ctrl-C is not made to
press Enter first, and the terminal settings readline changed are put back by
:meth:`Console.restore`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import sys
import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any, TextIO

from demo.mrkdwn import Run, paint, printable, wrap

_IDLE, _PENDING, _SHOWN = "idle", "pending", "shown"
_CLEAR_LINE = "\r\x1b[K"
_MAX_WIDTH = 100


class Console:
    """Output for the demo, and (when ``interactive``) the prompt and the reader thread."""

    def __init__(self, *, stream: TextIO | None = None, interactive: bool = False) -> None:
        self.stream = stream or sys.stdout
        self.color = self.stream.isatty() and not os.environ.get("NO_COLOR")
        self.prompt = ""
        self._lock = threading.Lock()
        self._state = _IDLE
        self._held: list[str] = []
        self._readline = _readline() if interactive else None
        self._go = threading.Event()
        self._saved_tty: Any = None
        # How the demo names what a log line names by id (``demo.numbers``: run 2, not its id).
        self.rename: Callable[[str], str] = lambda text: text

    @property
    def width(self) -> int:
        """Columns to use: one less than the terminal's, so no line ever wraps by itself."""
        return max(30, min(shutil.get_terminal_size((80, 24)).columns, _MAX_WIDTH + 1) - 1)

    def say(self, text: str) -> None:
        """Print ``text``; if the prompt is showing, print above it and redraw it."""
        with self._lock:
            if self._state == _SHOWN:
                typed = self._readline.get_line_buffer() if self._readline else ""
                self._write(f"{_CLEAR_LINE}{text}\n{self.prompt}{typed}")
            elif self._state == _PENDING:  # readline is drawing the prompt: after it
                self._held.append(text)
            else:
                self._write(text + "\n")

    def note(self, text: str, *, indent: str = "  ") -> None:
        """A message from the demo itself, wrapped to the width, control characters made visible."""
        lines = wrap([Run(printable(indent + text))], self.width)
        self.say("\n".join(paint(line, color=False) for line in lines))

    def end_line(self) -> None:
        """Start a fresh line after Ctrl-C or Ctrl-D: off the prompt, or over the ``^C`` the terminal echoed."""
        with self._lock:
            if self._state != _IDLE:
                self._write("\n")
                self._state = _IDLE
            elif self.stream.isatty():
                self._write(_CLEAR_LINE)

    def _write(self, text: str) -> None:
        with contextlib.suppress(OSError, ValueError):  # the terminal is gone (closed window): nothing to tell
            self.stream.write(text)
            self.stream.flush()

    # -- the reader thread ------------------------------------------------------------------------

    def start_reader(self, loop: asyncio.AbstractEventLoop, deliver: Callable[[str | None], None]) -> None:
        """Read lines in a daemon thread; each goes to ``deliver`` on ``loop`` (None: end of input)."""
        with contextlib.suppress(ImportError, OSError, ValueError):
            import termios

            self._saved_tty = termios.tcgetattr(sys.stdin.fileno())
        if self._readline is not None and hasattr(self._readline, "set_pre_input_hook"):
            self._readline.set_pre_input_hook(self._prompt_drawn)
        else:
            self._readline = None
        threading.Thread(target=self._read_lines, args=(loop, deliver), name="demo-input", daemon=True).start()

    def ask(self, prompt: str) -> None:
        """Let the reader show ``prompt`` and read the next line."""
        self.prompt = prompt
        self._go.set()

    def _read_lines(self, loop: asyncio.AbstractEventLoop, deliver: Callable[[str | None], None]) -> None:
        line: str | None = ""
        while line is not None:
            self._go.wait()
            self._go.clear()
            with self._lock:
                if self._readline is not None:
                    self._state = _PENDING  # the hook below marks it shown
                else:
                    self._write(self.prompt)
                    self._state = _SHOWN
            problem = None
            try:
                line = input(self.prompt if self._readline is not None else "")
            except (EOFError, OSError):  # OSError: the terminal is gone (EIO after a closed window)
                line = None
            except Exception as error:  # e.g. bytes that are not UTF-8: that line is lost, not the demo
                line, problem = "", f"could not read that line ({type(error).__name__}: {error})"
            with self._lock:
                self._state = _IDLE if line is not None else self._state
                if self._held:  # the prompt never showed (input failed at once): print them now
                    self._write("\n".join(self._held) + "\n")
                    self._held.clear()
            if problem:
                self.note(problem)
            loop.call_soon_threadsafe(deliver, line)

    def _prompt_drawn(self) -> None:
        """readline's pre-input hook: the prompt is on screen; print what came meanwhile."""
        with self._lock:
            self._state = _SHOWN
            if self._held:
                self._write(_CLEAR_LINE + "\n".join(self._held) + "\n" + self.prompt)
                self._held.clear()

    def restore(self) -> None:
        """Put the terminal back as it was before readline changed it."""
        if self._saved_tty is None:
            return
        try:
            import termios
        except ImportError:
            return
        # termios.error is no OSError: a closed terminal window raises it (EIO) here.
        with contextlib.suppress(termios.error, OSError, ValueError):
            termios.tcsetattr(sys.stdin.fileno(), termios.TCSADRAIN, self._saved_tty)


def _readline() -> ModuleType | None:
    """readline, set up for the demo, or None where Python has none (e.g. Windows)."""
    try:
        import readline
    except ImportError:
        return None
    # Pasted lines then run one by one, and no paste-mode escapes are left on exit.
    readline.parse_and_bind("set enable-bracketed-paste off")
    return readline


class ConsoleLogHandler(logging.Handler):
    """Log records as one line each, above the prompt: a traceback would bury the demo."""

    def __init__(self, console: Console) -> None:
        super().__init__()
        self.console = console

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage().split("\n", 1)[0]
            if record.exc_info and record.exc_info[1] is not None:
                error = record.exc_info[1]
                message += f" ({type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''})"
            self.console.note(f"({record.levelname.lower()} from {record.name}) {self.console.rename(message)}")
        except Exception:  # logging must never take the demo down
            self.handleError(record)
