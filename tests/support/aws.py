"""pytest plugin: a real-HTTP moto server for DynamoDB and S3 that counts requests.

``ThreadedMotoServer`` builds its WSGI app (``DomainDispatcherApplication``) inside
``_server_entry`` and hands it to werkzeug's ``make_server``; the subclass below does the
same with the app wrapped in a counting middleware, so tests can assert how many
requests an operation really sends (boto3 retries included).

moto's backends take no locks, so two concurrent conditional writes to one item can
both pass their condition check. DynamoDB itself applies writes to an item one at a
time; the middleware reproduces that by handling DynamoDB requests one at a time.

The same middleware prices each DynamoDB request in read and write capacity units the
way DynamoDB bills them (``tests/support/capacity.py``): being one at a time, it can look
at an item in moto's backend just before and just after a write with nothing in between.

Credentials and region are fake and set for the whole session (and restored after),
with profiles, config files and instance metadata switched off, so nothing under test
can reach a real AWS account.

Every botocore session of the test process reads the service models through one shared
loader (``_share_one_model_loader``): the store makes a session of its own per client, as
it should, and each new session otherwise parses the DynamoDB and S3 models again, about
50 ms a client. The tests open a store per simulated process, per example or per check,
hundreds of times (over a minute of the default run in model parsing alone); a bot process
opens one, and is left alone.
"""

from __future__ import annotations

import io
import logging
import os
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import boto3
import botocore.loaders
import botocore.session
import pytest
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from moto.server import ThreadedMotoServer
from werkzeug.serving import make_server

from tests.support.capacity import CapacityMeter

REGION = "eu-west-1"
_WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class _SharedLoader(botocore.loaders.Loader):  # type: ignore[misc]
    """A loader with boto3's data path already on it, that every session may share.

    ``boto3.Session`` appends its data path to the loader it gets each time it is made;
    here it appends to a copy, so the shared list does not grow by one entry a session.
    """

    def __init__(self) -> None:
        super().__init__()
        self._search_paths.append(os.path.join(os.path.dirname(boto3.__file__), "data"))

    @property
    def search_paths(self) -> list[str]:
        return list(self._search_paths)


def _share_one_model_loader() -> None:
    """Make each new botocore session of this process use one loader (and its cache).

    What a loader returns (service models, endpoint rules, partitions) is read-only data
    that botocore already shares between the clients of one session; sharing it between
    sessions changes nothing else: each session keeps its own credentials, config, event
    hooks and connection pools. ``AWS_DATA_PATH`` is not honoured (no test sets it).
    """
    loader = _SharedLoader()

    def register(session: botocore.session.Session) -> None:
        session._components.lazy_register_component("data_loader", lambda: loader)

    botocore.session.Session._register_data_loader = register


_share_one_model_loader()


def _operation(environ: dict[str, Any]) -> str:
    """'dynamodb.PutItem', 's3.PUT', ...: what one HTTP request asked for."""
    target = str(environ.get("HTTP_X_AMZ_TARGET", ""))
    if target.startswith("DynamoDB_"):
        return "dynamodb." + target.split(".", 1)[1]
    auth = environ.get("HTTP_AUTHORIZATION", "")
    try:
        service = auth.split("Credential=", 1)[1].split(",", 1)[0].split("/")[3]
    except IndexError:
        service = "unknown"
    return f"{service}.{environ.get('REQUEST_METHOD', '?')}"


def _app_id(environ: dict[str, Any]) -> str:
    """The botocore app id (``AWS_SDK_UA_APP_ID``), from the ``app/<id>`` part of the user agent."""
    for part in str(environ.get("HTTP_USER_AGENT", "")).split():
        if part.startswith("app/"):
            return part.removeprefix("app/")
    return ""


def _region(environ: dict[str, Any]) -> str:
    """The region a SigV4 request was signed for (``Credential=AKID/date/region/service/...``)."""
    try:
        return str(environ.get("HTTP_AUTHORIZATION", "")).split("Credential=", 1)[1].split(",", 1)[0].split("/")[2]
    except IndexError:
        return REGION


def _take_body(environ: dict[str, Any]) -> bytes:
    """Read the request body and put it back, so the meter can parse what moto will also read."""
    stream = environ["wsgi.input"]
    length = environ.get("CONTENT_LENGTH") or ""
    if length.isdigit():
        body = bytes(stream.read(int(length)))
    elif environ.get("wsgi.input_terminated"):
        body = bytes(stream.read())
    else:
        body = b""
    environ["wsgi.input"] = io.BytesIO(body)
    environ["CONTENT_LENGTH"] = str(len(body))
    return body


