"""Lambda execution environments: each a subprocess running the handler one event at a time.

One execution environment: a subprocess (``tests/support/lambda_container.py``) that
imports the handler on its first event (the cold start) and then handles events one at a
time, like a warm container, until it is closed or killed (SIGKILL, mid-invocation if need
be: a crash or a timeout). ``LambdaPool`` (``pool``) hands them out the way Lambda scales.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import queue
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Final, Self

from tests.support.aws import REGION
from tests.support.lambda_.identity import FUNCTION_NAME, _now
from tests.support.lambda_container import HANDLER_ENV, TIMEOUT_ENV

REPO: Final = Path(__file__).resolve().parents[3]
INIT_GRACE_SECONDS: Final = 10.0
"""Lambda gives an on-demand function's init phase up to 10 s on top of its timeout."""


class LambdaError(RuntimeError):
    """An invocation of a ``LambdaContainer`` did not return a result."""


class LambdaHandlerError(LambdaError):
    """The handler raised (or its module failed to import): Lambda's ``errorType``/``errorMessage``."""

    def __init__(self, error_type: str, message: str, stack_trace: Sequence[str], request_id: str) -> None:
        super().__init__(f"{error_type}: {message}")
        self.error_type = error_type
        self.error_message = message
        self.stack_trace = list(stack_trace)
        self.request_id = request_id


class LambdaContainerDied(LambdaError):
    """The container's process ended (killed, crashed) before answering."""


class LambdaTimeout(LambdaError):
    """No answer within the timeout: the container was killed, as Lambda ends a timed-out environment."""


@dataclass(frozen=True)
class ContainerInvocation:
    """One event a container handled, with its timings."""

    request_id: str
    ok: bool
    seconds: float
    """The handler's own run time."""
    init_seconds: float | None
    """The handler module's import time when this event caused it (the cold start), else None."""
    wall_seconds: float
    """From handing the event over to reading the answer, as the caller waited (process start included)."""


def _container_env(
    env: Mapping[str, str], *, handler: str, function_name: str, timeout: float, memory_mb: int
) -> dict[str, str]:
    """The test's variables over Lambda's reserved ones, over this process's minus anything AWS/Slack/bot.

    Nothing AWS-, Slack- or store-related leaks from the test process (the moto fixture sets
    AWS variables session-wide), so the container sees only what the test hands it, as a
    function sees only its configuration.
    """
    prefixes = ("AWS_", "SLACK_", "DYNAMODB_", "SNAPSHOT_", "LAMBDA_CONTAINER_", "_HANDLER")
    keep = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
    region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or REGION
    day = _now().strftime("%Y/%m/%d")
    reserved = {
        "AWS_LAMBDA_FUNCTION_NAME": function_name,
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(memory_mb),
        "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{function_name}",
        "AWS_LAMBDA_LOG_STREAM_NAME": f"{day}/[$LATEST]{secrets.token_hex(16)}",
        "AWS_LAMBDA_INITIALIZATION_TYPE": "on-demand",
        "AWS_EXECUTION_ENV": f"AWS_Lambda_python{sys.version_info.major}.{sys.version_info.minor}",
        "AWS_REGION": region,
        "AWS_DEFAULT_REGION": region,
        "LAMBDA_TASK_ROOT": str(REPO),
        "_HANDLER": handler.replace(":", "."),
        "TZ": ":UTC",
        "PYTHONPATH": str(REPO),
        "PYTHONUNBUFFERED": "1",
    }
    return {
        **keep,
        **reserved,
        **env,
        "AWS_LAMBDA_FUNCTION_NAME": function_name,
        HANDLER_ENV: handler,
        TIMEOUT_ENV: str(timeout),
    }


