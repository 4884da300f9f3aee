"""What ``approval-bot`` prints instead of a traceback: one line per known misconfiguration.

An operator who mistyped a setting needs the setting's name, what is wrong with it and
what to set, not 56 lines of botocore internals. ``explain`` recognises the errors a
setting can cause, by type (``ConfigError``, pydantic's report on ``Settings``,
``GraphModuleError``, botocore's own exception classes and ``ClientError`` codes), also
when the store wrapped them (``StoreError`` keeps the botocore error as its cause). What
it does not recognise is a bug, and keeps its traceback.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

from bot.slack_access import ConfigError

SETTING: Final = 2
"""Exit status for a bad setting or argument (argparse uses 2 for usage errors too)."""
FAILED: Final = 1
"""Exit status for an AWS refusal that is not obviously a setting (throttled, a server error)."""

_EXAMPLE_REGION: Final = "eu-west-1"
_AUTH_CODES: Final = frozenset(
    {
        "UnrecognizedClientException",
        "InvalidClientTokenId",
        "InvalidSignatureException",
        "SignatureDoesNotMatch",
        "InvalidAccessKeyId",
        "ExpiredTokenException",
        "ExpiredToken",
        "AuthFailure",
        "MissingAuthenticationTokenException",
        "IncompleteSignature",
    }
)
_DENIED_CODES: Final = frozenset({"AccessDeniedException", "AccessDenied"})
_HEAD_BUCKET: Final = {
    "404": "does not exist; create it with `approval-bot create-table`, or fix SNAPSHOT_BUCKET",
    "NoSuchBucket": "does not exist; create it with `approval-bot create-table`, or fix SNAPSHOT_BUCKET",
    "403": "cannot be read (403): the credentials need s3:ListBucket on it, or it is another account's; "
    "fix SNAPSHOT_BUCKET or the permissions",
    "301": "is in another region than AWS_REGION; set AWS_REGION to the bucket's region, or fix SNAPSHOT_BUCKET",
}


@dataclass(frozen=True)
class Explained:
    line: str
    status: int = SETTING


def explain(error: BaseException) -> Explained | None:
    """One line for ``error`` (or an error it was raised from), or None for an unknown error."""
    for cause in _chain(error):
        found = _one(cause)
        if found is not None:
            return found
    return None


def _chain(error: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or (None if current.__suppress_context__ else current.__context__)


def _one(error: BaseException) -> Explained | None:
    if isinstance(error, ConfigError):
        return Explained(str(error))
    from graph_defs.registry import GraphModuleError

    if isinstance(error, GraphModuleError):
        return Explained(_graph_module(error))
    if "pydantic" in sys.modules:
        from pydantic import ValidationError

        if isinstance(error, ValidationError) and error.title == "Settings":
            from bot.settings import describe

            return Explained(describe(error))
    if "botocore" in sys.modules:  # no botocore error can exist before botocore is imported
        return _aws(error)
    return None


# -- GRAPH_MODULES -------------------------------------------------------------------------


def _graph_module(error: BaseException) -> str:
    from graph_defs.registry import GraphDefinitionError, GraphModuleError

    assert isinstance(error, GraphModuleError)
    module, cause = error.module, error.cause
    listed = module in {m.strip() for m in os.environ.get("GRAPH_MODULES", "").split(",")}
    where = f"GRAPH_MODULES names {module!r}" if listed else f"the graph module {module!r}"
    if isinstance(cause, GraphDefinitionError):
        advice = "give each graph a name of its own" if "defined twice" in str(cause) else f"fix it in {module}"
        return f"{'GRAPH_MODULES: ' if listed else ''}{cause}; {advice}"
    if error.not_found:
        if module.endswith(".py") or "/" in module:
            suggestion = module.removesuffix(".py").replace("/", ".")
            return f"{where}, a file name: GRAPH_MODULES takes module names, e.g. GRAPH_MODULES={suggestion}"
        file = module.replace(".", "/") + ".py"
        return (
            f"{where}, which was not found in the current directory ({os.getcwd()}) or on the Python path; "
            f"check the name, or run approval-bot from the folder that holds {file}"
        )
    return f"{where}, which fails to import: {_last_line(cause)}; fix it, or remove it from GRAPH_MODULES"


def _last_line(error: BaseException) -> str:
    """The error as its traceback's last line would name it (type and first line of the
    message), and where the module's own code raised it: the last frame outside the
    installed packages, so a pydantic or boto error points at the user's line."""
    if isinstance(error, SyntaxError) and error.filename:
        return f"SyntaxError: {error.msg} (at {error.filename}:{error.lineno})"
    message = str(error).strip().splitlines()
    text = f"{type(error).__name__}: {message[0]}" if message else type(error).__name__
    frames = [f for f in traceback.extract_tb(error.__traceback__) if not f.filename.startswith("<frozen")]
    own = [f for f in frames if "site-packages" not in f.filename and "/lib/python" not in f.filename]
    frame = (own or frames)[-1] if frames else None
    return f"{text} (at {frame.filename}:{frame.lineno})" if frame else text


# -- AWS -----------------------------------------------------------------------------------


