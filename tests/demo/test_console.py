"""The prompt stays the last line: output that comes while it shows goes above it."""

from __future__ import annotations

import asyncio
import io
import logging
import threading
from collections.abc import Callable

import pytest

from demo import console as console_module
from demo.console import Console, ConsoleLogHandler

PROMPT = "@alice in #demo> "


class FakeReadline:
    """What the console uses of readline: the pre-input hook and the typed text."""

    def __init__(self) -> None:
        self.hook: Callable[[], None] | None = None
        self.buffer = ""

    def set_pre_input_hook(self, hook: Callable[[], None]) -> None:
        self.hook = hook

    def get_line_buffer(self) -> str:
        return self.buffer


async def test_output_while_the_prompt_shows_goes_above_it_with_the_typed_text_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stream, readline = io.StringIO(), FakeReadline()
    about_to_draw, draw, typed, enter = (threading.Event() for _ in range(4))

    def fake_input(prompt: str) -> str:  # readline: draw the prompt, run the hook, read keys
        about_to_draw.set()
        draw.wait(5)
        stream.write(prompt)
        assert readline.hook is not None
        readline.hook()
        readline.buffer = "appr"
        stream.write("appr")
        typed.set()
        enter.wait(5)
        return "approve 1"

    monkeypatch.setattr(console_module, "_readline", lambda: readline)
    monkeypatch.setattr("builtins.input", fake_input)
    console = Console(stream=stream, interactive=True)
    lines: asyncio.Queue[str | None] = asyncio.Queue()
    console.start_reader(asyncio.get_running_loop(), lines.put_nowait)
    console.say("before the prompt")
    console.ask(PROMPT)
    await asyncio.to_thread(about_to_draw.wait, 5)
    console.say("while readline draws the prompt")  # held until the prompt is on screen
    assert stream.getvalue() == "before the prompt\n"
    draw.set()
    await asyncio.to_thread(typed.wait, 5)
    console.say("┌─ card 1")
    assert stream.getvalue() == (
        f"before the prompt\n{PROMPT}\r\x1b[Kwhile readline draws the prompt\n{PROMPT}"
        f"appr\r\x1b[K┌─ card 1\n{PROMPT}appr"
    )
    enter.set()
    assert await asyncio.wait_for(lines.get(), 5) == "approve 1"
    console.say("the answer")  # the prompt is gone: a plain line, no redraw
    assert stream.getvalue().rsplit("appr", 1)[1] == "the answer\n"


def test_notes_wrap_to_the_terminal_and_log_records_are_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "40")
    stream = io.StringIO()
    console = Console(stream=stream)
    assert console.width == 39 and not console.color  # not a terminal: no styling
    console.note("the bot refused it: This is not valid JSON: Expecting a value (line 1)")
    assert all(len(line) <= 39 for line in stream.getvalue().splitlines())
    assert stream.getvalue().splitlines()[1].startswith("    ")  # the same note, continued

    stream.truncate(0)
    stream.seek(0)
    log = logging.getLogger("tests.demo.console")
    log.addHandler(ConsoleLogHandler(console))
    log.propagate = False
    try:
        try:
            raise ValueError("bad\nsecond line")
        except ValueError:
            log.exception("hook failed\nwith detail")
    finally:
        log.handlers.clear()
        log.propagate = True
    shown = stream.getvalue()
    assert "Traceback" not in shown and "second line" not in shown and "with detail" not in shown
    assert " ".join(shown.split()) == "(error from tests.demo.console) hook failed (ValueError: bad)"


def test_restore_after_the_terminal_is_gone_raises_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    import termios

    def gone(*_: object) -> None:
        raise termios.error(5, "Input/output error")  # a closed window; termios.error is no OSError

    monkeypatch.setattr(termios, "tcsetattr", gone)
    console = Console(stream=io.StringIO())
    console._saved_tty = [0, 0, 0, 0, 0, 0, []]
    console.restore()


def test_notes_and_help_wrap_to_a_narrow_terminal_and_show_control_characters(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from demo.commands import HELP
    from demo.mrkdwn import cols

    monkeypatch.setenv("COLUMNS", "40")
    stream = io.StringIO()
    console = Console(stream=stream)
    console.note(HELP, indent="")
    console.note("'\x1b]0;title\x07\x1b[2J' is not a demo command")
    lines = stream.getvalue().splitlines()
    assert all(cols(line) <= 39 for line in lines), lines
    assert "\x1b" not in stream.getvalue() and "^[]0;title^G^[[2J" in stream.getvalue()
