"""``approval-bot`` as an operator meets it: the console script, run as a subprocess.

Every bad setting or argument must end the command with exit status 2 and exactly one
line on stderr that names the setting, and no traceback. The cases run concurrently (in
one module fixture) because each is a process start; most fail before Strands is imported.
The environment is controlled: no AWS, Slack or bot variable of the test process leaks
in, HOME is empty (no ~/.aws) and instance metadata is off, so botocore never waits on it.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from bot.cli import main
from bot.cli_help import READS, variables
from bot.settings import Settings
from tests.support.threaded_http import ThreadedHttpServer

SCRIPT = Path(sys.executable).parent / "approval-bot"
REPO = Path(__file__).resolve().parents[2]
TOKEN = "xoxb-not-to-be-shown-1234"
SLACK = {"SLACK_BOT_TOKEN": TOKEN, "SLACK_SIGNING_SECRET": "signing-secret-not-to-be-shown"}
KEYS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
APP = {"SLACK_APP_TOKEN": "xapp-1-A0-not-to-be-shown"}
NO_AWS_FILES = {"AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull}
BAD = {"AWS_REGION": "eu west 1"}
_OURS = re.compile(
    r"^(AWS_|SLACK_|DYNAMODB_|SNAPSHOT_|GRAPH_|APPROVAL_BOT_)|^(EXAMPLE_GRAPHS|BEDROCK_MODEL_ID|LOG_LEVEL|PORT|WORKERS|"
    r"LEASE_SECONDS|SQLITE_PATH|DELIVERY_GRACE_SECONDS|CANCEL_CHECK_SECONDS|DIRECTORY_TTL_SECONDS|PYTHONPATH)$"
)

MODULES = {
    "refunds.py": "from pathlib import Path\nPath('imported.txt').write_text('refunds')\n",
    "broken.py": "import json\nraise RuntimeError('the refunds API key is not configured')\n",
    "dup_a.py": "from graph_defs import graph_def\n\n@graph_def('same')\ndef build(): ...\n",
    "dup_b.py": "from graph_defs import graph_def\n\n@graph_def('same')\ndef build(): ...\n",
}


def _env(home: Path, extra: Mapping[str, str]) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not _OURS.match(k)}
    # PYTHONPATH: this checkout's packages, not whichever one the editable install points at.
    return {**keep, "HOME": str(home), "AWS_EC2_METADATA_DISABLED": "true", "PYTHONPATH": str(REPO), **extra}


def _run(
    args: Sequence[str], env: Mapping[str, str], *, home: Path, cwd: Path, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """The command's outcome; one that does not end (it started instead of refusing) fails its own case only."""
    command = [str(SCRIPT), *args]
    try:
        return subprocess.run(command, env=_env(home, env), cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as stuck:
        err = stuck.stderr.decode(errors="replace") if isinstance(stuck.stderr, bytes) else stuck.stderr or ""
        return subprocess.CompletedProcess(command, -9, "", f"still running after {timeout}s\n{err}")


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # closed again when the block ends: nothing listens


class _RefusingDynamoDB(ThreadedHttpServer):
    """Answers every DynamoDB request with the error its access key id names, as AWS would."""

    thread_name = "refusing-dynamodb"

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                found = re.search(r"Credential=([A-Za-z]+)/", self.headers.get("Authorization", ""))
                code = found.group(1) if found else "MissingAuthenticationTokenException"
                body = json.dumps({"__type": f"com.amazon.coral.service#{code}", "message": "refused"}).encode()
                self.send_response(400)
                self.send_header("Content-Type", "application/x-amz-json-1.0")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        return Handler


@dataclass(frozen=True)
class Case:
    id: str
    args: tuple[str, ...]
    names: tuple[str, ...]
    """What the one line must contain: the setting, and any detail that says what is wrong."""
    env: dict[str, str] = field(default_factory=dict)


def _cases(refusing: str, closed: str) -> list[Case]:
    table = {"DYNAMODB_TABLE": "runs"}
    region = {"AWS_REGION": "eu-west-1"}
    loud = {"LOG_LEVEL": "LOUD", **SLACK}
    return [
        *[Case(f"log-level-{c}", (c,), ("LOG_LEVEL", "'LOUD'"), loud) for c in READS],
        Case("port-out-of-range", ("serve", "--port", "70000"), ("--port", "70000", "65535")),
        Case("port-not-a-number", ("serve", "--port", "abc"), ("--port", "'abc'")),
        Case("sweep-seconds-zero", ("serve", "--sweep-seconds", "0"), ("--sweep-seconds", "1 or more")),
        Case("sweep-seconds-negative", ("socket", "--sweep-seconds=-5"), ("--sweep-seconds", "1 or more")),
        Case("sweep-seconds-nan", ("socket", "--sweep-seconds", "nan"), ("--sweep-seconds", "not a number of seconds")),
        Case(
            "sweep-seconds-inf", ("serve", "--sweep-seconds", "1e400"), ("--sweep-seconds", "not a number of seconds")
        ),
        Case(
            "delivery-grace",
            ("sweep",),
            ("DELIVERY_GRACE_SECONDS='abc'", "more than 0"),
            {**SLACK, "DELIVERY_GRACE_SECONDS": "abc"},
        ),
        Case(
            "cancel-check",
            ("serve",),
            ("CANCEL_CHECK_SECONDS='-1'", "from 0 to 60"),
            {**SLACK, "CANCEL_CHECK_SECONDS": "-1"},
        ),
        Case(
            "directory-ttl",
            ("socket",),
            ("DIRECTORY_TTL_SECONDS='86400'", "at most 3600"),
            {**SLACK, "DIRECTORY_TTL_SECONDS": "86400"},
        ),
        Case(
            "graph-model",
            ("serve",),
            ("GRAPH_MODEL='openai'", "bedrock or offline"),
            {**SLACK, "GRAPH_MODEL": "openai"},
        ),
        Case("unknown-command", ("serv",), ("serv", "serve")),
        Case("env-port-not-a-number", ("serve",), ("PORT='abc'", "65535"), {**SLACK, "PORT": "abc"}),
        Case("workers-negative", ("serve", "--workers=-1"), ("--workers", "0 (none, the default) to 64")),
        Case("workers-not-a-number", ("serve", "--workers", "two"), ("--workers", "'two'")),
        Case("env-workers", ("serve",), ("WORKERS='100'", "from 0 (none) to 64"), {**SLACK, "WORKERS": "100"}),
        Case(
            "socket-workers", ("socket",), ("WORKERS=2", "approval-bot serve", "Socket Mode"), {**SLACK, "WORKERS": "2"}
        ),
        Case("env-port-out-of-range", ("serve",), ("PORT='70000'", "65535"), {**SLACK, "PORT": "70000"}),
        Case("lease-too-short", ("sweep",), ("LEASE_SECONDS='2'", "5 or more"), {**SLACK, "LEASE_SECONDS": "2"}),
        Case("lease-not-a-number", ("socket",), ("LEASE_SECONDS='soon'",), {**SLACK, "LEASE_SECONDS": "soon"}),
        Case("slack-command", ("sweep",), ("SLACK_COMMAND='graph'", "/graph"), {**SLACK, "SLACK_COMMAND": "graph"}),
        Case("example-graphs", ("serve",), ("EXAMPLE_GRAPHS='maybe'", "true"), {**SLACK, "EXAMPLE_GRAPHS": "maybe"}),
        Case("missing-bot-token", ("serve",), ("SLACK_BOT_TOKEN", "xoxb-"), {"SLACK_SIGNING_SECRET": "s"}),
        Case("missing-app-token", ("socket",), ("SLACK_APP_TOKEN", "xapp-"), dict(SLACK)),
        Case("create-table-no-table", ("create-table",), ("DYNAMODB_TABLE",)),
        Case("create-table-no-region", ("create-table",), ("AWS_REGION",), {**table, **KEYS}),
        Case(
            "create-table-no-credentials", ("create-table",), ("AWS_ACCESS_KEY_ID", "AWS_PROFILE"), {**table, **region}
        ),
        Case(
            "create-table-bad-region",
            ("create-table",),
            ("AWS_REGION='eu west 1'",),
            {**table, "AWS_REGION": "eu west 1"},
        ),
        Case(
            "create-table-unknown-profile",
            ("create-table",),
            ("AWS_PROFILE='nope'",),
            {**table, **region, "AWS_PROFILE": "nope"},
        ),
        Case(
            "create-table-endpoint-unreachable",
            ("create-table",),
            ("AWS_ENDPOINT_URL_DYNAMODB", closed),
            {**table, **region, **KEYS, "AWS_ENDPOINT_URL_DYNAMODB": closed},
        ),
        Case(  # a password in the endpoint's URL is never shown (the check below: TOKEN not in the output)
            "create-table-endpoint-with-a-password",
            ("create-table",),
            ("AWS_ENDPOINT_URL_DYNAMODB", "***@"),
            {**table, **region, **KEYS, "AWS_ENDPOINT_URL_DYNAMODB": closed.replace("://", f"://me:{TOKEN}@")},
        ),
        Case(
            "create-table-endpoint-not-a-url",
            ("create-table",),
            ("AWS_ENDPOINT_URL_DYNAMODB='dynamodb.local'",),
            {**table, **region, **KEYS, "AWS_ENDPOINT_URL_DYNAMODB": "dynamodb.local"},
        ),
        *[
            Case(
                f"create-table-refused-{code}",
                ("create-table",),
                (code, "AWS_ACCESS_KEY_ID"),
                {**table, **region, **KEYS, "AWS_ACCESS_KEY_ID": code, "AWS_ENDPOINT_URL_DYNAMODB": refusing},
            )
            for code in ("UnrecognizedClientException", "InvalidSignatureException")
        ],
        Case("sweep-table-without-region", ("sweep",), ("AWS_REGION",), {**SLACK, **table, **KEYS}),
        # serve and socket ask the store before they start (bot.preflight), in the same words as sweep
        *[
            Case(
                f"{command}-no-credentials",
                (command,),
                ("no AWS credentials", "AWS_PROFILE", "AWS_ACCESS_KEY_ID"),
                {**SLACK, **APP, **table, **region, **NO_AWS_FILES},
            )
            for command in ("serve", "socket", "sweep")
        ],
        Case(
            "serve-refused-credentials",
            ("serve",),
            ("UnrecognizedClientException", "AWS_ACCESS_KEY_ID"),
            {
                **SLACK,
                **table,
                **region,
                **KEYS,
                "AWS_ACCESS_KEY_ID": "UnrecognizedClientException",
                "AWS_ENDPOINT_URL_DYNAMODB": refusing,
            },
        ),
        Case("serve-region-not-a-name", ("serve",), ("AWS_REGION='eu west 1'",), {**SLACK, **table, **KEYS, **BAD}),
        Case(
            "socket-region-not-a-name",
            ("socket",),
            ("AWS_REGION='eu west 1'",),
            {**SLACK, **APP, **table, **KEYS, **BAD},
        ),
        Case(
            "serve-region-mistyped",
            ("serve",),
            ("could not connect", "AWS_REGION (eu-wset-1)", "eu-west-1"),
            {**SLACK, **table, **KEYS, "AWS_REGION": "eu-wset-1"},
        ),
        Case(
            "serve-endpoint-unreachable",
            ("serve",),
            ("AWS_ENDPOINT_URL_DYNAMODB", closed),
            {**SLACK, **table, **region, **KEYS, "AWS_ENDPOINT_URL_DYNAMODB": closed},
        ),
        # token shapes, checked before anything else (no network)
        Case(
            "serve-app-token-as-bot-token",
            ("serve",),
            ("SLACK_BOT_TOKEN is an app-level token", "xoxb-", "belongs in SLACK_APP_TOKEN"),
            {**SLACK, "SLACK_BOT_TOKEN": "xapp-1-" + TOKEN},
        ),
        Case(
            "serve-user-token",
            ("serve",),
            ("SLACK_BOT_TOKEN is a user token", "xoxb-"),
            {**SLACK, "SLACK_BOT_TOKEN": "xoxp-" + TOKEN},
        ),
        Case(
            "serve-not-a-token",
            ("serve",),
            ("SLACK_BOT_TOKEN does not look like", "xoxb-"),
            {**SLACK, "SLACK_BOT_TOKEN": "token-" + TOKEN},
        ),
        Case(
            "serve-token-with-line-break",
            ("serve",),
            ("SLACK_BOT_TOKEN has a space or line break",),
            {**SLACK, "SLACK_BOT_TOKEN": TOKEN + "\n"},
        ),
        Case(
            "socket-bot-token-as-app-token",
            ("socket",),
            ("SLACK_APP_TOKEN is a bot token", "xapp-", "belongs in SLACK_BOT_TOKEN"),
            {**SLACK, "SLACK_APP_TOKEN": TOKEN},
        ),
        Case("sweep-sqlite-path", ("sweep",), ("SQLITE_PATH",), {**SLACK, "SQLITE_PATH": "refunds.py/runs.sqlite3"}),
        Case(
            "graph-module-not-found",
            ("sweep",),
            ("GRAPH_MODULES", "'nope'", "not found"),
            {**SLACK, "GRAPH_MODULES": "nope"},
        ),
        Case(
            "graph-module-file-name",
            ("serve",),
            ("GRAPH_MODULES", "GRAPH_MODULES=refunds"),
            {**SLACK, "GRAPH_MODULES": "refunds.py"},
        ),
        Case(
            "graph-module-fails",
            ("sweep",),
            ("GRAPH_MODULES", "'broken'", "RuntimeError: the refunds API key is not configured", "broken.py:2"),
            {**SLACK, "GRAPH_MODULES": "broken"},
        ),
        Case(
            "graph-modules-duplicate-name",
            ("sweep",),
            ("GRAPH_MODULES", "'same'", "defined twice", "dup_a.build", "dup_b.build"),
            {**SLACK, "GRAPH_MODULES": "dup_a,dup_b"},
        ),
    ]


@dataclass(frozen=True)
class Outcome:
    case: Case
    done: subprocess.CompletedProcess[str]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the graph modules, the commands' working directory (and HOME)."""
    folder = tmp_path_factory.mktemp("cli")
    for name, source in MODULES.items():
        (folder / name).write_text(source)
    (folder / "home").mkdir()
    return folder


@pytest.fixture(scope="module")
def outcomes(workdir: Path) -> Iterator[dict[str, Outcome]]:
    with _RefusingDynamoDB() as refusing:
        cases = _cases(refusing.url, f"http://127.0.0.1:{_closed_port()}")
        base = {"SQLITE_PATH": str(workdir / "runs.sqlite3")}
        with ThreadPoolExecutor(max_workers=4) as pool:
            runs = {
                c.id: pool.submit(_run, c.args, {**base, **c.env}, home=workdir / "home", cwd=workdir) for c in cases
            }
            yield {c.id: Outcome(case=c, done=runs[c.id].result()) for c in cases}


def test_the_console_script_is_installed() -> None:
    """The cases run it, not ``python -m bot.cli``: only the script lacks the cwd on sys.path."""
    assert SCRIPT.exists(), f"{SCRIPT}: install the project into this interpreter's environment (pip install -e .)"


@pytest.mark.parametrize("case", [c.id for c in _cases("http://refusing", "http://closed")])
def test_a_bad_setting_is_one_line_naming_it(outcomes: dict[str, Outcome], case: str) -> None:
    outcome = outcomes[case]
    done, names = outcome.done, outcome.case.names
    shown = f"exit {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    assert "Traceback" not in done.stdout + done.stderr, shown
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, shown
    assert done.returncode == 2, shown
    assert lines[0].startswith("approval-bot"), shown
    for name in names:
        assert name in lines[0], f"{name!r} missing: {shown}"
    assert TOKEN not in done.stdout + done.stderr


def test_graph_modules_finds_a_module_in_the_current_directory(workdir: Path, tmp_path: Path) -> None:
    (workdir / "imported.txt").unlink(missing_ok=True)
    env = {**SLACK, "GRAPH_MODULES": "refunds", "SQLITE_PATH": str(tmp_path / "runs.sqlite3")}

    done = _run(["sweep"], env, home=workdir / "home", cwd=workdir)

    assert done.returncode == 0, done.stderr
    assert (workdir / "imported.txt").read_text() == "refunds"


def test_files_named_like_the_projects_packages_do_not_shadow_them(workdir: Path, tmp_path: Path) -> None:
    """The editable install is searched after ``sys.path``: a ``demo.py`` next to the graphs must not win."""
    folder = tmp_path / "shadows"
    folder.mkdir()
    (folder / "refunds.py").write_text((workdir / "refunds.py").read_text())
    for name in ("engine", "persistence", "graph_defs", "localslack", "demo"):
        (folder / f"{name}.py").write_text(f"raise SystemExit('the local {name}.py was imported')\n")
    env = {**SLACK, "GRAPH_MODULES": "refunds", "SQLITE_PATH": str(tmp_path / "runs.sqlite3")}

    done = _run(["sweep"], env, home=workdir / "home", cwd=folder)

    assert done.returncode == 0, done.stderr
    assert (folder / "imported.txt").read_text() == "refunds"


def test_serve_says_listening_once_and_warns_once_when_no_graph_is_registered(tmp_path: Path) -> None:
    port = _closed_port()
    env = {**SLACK, "SQLITE_PATH": str(tmp_path / "runs.sqlite3"), "PORT": str(port)}
    log = tmp_path / "serve.log"
    with log.open("w") as sink:
        process = subprocess.Popen(
            [str(SCRIPT), "serve", "--host", "127.0.0.1"],
            env=_env(tmp_path, env),
            cwd=tmp_path,
            stdout=sink,
            stderr=subprocess.STDOUT,
            text=True,
        )
    try:
        deadline = time.monotonic() + 60
        while "listening on" not in log.read_text() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)  # a second banner, if any, would follow at once
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
    output = log.read_text()
    assert output.count(f"listening on http://127.0.0.1:{port}/slack/events") == 1, output
    warnings = [line for line in output.splitlines() if "no graphs are registered" in line]
    assert len(warnings) == 1 and "EXAMPLE_GRAPHS" in warnings[0] and "GRAPH_MODULES" in warnings[0], output
    assert "Traceback" not in output and process.returncode == 0, output


@pytest.mark.parametrize("command", sorted(READS))
def test_help_lists_the_environment_the_command_reads(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main([command, "--help"])
    assert exited.value.code == 0
    text = capsys.readouterr().out
    listed = set(re.findall(r"^  ([A-Z][A-Z0-9_]+)  ", text.split("environment:")[1], re.M))
    assert listed == variables(command)


def test_the_help_lists_every_setting_where_it_is_used() -> None:
    settings = {str(f.alias) for f in Settings.model_fields.values()}
    assert settings <= variables("serve") | variables("socket") | variables("sweep")
    assert "PORT" in variables("serve") and "PORT" not in variables("socket") | variables("sweep")
    assert "WORKERS" in variables("serve") and "WORKERS" not in variables("socket") | variables("sweep")
    assert "SLACK_APP_TOKEN" in variables("socket") and "SLACK_APP_TOKEN" not in variables("serve")
    assert {"DYNAMODB_TABLE", "AWS_REGION", "AWS_ENDPOINT_URL_DYNAMODB"} <= variables("create-table")
    assert not {"SLACK_BOT_TOKEN", "GRAPH_MODULES"} & variables("create-table")
    assert "GRAPH_MODULES" in variables("demo")
