"""A Lambda cold start answering one slash command: ours against the bare Bolt app of Bolt's guide.

Each sample is a fresh Python interpreter (a subprocess) that imports a handler and hands
it one signed ``/graph run deploy billing 1.2.3``, as a Lambda Function URL event (the
body base64-encoded, as the Function URL delivers Slack's form posts):

* ours: ``bot.lambda_handler:handler`` (``template.yaml``'s handler);
* bare: ``bench.bare_bolt_lambda:handler``, the app of Bolt's own AWS Lambda guide
  (``App(process_before_response=True)``, a ``/graph`` listener that acks and has a lazy
  listener, ``SlackRequestHandler(app).handle(event, context)``).

Both hand the work past the ack to another invocation of their function through boto3's
Lambda client: ``AWS_ENDPOINT_URL_LAMBDA`` points at a ``LocalLambda``
(``tests/support/lambda_/``) that records each ``Invoke`` instead of running it, and
every sample must have made exactly one. Both get the same environment (``SLACK_API_URL``
at a local Slack, ``localslack.LocalSlack``; the function's name, fake credentials and
region, no AWS profile or metadata service) but for Slack's secrets, which each gets the
way it is deployed: ours only ``SLACK_SECRET_ARN``, as ``template.yaml`` gives it, so its
init phase makes a Secrets Manager client and waits for one round trip (to a moto server
on 127.0.0.1, ``AWS_ENDPOINT_URL_SECRETS_MANAGER``; every cold start of ours must have
read the secret, or the bench fails); the bare app the token and signing secret as plain
variables, as Bolt's guide has them. ``--plain-secrets`` gives ours the plain variables
too (the bench before it read the secret).

Per sample, three times: the wall time from spawning the process to the handler's
return (what Slack waits for on a cold start, less the Lambda runtime's own start, which
both share), and inside the process the handler module's import and the first event's
handling. Samples alternate (ours, bare; then bare, ours; ...) so machine noise hits
both alike. After the handler returns, the child lists which heavy packages are loaded,
which boto3 clients exist and which botocore service models were read. One more run of
each under ``python -X importtime`` gives the import breakdown (not timed).

Both build their app at import, as Lambda's init phase runs it before the first event (the
guide's ``App``, with its ``auth.test``; our whole runtime, the Slack secrets' read and the
handoff's Lambda client). The guide's Bolt makes its Lambda client on the first event
(``LambdaLazyListenerRunner``). Two ratios are reported. The wall time's comes first: on a
cold start without provisioned concurrency Slack waits for the init phase and the first
event alike, so that is what it waits for (``TARGET_RATIO``). Beside it, the first event's
handling (issue 23's measure, ``HANDLE_TARGET_RATIO``), which is low because the same work
moved into the init phase; it only leaves the request's path when the init phase runs
before any request (provisioned concurrency, or a container Lambda pre-initialised). The
child also lists the modules the first event imported: what an init phase left for it.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal
from urllib.parse import urlencode

from bench.stats import percentile

REPO: Final = Path(__file__).resolve().parents[1]
RESULTS: Final = REPO / "bench" / "results"
OURS_HANDLER: Final = "bot.lambda_handler:handler"
BARE_HANDLER: Final = "bench.bare_bolt_lambda:handler"
FUNCTION: Final = "approval-bot"
REGION: Final = "eu-west-1"
ACCOUNT: Final = "123456789012"
COMMAND_TEXT: Final = "run deploy billing 1.2.3"
CHANNEL: Final = "C0BENCH"
REQUESTER: Final = "U0ALICE"
TARGET_RATIO: Final = 1.3
"""The wall time's: spawn to the ack returned, ours over the bare app's median."""
HANDLE_TARGET_RATIO: Final = 1.15
"""The first event's handling, ours over the bare app's median (issue 23, item 3)."""
MIN_RECORDED_SAMPLES: Final = 11
"""Fewest cold starts of each side behind a recorded result (``--write``)."""
SLACK_ACK_DEADLINE: Final = 3.0
DEFAULT_SAMPLES: Final = 15
HEAVY: Final = (
    "strands",
    "boto3",
    "botocore",
    "aiohttp",
    "pydantic",
    "pydantic_settings",
    "jsonschema",
    "slack_bolt",
    "aws_lambda_powertools",
    "opentelemetry",
)
BASELINE: Final = "bare Bolt App of Bolt's Lambda guide (lazy listener), fresh interpreter each, interleaved"
BARE_AUTH_ENV: Final = "BARE_BOLT_AUTH"
"""Read by ``bench/bare_bolt_lambda.py`` (not imported here: importing it builds its app)."""
NO_PYC_ENV: Final = "BENCH_NO_PYC"
PLAIN_SLACK_SECRETS: Final = ("SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET")
"""What Bolt's guide reads from the environment, and the deployed function never has there."""
SECRET_READ: Final = "secretsmanager.POST"
"""A ``GetSecretValue`` as the counting moto server books it (``tests/support/aws.py``)."""
_MARKER: Final = "-- cold-start bench: importing the handler --"
_CHILD_TIMEOUT: Final = 60.0

BareAuth = Literal["guide", "authorize"]