class LambdaContainer:
    """One Lambda execution environment: a subprocess handling events one at a time.

    The process starts on the first ``invoke`` (or ``start()``); the handler module is imported
    on the first event, whose ``init_seconds`` is the cold start. ``env`` is the function's
    configuration (the test's SLACK_*, DYNAMODB_TABLE, AWS_ENDPOINT_URL_*, fake credentials...);
    ``handler`` defaults to ``$LAMBDA_CONTAINER_HANDLER`` or ``bot.lambda_handler:handler``.
    Everything the process writes to stdout or stderr (logs, prints, tracebacks) goes to
    ``log_path`` (``stderr_text()``).

    Calls to ``invoke`` on one container queue up behind each other, like events in one
    environment; a real Lambda never queues but starts another environment, which
    ``LambdaPool`` does.
    """

    _numbers = itertools.count(1)

    def __init__(
        self,
        env: Mapping[str, str] | None = None,
        *,
        handler: str | None = None,
        function_name: str | None = None,
        timeout: float = 900.0,
        memory_mb: int = 1024,
        log_path: Path | None = None,
        name: str | None = None,
    ) -> None:
        env = dict(env or {})
        self.name = name or f"container-{next(self._numbers)}"
        self.handler = handler or env.get(HANDLER_ENV) or os.environ.get(HANDLER_ENV) or "bot.lambda_handler:handler"
        self.function_name = function_name or env.get("AWS_LAMBDA_FUNCTION_NAME") or FUNCTION_NAME
        self.timeout = timeout
        self.env = _container_env(
            env, handler=self.handler, function_name=self.function_name, timeout=timeout, memory_mb=memory_mb
        )
        if log_path is None:
            handle, raw = tempfile.mkstemp(prefix=f"lambda-{self.name}-", suffix=".log")
            os.close(handle)
            log_path = Path(raw)
        self.log_path = log_path
        self.invocations: list[ContainerInvocation] = []
        self.started_at: float | None = None
        self.process_start_seconds: float | None = None
        """From spawning the process to its first answer, minus the handler's own time: interpreter plus import."""
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._replies: queue.Queue[bytes | None] = queue.Queue()
        self._lock = threading.Lock()
        self._busy = 0
        self._reserved = 0
        self._killed = False

    # -- life cycle --------------------------------------------------------------------------

    def start(self) -> Self:
        """Spawn the process (idempotent). It idles until the first event, which imports the handler."""
        with self._lock:
            self._spawn()
        return self

    def command(self) -> tuple[list[str], Path]:
        """What the container runs, and where: this checkout's runtime stand-in."""
        return [sys.executable, "-m", "tests.support.lambda_container"], REPO

    def _spawn(self) -> None:
        if self._process is not None:
            return
        self._log = self.log_path.open("ab")
        self.started_at = time.monotonic()
        argv, cwd = self.command()
        self._process = subprocess.Popen(
            argv,
            env=self.env,
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
        )
        reader = threading.Thread(target=self._read_replies, args=(self._process,), name=f"{self.name}-replies")
        reader.daemon = True
        reader.start()

    def _read_replies(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            self._replies.put(line)
        self._replies.put(None)

    @property
    def started(self) -> bool:
        return self._process is not None

    @property
    def alive(self) -> bool:
        """Not killed, not exited (a container never started is alive: it is cold)."""
        return not self._killed and (self._process is None or self._process.poll() is None)

    @property
    def busy(self) -> bool:
        """An invocation is running or queued on it, or a chooser just picked it for one.

        Set as soon as ``invoke`` is called, and already when ``LambdaPool`` hands the container
        out, so that ``gather(pool().invoke(a), pool().invoke(b))`` gets two containers.
        """
        return self._busy > 0 or self._reserved > 0

    def reserve(self) -> None:
        """Count as busy until the next ``invoke`` starts (what ``LambdaPool`` does when it picks this one)."""
        self._reserved += 1

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    @property
    def cold_start_seconds(self) -> float | None:
        """The handler module's import time on the first event, once there was one."""
        return next((i.init_seconds for i in self.invocations if i.init_seconds is not None), None)

    def kill(self) -> None:
        """SIGKILL the process, mid-invocation or not: no clean-up, as Lambda ends a timed-out or crashed environment.

        A pending ``invoke`` then raises ``LambdaContainerDied``; so does every later one.
        """
        self._killed = True
        if self._process is not None and self._process.poll() is None:
            self._process.send_signal(signal.SIGKILL)
            self._process.wait(timeout=10)

    def hang_up(self) -> None:
        """Close the process's stdin: it finishes the event in hand, if any, and exits."""
        if self._process is not None and self._process.stdin is not None:
            with contextlib.suppress(OSError):
                self._process.stdin.close()

    def close(self) -> None:
        """End the process politely (stdin closed, the loop ends), killing it if it does not exit in 5 s."""
        process = self._process
        if process is not None and process.poll() is None:
            self.hang_up()
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.kill()
        if process is not None:
            for stream in (process.stdin, process.stdout):
                with contextlib.suppress(OSError):
                    if stream is not None:
                        stream.close()
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def stderr_text(self) -> str:
        """All the process wrote (logs, prints, tracebacks), e.g. to assert that no traceback appeared."""
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    # -- invocations -------------------------------------------------------------------------

    async def invoke(self, event: Mapping[str, Any], timeout: float | None = None) -> Any:
        """Run the handler on ``event`` in this container and return what it returned.

        Raises ``LambdaHandlerError`` if it raised, ``LambdaContainerDied`` if the process
        died first, ``LambdaTimeout`` (after killing it) if no answer came within ``timeout``
        (default: the function timeout, plus Lambda's init allowance on a cold start).
        The wait happens in a thread, so the event loop keeps serving (the local Slack the
        handler calls lives on it).
        """
        self._busy += 1  # before any await, so a chooser called next sees this container taken
        self._reserved = max(0, self._reserved - 1)
        try:
            return await asyncio.to_thread(self.invoke_sync, event, timeout)
        finally:
            self._busy -= 1

    def invoke_sync(self, event: Mapping[str, Any], timeout: float | None = None) -> Any:
        """``invoke`` for code without an event loop; blocks the calling thread."""
        line = (json.dumps(event) + "\n").encode()
        with self._lock:
            if self._killed:
                raise LambdaContainerDied(f"{self.name} was killed")
            first = not self.invocations
            cold = self.cold_start_seconds is None
            self._spawn()
            process = self._process
            assert process is not None and process.stdin is not None
            limit = timeout if timeout is not None else self.timeout + (INIT_GRACE_SECONDS if cold else 0.0)
            sent = time.monotonic()
            try:
                process.stdin.write(line)
                process.stdin.flush()
            except (OSError, ValueError) as exc:  # ValueError: stdin already closed by hang_up()
                raise self._died(f"could not take the event ({exc})") from exc
            try:
                raw = self._replies.get(timeout=limit)
            except queue.Empty:
                self.kill()
                raise LambdaTimeout(f"{self.name}: Task timed out after {limit:.2f} seconds") from None
            if raw is None:
                self._replies.put(None)  # stay dead for later calls
                raise self._died("died mid-invocation")
            reply: dict[str, Any] = json.loads(raw)
            wall = time.monotonic() - sent
            self.invocations.append(
                ContainerInvocation(
                    request_id=str(reply.get("request_id", "")),
                    ok=bool(reply.get("ok")),
                    seconds=float(reply.get("seconds") or 0.0),
                    init_seconds=reply.get("init_seconds"),
                    wall_seconds=wall,
                )
            )
            if first and self.started_at is not None:
                self.process_start_seconds = time.monotonic() - self.started_at - float(reply.get("seconds") or 0.0)
        if not reply.get("ok"):
            raise LambdaHandlerError(
                str(reply.get("errorType", "Error")),
                str(reply.get("errorMessage", reply.get("error", ""))),
                reply.get("stackTrace") or [],
                str(reply.get("request_id", "")),
            )
        return reply.get("result")

    def _died(self, what: str) -> LambdaContainerDied:
        code = None if self._process is None else self._process.poll()
        tail = self.stderr_text()[-2000:]
        return LambdaContainerDied(f"{self.name} {what} (exit code {code}); its log ends:\n{tail}")

    def __repr__(self) -> str:
        state = "dead" if not self.alive else ("busy" if self.busy else ("warm" if self.invocations else "cold"))
        return f"LambdaContainer({self.name}, {state}, {len(self.invocations)} invocations)"