def _aws(error: BaseException) -> Explained | None:
    from botocore import exceptions as aws

    from persistence.aws import EndpointSettingError

    if isinstance(error, EndpointSettingError):
        return Explained(
            f"{error.variable}={_no_userinfo(error.url)!r} is not a URL; set it to the endpoint, e.g. "
            f"{error.variable}=http://localhost:8000, or unset it to use AWS"
        )
    if isinstance(error, aws.NoRegionError):
        return Explained(
            "no AWS region is set; set AWS_REGION to the region of the DynamoDB table, "
            f"e.g. AWS_REGION={_EXAMPLE_REGION}"
        )
    if isinstance(error, aws.InvalidRegionError):
        region = str(error.kwargs.get("region_name", ""))
        return Explained(
            f"{_region_source(region)}={region!r} is not a region name; set AWS_REGION to one, "
            f"e.g. AWS_REGION={_EXAMPLE_REGION}"
        )
    if isinstance(error, aws.ProfileNotFound):
        profile = error.kwargs.get("profile", "")
        return Explained(
            f"AWS_PROFILE={profile!r} is not a profile in the AWS config files; set AWS_PROFILE to one "
            "(aws configure list-profiles), or unset it"
        )
    if isinstance(error, aws.NoCredentialsError):
        return Explained(
            "no AWS credentials found; set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
            "(or run where an IAM role provides them)"
        )
    if isinstance(error, aws.PartialCredentialsError):
        return Explained(
            f"AWS credentials from {error.kwargs.get('provider')} lack {error.kwargs.get('cred_var')}; set it too"
        )
    if isinstance(error, (aws.CredentialRetrievalError, aws.TokenRetrievalError, aws.SSOError)):
        return Explained(f"could not get AWS credentials ({_flat(error)}); check AWS_PROFILE and log in again")
    if isinstance(error, (aws.ConnectionError, aws.HTTPClientError)):
        url: object = dict(error.kwargs).get("endpoint_url")
        if url:
            return _unreachable(error, str(url))
    if isinstance(error, aws.ParamValidationError):
        return Explained(_refused_parameter(str(error.kwargs.get("report", ""))))
    if isinstance(error, aws.ClientError):
        return _client_error(error)
    return None


def _region_source(region: str) -> str:
    for variable in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        if os.environ.get(variable) == region:
            return variable
    return "the AWS profile's region"


def _no_userinfo(url: str) -> str:
    """``url`` with any ``user:password@`` hidden: these lines reach logs and ``/healthz``'s log line."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    host, slash, path = rest.partition("/")
    return f"{scheme}://{'***@' if '@' in host else ''}{host.rpartition('@')[2]}{slash}{path}"


def _unreachable(error: BaseException, url: str) -> Explained:
    from persistence.aws import ENDPOINT_VARIABLES

    for variable in dict.fromkeys(v for names in ENDPOINT_VARIABLES.values() for v in names):
        value = os.environ.get(variable)
        if value and url.rstrip("/").startswith(value.rstrip("/")):
            return Explained(
                f"could not connect to {variable}={_no_userinfo(value)!r} ({type(error).__name__}); "
                "start the service there, "
                f"fix the URL, or unset {variable} to use AWS"
            )
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "the configured region"
    return Explained(
        f"could not connect to {_no_userinfo(url)} ({type(error).__name__}); "
        f"check that AWS_REGION ({region}) is a real region, e.g. {_EXAMPLE_REGION}, "
        "and that this machine can reach AWS"
    )


def _refused_parameter(report: str) -> str:
    problem = " ".join(report.split())
    for parameter, variable in (("TableName", "DYNAMODB_TABLE"), ("Bucket", "SNAPSHOT_BUCKET")):
        if f"parameter {parameter}" in problem:
            value = os.environ.get(variable, "")
            return f"{variable}={value!r} is not a valid name ({problem}); set {variable} to a valid one"
    return f"AWS refused a request before sending it: {problem}"


def _client_error(error: BaseException) -> Explained:
    from botocore.exceptions import ClientError

    assert isinstance(error, ClientError)
    details = error.response.get("Error", {})
    code = str(details.get("Code", ""))
    message = " ".join(str(details.get("Message", "")).split())
    operation = error.operation_name
    if code in _AUTH_CODES:
        return Explained(
            f"AWS refused the credentials ({code}); check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
            "(and AWS_SESSION_TOKEN), or AWS_PROFILE"
        )
    if code in _DENIED_CODES:
        return Explained(f"AWS denied {operation} ({code}); the credentials in use need permission for it: {message}")
    if code == "ResourceNotFoundException":
        table = os.environ.get("DYNAMODB_TABLE", "")
        region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "this region"
        return Explained(
            f"DYNAMODB_TABLE={table!r} does not exist in {region}; create it with `approval-bot create-table`, "
            "or fix DYNAMODB_TABLE or AWS_REGION"
        )
    if operation == "HeadBucket" and code in _HEAD_BUCKET:  # HeadBucket's errors carry only the HTTP status
        bucket = os.environ.get("SNAPSHOT_BUCKET", "")
        return Explained(f"SNAPSHOT_BUCKET={bucket!r} {_HEAD_BUCKET[code]}")
    if code in ("NoSuchBucket", "InvalidBucketName", "BucketAlreadyExists"):
        bucket = os.environ.get("SNAPSHOT_BUCKET", "")
        return Explained(f"SNAPSHOT_BUCKET={bucket!r}: {message or code} ({code}); choose another bucket name")
    from persistence.aws import TRANSIENT_CODES

    status = int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
    transient = code in TRANSIENT_CODES or status >= 500
    return Explained(f"AWS refused {operation} ({code}): {message}", status=FAILED if transient else SETTING)


def _flat(error: BaseException) -> str:
    return " ".join(str(error).split())