# The child: standard library only until the handler's import, like Lambda's own bootstrap
# (which has json, logging and the root logger's handler in place before it imports the
# handler). Its stdout and stderr are the handler's; the result goes to a file.
_CHILD: Final = r"""
import gc, importlib, json, logging, os, sys, time

started = time.monotonic()
event_path, spec, out_path, marker = sys.argv[1:5]
with open(event_path) as f:
    event = json.load(f)
logging.getLogger().addHandler(logging.StreamHandler(sys.stderr))

if os.environ.get("BENCH_NO_PYC"):
    # As on Lambda after ``sam build``: no bytecode cache outside the runtime's standard
    # library (wheels are unpacked, sources copied without __pycache__, /var/task is
    # read-only), so every other module is compiled from source at each cold start.
    import importlib.machinery as machinery

    stdlib = os.path.dirname(os.__file__) + os.sep

    class FromSource(machinery.SourceFileLoader):
        def get_code(self, fullname):
            return self.source_to_code(self.get_data(self.path), self.path)

    cached = next(h for h in sys.path_hooks if "FileFinder" in getattr(h, "__qualname__", ""))
    uncached = machinery.FileFinder.path_hook(
        (machinery.ExtensionFileLoader, machinery.EXTENSION_SUFFIXES),
        (FromSource, machinery.SOURCE_SUFFIXES),
        (machinery.SourcelessFileLoader, machinery.BYTECODE_SUFFIXES),
    )

    def hook(path):
        where = os.path.abspath(path or ".") + os.sep
        return cached(path) if where.startswith(stdlib) and "site-packages" not in where else uncached(path)

    sys.path_hooks[sys.path_hooks.index(cached)] = hook
    sys.path_importer_cache.clear()


class Context:
    def __init__(self):
        name = os.environ["AWS_LAMBDA_FUNCTION_NAME"]
        region = os.environ["AWS_REGION"]
        self.function_name = name
        self.function_version = "$LATEST"
        self.invoked_function_arn = "arn:aws:lambda:%s:%s:function:%s" % (region, os.environ["BENCH_ACCOUNT"], name)
        self.memory_limit_in_mb = os.environ.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "1024")
        self.aws_request_id = os.urandom(16).hex()
        self.log_group_name = "/aws/lambda/" + name
        self.log_stream_name = ""
        self.identity = None
        self.client_context = None
        self._deadline = time.monotonic() + 900

    def get_remaining_time_in_millis(self):
        return max(0, int((self._deadline - time.monotonic()) * 1000))


context = Context()
module_name, _, attr = spec.partition(":")
sys.stderr.write(marker + "\n")
sys.stderr.flush()
import_started = time.monotonic()
handler = getattr(importlib.import_module(module_name), attr)
imported = time.monotonic()
modules_before = set(sys.modules)
result = handler(event, context)
returned = time.monotonic()
handle_imports = sorted(set(sys.modules) - modules_before)

clients, models = [], []
gc.unfreeze()  # the handler freezes what its cold start made; get_objects() skips frozen objects
if "botocore.client" in sys.modules:
    base_client = sys.modules["botocore.client"].BaseClient
    loader_type = sys.modules["botocore.loaders"].Loader
    for obj in gc.get_objects():
        if isinstance(obj, base_client):
            clients.append(obj.meta.service_model.service_name)
        elif isinstance(obj, loader_type):
            models += [key[1] for key in obj._cache if key and key[0] == "load_service_model"]
with open(out_path, "w") as f:
    json.dump(
        {
            "started": started,
            "import_started": import_started,
            "imported": imported,
            "returned": returned,
            "status": result.get("statusCode") if isinstance(result, dict) else None,
            "body": result.get("body") if isinstance(result, dict) else None,
            "loaded": {name: name in sys.modules for name in os.environ["BENCH_HEAVY"].split(",")},
            "modules": len(sys.modules),
            "handle_imports": handle_imports,
            "clients": sorted(clients),
            "service_models": sorted(set(models)),
        },
        f,
    )
"""


@dataclass(frozen=True, kw_only=True)
class Sample:
    """One cold start, in seconds."""

    wall: float
    """Spawning the interpreter to the handler's return."""
    startup: float
    """Spawning the interpreter to its first line (Python's own start, shared by both)."""
    imports: float
    handle: float
    loaded: dict[str, bool]
    modules: int
    handle_imports: list[str]
    """Modules the first event imported (none when the init phase built everything)."""
    clients: list[str]
    service_models: list[str]


@dataclass(frozen=True, kw_only=True)
class Row:
    """One measurement: ours against the bare app, medians and 90th percentiles (nearest rank)."""

    name: str
    ours: tuple[float, ...]
    bare: tuple[float, ...]

    @property
    def ratio(self) -> float:
        return statistics.median(self.ours) / statistics.median(self.bare)

    @property
    def p90_ratio(self) -> float:
        return percentile(self.ours, 0.9) / percentile(self.bare, 0.9)

    def as_dict(self) -> dict[str, float | int | str]:
        return {
            "name": self.name,
            "samples": len(self.ours),
            "ours_median_ms": round(statistics.median(self.ours) * 1000, 3),
            "ours_p90_ms": round(percentile(self.ours, 0.9) * 1000, 3),
            "baseline_median_ms": round(statistics.median(self.bare) * 1000, 3),
            "baseline_p90_ms": round(percentile(self.bare, 0.9) * 1000, 3),
            "ratio": round(self.ratio, 3),
            "p90_ratio": round(self.p90_ratio, 3),
        }