class CountingMotoServer(ThreadedMotoServer):  # type: ignore[misc]
    """moto's threaded server, counting requests and metering DynamoDB capacity as they pass."""

    def __init__(self) -> None:
        super().__init__(ip_address="127.0.0.1", port=0, verbose=False)
        self._counts: Counter[str] = Counter()
        self._counts_lock = threading.Lock()
        self._dynamodb_lock = threading.Lock()
        self._meter = CapacityMeter()

    def _server_entry(self) -> None:
        app = DomainDispatcherApplication(create_backend_app)
        self._server = make_server(
            self._ip_address, self._port, self._counting(app), True, request_handler=MotoRequestHandler
        )
        self._server_ready_event.set()
        self._server.serve_forever()

    def _counting(self, app: _WSGIApp) -> _WSGIApp:
        def middleware(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
            operation = _operation(environ)
            app_id = _app_id(environ)
            with self._counts_lock:
                self._counts[operation] += 1
                if app_id:
                    self._counts[f"{app_id}:{operation}"] += 1
            if not operation.startswith("dynamodb."):
                return app(environ, start_response)
            status: list[int] = []

            def recording_start_response(status_line: str, *args: Any) -> Any:
                status.append(int(status_line.split(" ", 1)[0]))
                return start_response(status_line, *args)

            with self._dynamodb_lock:
                pending = self._meter.before(
                    operation=operation.removeprefix("dynamodb."),
                    app_id=app_id,
                    region=_region(environ),
                    body=_take_body(environ),
                )
                chunks = list(app(environ, recording_start_response))
                self._meter.after(pending, status=status[-1] if status else 0, response_body=b"".join(chunks))
                return chunks

        return middleware

    @property
    def url(self) -> str:
        host, port = self.get_host_and_port()
        return f"http://{host}:{port}"

    def counts(self, *, app_id: str | None = None) -> dict[str, int]:
        """Requests by operation; with ``app_id``, only those from clients tagged with it
        (botocore's ``AWS_SDK_UA_APP_ID``), e.g. the bot process but not the test's own reads."""
        with self._counts_lock:
            if app_id is None:
                return {op: n for op, n in self._counts.items() if ":" not in op}
            prefix = f"{app_id}:"
            return {op.removeprefix(prefix): n for op, n in self._counts.items() if op.startswith(prefix)}

    def capacity(self, *, app_id: str | None = None) -> dict[str, Any]:
        """What the DynamoDB requests so far would be billed, and how many S3 requests were made.

        ``{"write_units": int, "read_units": float, "by_operation": {"dynamodb.PutItem":
        {"requests", "write_units", "read_units"}, ...}, "unmetered": n, "s3_requests": {"PUT":
        n, "GET": n, ...}}``; with ``app_id``, only requests from clients tagged with it. Units
        follow DynamoDB's billing (``tests/support/capacity.py``), not moto's ``ConsumedCapacity``;
        ``unmetered`` (should be 0) counts accepted DynamoDB requests the meter could not price.
        """
        usage = self._meter.capacity(app_id=app_id)
        usage["s3_requests"] = {
            op.removeprefix("s3."): n for op, n in sorted(self.counts(app_id=app_id).items()) if op.startswith("s3.")
        }
        return usage

    def reset_counts(self) -> None:
        """Forget requests counted and capacity metered so far (e.g. after a test's set-up)."""
        with self._counts_lock:
            self._counts.clear()
        self._meter.reset()


@pytest.fixture(scope="session")
def moto_server() -> Iterator[CountingMotoServer]:
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one access-log line per request otherwise
    server = CountingMotoServer()
    server.start()
    with pytest.MonkeyPatch.context() as mp:
        for name in (
            "AWS_PROFILE",
            "AWS_DEFAULT_PROFILE",
            "AWS_SESSION_TOKEN",
            "AWS_SECURITY_TOKEN",
            "AWS_ROLE_ARN",
            "AWS_WEB_IDENTITY_TOKEN_FILE",
            "AWS_CONTAINER_CREDENTIALS_FULL_URI",
            "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        ):
            mp.delenv(name, raising=False)
        for name, value in _env(server.url).items():
            mp.setenv(name, value)
        yield server
    server.stop()


def _env(url: str) -> dict[str, str]:
    return {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": REGION,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_ENDPOINT_URL_DYNAMODB": url,
        "AWS_ENDPOINT_URL_S3": url,
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        "AWS_EC2_METADATA_DISABLED": "true",
    }


@pytest.fixture
def aws_env(moto_server: CountingMotoServer) -> dict[str, str]:
    """Variables to hand a bot subprocess so that it talks to this moto server only."""
    return _env(moto_server.url)


@pytest.fixture
def dynamodb_table(moto_server: CountingMotoServer) -> Iterator[str]:
    from persistence import create_table

    name = f"runs-{uuid.uuid4().hex[:12]}"
    create_table(table=name)
    yield name
    boto3.client("dynamodb", region_name=REGION).delete_table(TableName=name)


@pytest.fixture
def s3_bucket(moto_server: CountingMotoServer) -> Iterator[str]:
    name = f"snapshots-{uuid.uuid4().hex[:12]}"
    s3 = boto3.client("s3", region_name=REGION)
    s3.create_bucket(Bucket=name, CreateBucketConfiguration={"LocationConstraint": REGION})  # type: ignore[typeddict-item]
    yield name
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=name):
        for obj in page.get("Contents", []):
            s3.delete_object(Bucket=name, Key=obj["Key"])
    s3.delete_bucket(Bucket=name)