@dataclass(frozen=True, kw_only=True)
class ImportEntry:
    module: str
    depth: int
    self_seconds: float
    cumulative_seconds: float


@dataclass(frozen=True, kw_only=True)
class ImportProfile:
    """``python -X importtime`` of one cold start, from the handler's import to its return."""

    entries: tuple[ImportEntry, ...]

    @property
    def total(self) -> float:
        return sum(e.self_seconds for e in self.entries)

    def top(self, n: int = 15) -> list[ImportEntry]:
        """The ``n`` imports with the largest cumulative time (a package and what it imported)."""
        return sorted(self.entries, key=lambda e: e.cumulative_seconds, reverse=True)[:n]

    def by_package(self, n: int = 12) -> list[tuple[str, float]]:
        """Import time summed over each top-level package's own modules (``self`` times)."""
        totals: dict[str, float] = {}
        for e in self.entries:
            package = e.module.split(".", 1)[0]
            totals[package] = totals.get(package, 0.0) + e.self_seconds
        return sorted(totals.items(), key=lambda item: item[1], reverse=True)[:n]

    def as_dict(self) -> dict[str, Any]:
        return {
            "total_ms": round(self.total * 1000, 1),
            "modules": len(self.entries),
            "top_cumulative": [
                {"module": e.module, "depth": e.depth, "cumulative_ms": round(e.cumulative_seconds * 1000, 1)}
                for e in self.top()
            ],
            "by_package_ms": {name: round(seconds * 1000, 1) for name, seconds in self.by_package()},
        }


@dataclass(frozen=True, kw_only=True)
class ColdStartReport:
    ours: list[Sample]
    bare: list[Sample]
    store: str
    bare_auth: BareAuth
    bytecode: bool
    """Whether modules came from their ``.pyc`` (False: compiled from source, as on Lambda after ``sam build``)."""
    invocations: dict[str, int]
    """Self-invocations recorded by the local Lambda, per side: exactly one per cold start run
    (warm-up, samples and the ``-X importtime`` run), or the bench fails."""
    auth_tests: dict[str, int]
    """``auth.test`` calls the local Slack received, per side."""
    secrets_read: bool
    """Whether ours read Slack's secrets from Secrets Manager, as deployed (False: ``--plain-secrets``)."""
    secret_reads: dict[str, int]
    """``GetSecretValue`` requests the moto server received, per side (at least one per cold start of ours)."""
    profiles: dict[str, ImportProfile]

    @property
    def slack_secrets(self) -> str:
        if self.secrets_read:
            return "ours from Secrets Manager (SLACK_SECRET_ARN, as template.yaml deploys it; moto on 127.0.0.1)"
        return "ours as plain environment variables (--plain-secrets; the deployed function reads Secrets Manager)"

    @property
    def rows(self) -> list[Row]:
        def row(name: str, field: str) -> Row:
            return Row(
                name=name,
                ours=tuple(getattr(s, field) for s in self.ours),
                bare=tuple(getattr(s, field) for s in self.bare),
            )

        return [
            row("cold start: spawn -> ack returned", "wall"),
            row("  interpreter start", "startup"),
            row("  import handler module (init)", "imports"),
            row("  first event (handle)", "handle"),
        ]

    @property
    def wall(self) -> Row:
        return self.rows[0]

    @property
    def handle(self) -> Row:
        return self.rows[3]

    def as_dict(self) -> dict[str, Any]:
        rows = self.rows
        ours_last, bare_last = self.ours[-1], self.bare[-1]
        return {
            "baseline": BASELINE,
            "command": f"/graph {COMMAND_TEXT}",
            "event": "Lambda Function URL (payload 2.0, body base64)",
            "store": self.store,
            "bare_auth": self.bare_auth,
            "bytecode": "cached .pyc" if self.bytecode else "none outside the stdlib (compiled at each cold start)",
            "slack_secrets": self.slack_secrets,
            "comparisons": [r.as_dict() for r in rows],
            "samples": len(self.ours),
            "ratio": round(self.wall.ratio, 3),
            "target_ratio": TARGET_RATIO,
            "handle_ratio": round(self.handle.ratio, 3),
            "handle_target_ratio": HANDLE_TARGET_RATIO,
            "worst_ours_ms": round(max(s.wall for s in self.ours) * 1000, 3),
            "slack_deadline_ms": SLACK_ACK_DEADLINE * 1000,
            "self_invocations": self.invocations,
            "auth_test_calls": self.auth_tests,
            "secret_reads": self.secret_reads,
            "loaded": {"ours": ours_last.loaded, "baseline": bare_last.loaded},
            "modules_loaded": {"ours": ours_last.modules, "baseline": bare_last.modules},
            "imported_by_first_event": {
                "ours": max(len(s.handle_imports) for s in self.ours),
                "baseline": max(len(s.handle_imports) for s in self.bare),
            },
            "first_event_imports": {"ours": ours_last.handle_imports, "baseline": bare_last.handle_imports},
            "boto3_clients": {"ours": ours_last.clients, "baseline": bare_last.clients},
            "botocore_service_models": {"ours": ours_last.service_models, "baseline": bare_last.service_models},
            "dynamodb_client_created": "dynamodb" in ours_last.clients,
            "import_profile": {side: p.as_dict() for side, p in self.profiles.items()},
        }


class _Recorder:
    """A ``Transport`` for ``LocalSlackUser`` that keeps the form body instead of sending it."""

    def __init__(self) -> None:
        self.body = b""

    async def deliver(self, *, kind: str, payload: Mapping[str, Any]) -> Any:
        from localslack import BotResponse

        self.body = urlencode(dict(payload)).encode()
        return BotResponse(status=0, body=None, text="", headers={})

    async def aclose(self) -> None:
        return None


def parse_importtime(stderr: str, *, after: str = _MARKER) -> ImportProfile:
    """The ``-X importtime`` lines printed after the ``after`` line (imports before it are the runtime's)."""
    lines = stderr.splitlines()
    if after in lines:
        lines = lines[lines.index(after) + 1 :]
    entries: list[ImportEntry] = []
    for line in lines:
        if not line.startswith("import time:") or "imported package" in line:
            continue
        try:
            own, cumulative, name = line.removeprefix("import time:").split("|", 2)
            self_us, cumulative_us = int(own), int(cumulative)
        except ValueError:
            continue
        depth = (len(name) - len(name.lstrip(" ")) - 1) // 2
        entries.append(
            ImportEntry(
                module=name.strip(), depth=depth, self_seconds=self_us / 1e6, cumulative_seconds=cumulative_us / 1e6
            )
        )
    return ImportProfile(entries=tuple(entries))


@contextmanager
def _dynamodb_env(dynamodb: bool) -> Iterator[dict[str, str]]:
    """Nothing (our SQLite store, never opened by an ack), or a moto table for ``DYNAMODB_TABLE``."""
    if not dynamodb:
        yield {}
        return
    from bench.resume_cost import moto_dynamodb

    with moto_dynamodb() as table:
        yield {"DYNAMODB_TABLE": table, "AWS_ENDPOINT_URL_DYNAMODB": os.environ["AWS_ENDPOINT_URL_DYNAMODB"]}


@dataclass(frozen=True, kw_only=True)
class _SecretServer:
    """A Secrets Manager (moto's counting server) holding the Slack secret ours is deployed with."""

    server: Any
    env: dict[str, str]

    def reads(self) -> int:
        return int(self.server.counts().get(SECRET_READ, 0))


@contextmanager
def _slack_secret(*, enabled: bool, bot_token: str, signing_secret: str) -> Iterator[_SecretServer | None]:
    """The secret ``SLACK_SECRET_ARN`` names, served on 127.0.0.1 (None: ``--plain-secrets``).

    A loopback round trip to a Python server, where Lambda's is DNS, TLS and Secrets
    Manager's own time in the region: the read is in the wall time, its network is not."""
    if not enabled:
        yield None
        return
    import logging

    import boto3

    from tests.support.aws import CountingMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = CountingMotoServer()
    server.start()
    try:
        client = boto3.client(
            "secretsmanager",
            region_name=REGION,
            endpoint_url=server.url,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        value = json.dumps({"SLACK_BOT_TOKEN": bot_token, "SLACK_SIGNING_SECRET": signing_secret})
        # moto's backends are per process, not per server: a fresh name for each rig.
        name = f"approval-bot-slack-{os.urandom(4).hex()}"
        arn = client.create_secret(Name=name, SecretString=value)["ARN"]
        yield _SecretServer(
            server=server, env={"SLACK_SECRET_ARN": arn, "AWS_ENDPOINT_URL_SECRETS_MANAGER": server.url}
        )
    finally:
        server.stop()


def side_envs(
    *, base: Mapping[str, str], secret_env: Mapping[str, str] | None, bare_auth: BareAuth
) -> dict[str, dict[str, str]]:
    """Each side's environment: ``base`` (``child_env``), but Slack's secrets as each is deployed.

    Ours as ``template.yaml`` deploys it: the secret's ARN and no plain token or signing
    secret, so its init phase pays for the Secrets Manager client and round trip. The bare
    app as Bolt's guide runs it: both as plain variables. ``secret_env`` None gives ours
    the plain variables too (``--plain-secrets``)."""
    ours = dict(base)
    if secret_env is not None:
        ours = {name: value for name, value in ours.items() if name not in PLAIN_SLACK_SECRETS} | dict(secret_env)
    return {"ours": ours, "baseline": dict(base) | {BARE_AUTH_ENV: bare_auth}}


def child_env(*, slack_api_url: str, bot_token: str, signing_secret: str, extra: Mapping[str, str]) -> dict[str, str]:
    """What both handlers run with: a clean environment (nothing of this process's), as Lambda's."""
    env = {name: os.environ[name] for name in ("PATH", "LANG", "LC_ALL", "TMPDIR") if name in os.environ}
    env |= {
        "PYTHONPATH": str(REPO),
        "HOME": tempfile.gettempdir(),
        "SLACK_BOT_TOKEN": bot_token,
        "SLACK_SIGNING_SECRET": signing_secret,
        "SLACK_API_URL": slack_api_url,
        "AWS_LAMBDA_FUNCTION_NAME": FUNCTION,
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024",
        "AWS_REGION": REGION,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        "AWS_EC2_METADATA_DISABLED": "true",
        "BENCH_ACCOUNT": ACCOUNT,
        "BENCH_HEAVY": ",".join(HEAVY),
        "EXAMPLE_GRAPHS": "true",  # the command names the example graph deploy
        # One person starts every run of the bench, far beyond a person's fair share.
        "MAX_STARTS_PER_MINUTE": "0",
        "MAX_WAITING_RUNS": "0",
    }
    return env | dict(extra)


async def _spawn(
    *, handler: str, event: dict[str, Any], env: Mapping[str, str], workdir: Path, importtime: bool = False
) -> tuple[Sample, str]:
    """One cold start of ``handler`` answering ``event``; the sample and the child's stderr."""
    event_path, out_path = workdir / "event.json", workdir / "result.json"
    event_path.write_text(json.dumps(event))
    out_path.unlink(missing_ok=True)
    flags = ["-X", "importtime"] if importtime else []
    args = [*flags, "-c", _CHILD, str(event_path), handler, str(out_path), _MARKER]
    spawned = time.monotonic()
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        *args,
        env=dict(env),
        cwd=str(REPO),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        _, err = await asyncio.wait_for(process.communicate(), _CHILD_TIMEOUT)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise RuntimeError(f"{handler}: the cold start did not finish within {_CHILD_TIMEOUT} s") from None
    stderr = err.decode(errors="replace")
    if process.returncode != 0 or not out_path.exists():
        raise RuntimeError(f"{handler}: the child failed (exit {process.returncode}):\n{stderr[-3000:]}")
    result = json.loads(out_path.read_text())
    if result["status"] != 200 or result["body"]:
        raise RuntimeError(f"{handler}: answered {result['status']} {result['body']!r}, not an empty 200 ack")
    sample = Sample(
        wall=result["returned"] - spawned,
        startup=result["started"] - spawned,
        imports=result["imported"] - result["import_started"],
        handle=result["returned"] - result["imported"],
        loaded=result["loaded"],
        modules=result["modules"],
        handle_imports=result["handle_imports"],
        clients=result["clients"],
        service_models=result["service_models"],
    )
    return sample, stderr


class _Rig:
    """The local Slack, the local Lambda (and a moto table) around cold starts; ``one`` spawns one."""

    def __init__(
        self,
        *,
        slack: Any,
        user: Any,
        recorder: _Recorder,
        local_lambda: Any,
        workdir: Path,
        secrets: _SecretServer | None,
    ) -> None:
        self.slack, self.user, self.recorder, self.local_lambda, self.workdir = (
            slack,
            user,
            recorder,
            local_lambda,
            workdir,
        )
        self.secrets = secrets
        self.sides: dict[str, tuple[str, dict[str, str]]] = {}
        self.invocations = {"ours": 0, "baseline": 0}
        self.auth_tests = {"ours": 0, "baseline": 0}
        self.secret_reads = {"ours": 0, "baseline": 0}

    async def event(self) -> dict[str, Any]:
        from localslack import LOCAL_SIGNING_SECRET
        from tests.support.lambda_ import SLACK_CLIENT_HEADERS, function_url_event, signed

        await self.user.slash_command(text=COMMAND_TEXT, user_id=REQUESTER, channel_id=CHANNEL)
        body = self.recorder.body
        headers = {**SLACK_CLIENT_HEADERS, **signed(body, LOCAL_SIGNING_SECRET)}
        return function_url_event(body, headers, region=REGION)

    async def one(self, side: str, *, importtime: bool = False, heavy: Sequence[str] = HEAVY) -> tuple[Sample, str]:
        """One cold start of ``side`` answering a fresh ``/graph run``: its sample and stderr.

        ``heavy``: the modules whose presence after the ack the sample's ``loaded`` reports.
        Raises RuntimeError unless it acked empty and handed its work to exactly one self-invocation,
        and (unless ``--plain-secrets``) ours read the Slack secret and the bare app did not.
        """
        handler, side_env = self.sides[side]
        side_env = side_env | {"BENCH_HEAVY": ",".join(heavy)}
        calls_before = len(self.slack.calls)
        reads_before = self.secrets.reads() if self.secrets is not None else 0
        sample, stderr = await _spawn(
            handler=handler, event=await self.event(), env=side_env, workdir=self.workdir, importtime=importtime
        )
        invoked = self.local_lambda.take()
        if len(invoked) != 1 or not all(i.accepted for i in invoked):
            raise RuntimeError(f"{handler}: expected one self-invocation per cold start, got {invoked}")
        _check_payload(side, invoked[0].event())
        self.invocations[side] += 1
        self.auth_tests[side] += sum(1 for method, _ in self.slack.calls[calls_before:] if method == "auth.test")
        if self.secrets is not None:
            reads = self.secrets.reads() - reads_before
            if (reads == 0) == (side == "ours"):
                raise RuntimeError(f"{handler}: {reads} reads of the Slack secret in one cold start of {side}")
            self.secret_reads[side] += reads
        return sample, stderr


@asynccontextmanager
async def cold_start_rig(
    *,
    dynamodb: bool = False,
    bare_auth: BareAuth = "guide",
    bytecode: bool = True,
    store_env: Mapping[str, str] | None = None,
    plain_secrets: bool = False,
) -> AsyncIterator[_Rig]:
    """Everything a cold start talks to, for as many cold starts of either side as asked.

    ``store_env``: the store's variables from the caller (a test's moto server), instead of
    SQLite or (``dynamodb``) a moto server of the rig's own. Ours reads Slack's secrets
    from Secrets Manager (a moto server of the rig's) as deployed, unless ``plain_secrets``."""
    from localslack import LOCAL_SIGNING_SECRET, LocalSlack, LocalSlackUser
    from tests.support.lambda_ import LocalLambda

    slack = LocalSlack()
    await slack.start()
    recorder = _Recorder()
    user = LocalSlackUser(slack=slack, transport=recorder)
    try:
        with (
            LocalLambda(function_names=[FUNCTION]) as local_lambda,
            _dynamodb_env(dynamodb and store_env is None) as own_store_env,
            _slack_secret(
                enabled=not plain_secrets, bot_token=slack.bot_token, signing_secret=LOCAL_SIGNING_SECRET
            ) as secrets,
            tempfile.TemporaryDirectory(prefix="bench-cold-") as tmp,
        ):
            workdir = Path(tmp)
            env = child_env(
                slack_api_url=slack.api_url,
                bot_token=slack.bot_token,
                signing_secret=LOCAL_SIGNING_SECRET,
                extra={
                    **local_lambda.env(),
                    "SQLITE_PATH": str(workdir / "runs.sqlite3"),
                    **(own_store_env if store_env is None else store_env),
                    **({} if bytecode else {NO_PYC_ENV: "1"}),
                },
            )
            rig = _Rig(
                slack=slack, user=user, recorder=recorder, local_lambda=local_lambda, workdir=workdir, secrets=secrets
            )
            envs = side_envs(base=env, secret_env=secrets.env if secrets else None, bare_auth=bare_auth)
            rig.sides = {"ours": (OURS_HANDLER, envs["ours"]), "baseline": (BARE_HANDLER, envs["baseline"])}
            yield rig
    finally:
        await user.aclose()
        await slack.stop()


async def measure_cold_start(
    *,
    samples: int = DEFAULT_SAMPLES,
    warmup: int = 1,
    dynamodb: bool = False,
    bare_auth: BareAuth = "guide",
    bytecode: bool = True,
    plain_secrets: bool = False,
) -> ColdStartReport:
    """``samples`` cold starts of each handler, interleaved, plus one ``-X importtime`` run of each.

    ``bytecode=False`` compiles every module outside the standard library from source, as
    a Lambda package built by ``sam build`` does at each cold start (it ships no ``.pyc``).
    ``plain_secrets`` hands ours the Slack token and signing secret as plain variables
    instead of the Secrets Manager secret it is deployed with.
    """
    if samples < 1:
        raise ValueError("need at least one sample")
    measured: dict[str, list[Sample]] = {"ours": [], "baseline": []}
    async with cold_start_rig(
        dynamodb=dynamodb, bare_auth=bare_auth, bytecode=bytecode, plain_secrets=plain_secrets
    ) as rig:
        for index in range(warmup + samples):
            order = ("ours", "baseline") if index % 2 == 0 else ("baseline", "ours")
            for side in order:
                sample, _ = await rig.one(side)
                if index >= warmup:
                    measured[side].append(sample)
        profiles = {side: parse_importtime((await rig.one(side, importtime=True))[1]) for side in rig.sides}
    return ColdStartReport(
        ours=measured["ours"],
        bare=measured["baseline"],
        store="DynamoDB (moto)" if dynamodb else "SQLite (DYNAMODB_TABLE unset)",
        bare_auth=bare_auth,
        bytecode=bytecode,
        invocations=rig.invocations,
        auth_tests=rig.auth_tests,
        secrets_read=not plain_secrets,
        secret_reads=rig.secret_reads,
        profiles=profiles,
    )


def _check_payload(side: str, payload: Any) -> None:
    """The self-invocation carries what each app hands itself: our sealed work, Bolt's lazy-only request."""
    if side == "ours":
        ok = isinstance(payload, dict) and payload.get("approval_bot", {}).get("work", {}).get("kind") is not None
    else:
        ok = isinstance(payload, dict) and payload.get("headers", {}).get("x-slack-bolt-lazy-only") == "1"
    if not ok:
        raise RuntimeError(f"{side}: the self-invocation is not the work handed off: {str(payload)[:300]}")


def text(report: ColdStartReport) -> str:
    """The table a person reads, then what was loaded and what the imports cost."""
    data = report.as_dict()
    columns = ("n", "ours med", "ours p90", "base med", "base p90", "ratio", "p90 r")
    widths = (3, 9, 9, 9, 9, 6, 6)
    header = f"{'measurement':<34} " + " ".join(f"{c:>{w}}" for c, w in zip(columns, widths, strict=True))
    lines = [
        f"baseline: {BASELINE}",
        f"ours: {OURS_HANDLER}, store {report.store}; bare auth: {report.bare_auth}; bytecode: {data['bytecode']}",
        f"slack secrets: {report.slack_secrets}; the bare app's as plain environment variables (Bolt's guide)",
    ]
    lines += [header, "-" * len(header)]
    for row in report.rows:
        d = row.as_dict()
        cells = [f"{d['samples']:>3}"]
        cells += [f"{d[k]:>9.2f}" for k in ("ours_median_ms", "ours_p90_ms", "baseline_median_ms", "baseline_p90_ms")]
        cells += [f"{row.ratio:>6.2f}", f"{row.p90_ratio:>6.2f}"]
        lines.append(f"{row.name:<34} " + " ".join(cells))
    lines.append(
        f"cold-start ratio: wall {report.wall.ratio:.2f}, spawn -> ack, what Slack waits for on a cold start "
        f"(target <= {TARGET_RATIO}); first-event handling {report.handle.ratio:.2f}, issue 23's measure "
        f"(target <= {HANDLE_TARGET_RATIO}; low because the work moved to the init phase, which Slack also "
        f"waits for on a cold start); {len(report.ours)} cold starts each, interleaved; slowest of ours "
        f"{data['worst_ours_ms']:.0f} ms (Slack's limit: {SLACK_ACK_DEADLINE * 1000:.0f} ms)"
    )
    imported = data["imported_by_first_event"]
    lines.append(
        f"modules imported by the first event (most in a sample): ours {imported['ours']}, "
        f"baseline {imported['baseline']}"
    )
    lines.append(
        f"self-invocations recorded: {data['self_invocations']}; auth.test calls: {data['auth_test_calls']}; "
        f"Slack secret reads (GetSecretValue): {data['secret_reads']}"
    )
    for side in ("ours", "baseline"):
        loaded = data["loaded"][side]
        present = ", ".join(name for name in HEAVY if loaded[name]) or "none"
        absent = ", ".join(name for name in HEAVY if not loaded[name]) or "none"
        lines.append(
            f"{side} after the ack: {data['modules_loaded'][side]} modules; loaded: {present}; not loaded: {absent}; "
            f"boto3 clients: {data['boto3_clients'][side] or 'none'}; "
            f"service models read: {data['botocore_service_models'][side] or 'none'}"
        )
    lines.append(f"DynamoDB client created by our ack: {'yes' if data['dynamodb_client_created'] else 'no'}")
    for side, profile in report.profiles.items():
        packages = ", ".join(f"{name} {seconds * 1000:.0f}" for name, seconds in profile.by_package())
        lines.append(f"\nimports of {side} (python -X importtime, ms): {profile.total * 1000:.0f} in total")
        lines.append(f"  by package (own time): {packages}")
        lines.append("  largest cumulative:")
        lines += [f"    {e.cumulative_seconds * 1000:7.1f}  {'  ' * e.depth}{e.module}" for e in profile.top(12)]
    return "\n".join(lines)


def markdown(report: ColdStartReport, *, command: str) -> str:
    """The report's section (``bench/results/cold.md``): what Slack waits for first, the issue's ratio beside it."""
    data = report.as_dict()
    wall, handle = report.wall, report.handle
    secrets = (
        "ours reads Slack's token and signing secret from Secrets Manager in its init phase (`SLACK_SECRET_ARN`, "
        "as `template.yaml` deploys it), the bare app has them as plain variables (Bolt's guide)"
        if report.secrets_read
        else "both have Slack's token and signing secret as plain variables (`--plain-secrets`: the deployed "
        "function reads them from Secrets Manager, left out here)"
    )
    lines = [
        "## Lambda cold ack: ours against the bare Bolt app",
        "",
        f"**What Slack waits for on a cold start** (no provisioned concurrency): spawning the process to the ack "
        f"returned, ours {wall.as_dict()['ours_median_ms']:.0f} ms against the bare app's "
        f"{wall.as_dict()['baseline_median_ms']:.0f} ms at the median, **{wall.ratio:.2f}x** (target at most "
        f"{TARGET_RATIO}: {_met(wall.ratio, TARGET_RATIO)}; {wall.p90_ratio:.2f}x at the 90th percentile); "
        "slowest of ours "
        f"{data['worst_ours_ms']:.0f} ms (Slack allows {SLACK_ACK_DEADLINE * 1000:.0f} ms).",
        "",
        f"Beside it, issue 23's measure, the first event's handling: **{handle.ratio:.2f}** (target at most "
        f"{HANDLE_TARGET_RATIO}: {_met(handle.ratio, HANDLE_TARGET_RATIO)}). It is low because the same work "
        "moved into Lambda's init phase (importing our "
        "handler builds the runtime, reads the secret and makes the handoff's Lambda client), and Slack waits for "
        "the init phase too on a cold start: the work only leaves the request's path with provisioned concurrency "
        "or when Lambda pre-initialises a container before a request arrives.",
        "",
        f"Produced by `{command}`: {len(report.ours)} cold starts of each side, each a fresh interpreter, "
        f"interleaved (A/B then B/A); {data['bytecode']}; store {report.store}; {secrets}. The baseline is the app "
        "of Bolt's own Lambda guide (`bench/bare_bolt_lambda.py`). Both answer one signed `/graph run` as a "
        "Function URL event and hand the work to one self-invocation. Ratios are ours / bare at the median "
        "and at the 90th percentile (nearest rank). The network is localhost: Secrets Manager is moto, Slack "
        "the local Slack and Lambda's API a local recorder, all on 127.0.0.1; on Lambda each call is DNS, TLS and "
        "a round trip to the AWS endpoint or slack.com, not measured here.",
        "",
        "| measurement | n | ours median | ours p90 | bare median | bare p90 | ratio | p90 ratio |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in report.rows:
        d = row.as_dict()
        ratio = f"**{row.ratio:.2f}**" if row in (handle, wall) else f"{row.ratio:.2f}"
        lines.append(
            f"| {row.name.strip()} | {d['samples']} | {d['ours_median_ms']:.1f} ms | {d['ours_p90_ms']:.1f} ms | "
            f"{d['baseline_median_ms']:.1f} ms | {d['baseline_p90_ms']:.1f} ms | {ratio} | {row.p90_ratio:.2f} |"
        )
    imported = data["imported_by_first_event"]
    lines += [
        "",
        f"- Modules the first event imported: ours {imported['ours']}, bare {imported['baseline']}.",
        f"- Self-invocations recorded: {data['self_invocations']}; `auth.test` calls: {data['auth_test_calls']}; "
        f"Slack secret reads (`GetSecretValue`): {data['secret_reads']}; boto3 clients after the ack: ours "
        f"{data['boto3_clients']['ours']}, bare {data['boto3_clients']['baseline']}; modules loaded: ours "
        f"{data['modules_loaded']['ours']}, bare {data['modules_loaded']['baseline']}.",
        "",
        "What each remaining millisecond is for: `bench/README.md`, *Lambda cold ack: where the time goes*.",
    ]
    return "\n".join(lines) + "\n"


def _met(ratio: float, target: float) -> str:
    return "met" if round(ratio, 2) <= target else "not met"


def write(report: ColdStartReport, *, command: str, results: Path = RESULTS) -> tuple[Path, Path]:
    """``bench/results/cold.md`` and ``cold.json``, which ``python -m bench.report`` stitches in."""
    if len(report.ours) < MIN_RECORDED_SAMPLES:
        raise ValueError(f"a recorded result needs at least {MIN_RECORDED_SAMPLES} cold starts of each side")
    results.mkdir(exist_ok=True)
    md, js = results / "cold.md", results / "cold.json"
    md.write_text(markdown(report, command=command))
    js.write_text(json.dumps({"produced_by": command, **report.as_dict()}, indent=2) + "\n")
    return md, js


def well_formed(data: Mapping[str, Any]) -> list[str]:
    """Problems with the numbers' shape (never their size): what the smoke test checks."""
    problems: list[str] = []
    for c in data.get("comparisons", []):
        for key in ("ratio", "p90_ratio", "ours_median_ms", "baseline_median_ms", "ours_p90_ms", "baseline_p90_ms"):
            value = c.get(key)
            if not (isinstance(value, float | int) and value == value and 0 < value < float("inf")):
                problems.append(f"{c.get('name')}: {key} = {value!r}")
    if not data.get("comparisons"):
        problems.append("no comparisons")
    for side in ("ours", "baseline"):
        if set(data.get("loaded", {}).get(side, {})) != set(HEAVY):
            problems.append(f"{side}: loaded packages not reported")
        if not data.get("import_profile", {}).get(side, {}).get("top_cumulative"):
            problems.append(f"{side}: no import profile")
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    import argparse
    import logging

    parser = argparse.ArgumentParser(prog="python -m bench.cold_start", description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=DEFAULT_SAMPLES, help="cold starts of each (default 15)")
    parser.add_argument("--dynamodb", action="store_true", help="ours with DYNAMODB_TABLE at moto (default: unset)")
    parser.add_argument(
        "--bare-auth",
        choices=("guide", "authorize"),
        default="guide",
        help="the bare app as the guide builds it (auth.test at import) or with a fixed-token authorize",
    )
    parser.add_argument(
        "--no-pyc", action="store_true", help="compile from source at each start, as a sam-built Lambda package does"
    )
    parser.add_argument(
        "--plain-secrets",
        action="store_true",
        help="give ours the Slack token and signing secret as plain variables (default: SLACK_SECRET_ARN at moto, "
        "as template.yaml deploys it)",
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON too")
    parser.add_argument(
        "--write",
        action="store_true",
        help=f"record bench/results/cold.md and cold.json (at least {MIN_RECORDED_SAMPLES} samples)",
    )
    args = parser.parse_args(argv)
    if args.write and args.samples < MIN_RECORDED_SAMPLES:
        parser.error(f"--write needs --samples {MIN_RECORDED_SAMPLES} or more")
    logging.basicConfig(level=logging.WARNING)
    started = time.perf_counter()
    report = asyncio.run(
        measure_cold_start(
            samples=args.samples,
            dynamodb=args.dynamodb,
            bare_auth=args.bare_auth,
            bytecode=not args.no_pyc,
            plain_secrets=args.plain_secrets,
        )
    )
    print(text(report))
    if args.json:
        print(json.dumps(report.as_dict(), indent=2))
    if args.write:
        command = " ".join(["python -m bench.cold_start", *(argv if argv is not None else sys.argv[1:])])
        for path in write(report, command=command):
            print(f"wrote {path.relative_to(REPO)}")
    print(f"\n({time.perf_counter() - started:.1f} s; ratio = ours / baseline at the median, lower is better)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
