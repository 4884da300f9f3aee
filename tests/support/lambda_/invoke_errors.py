"""How ``LocalLambda`` fails the way Lambda fails: Invoke's modeled errors and failures on demand.

The errors and their bodies come from botocore's own Lambda model, so boto3 parses them as it
would AWS's; the rules are what ``fail_next``, ``lose_next`` and ``delay_next`` arm.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from tests.support.lambda_.identity import ACCOUNT, FUNCTION_NAME


@dataclass
class _Rule:
    action: Literal["fail", "lose", "delay"]
    remaining: int | None
    function: str | None
    code: str = ""
    status: int = 0
    message: str | None = None
    reason: str | None = None
    seconds: float = 0.0

    def live(self) -> bool:
        return self.remaining is None or self.remaining > 0

    def claim(self, function_name: str) -> bool:
        if not self.live() or (self.function is not None and self.function != function_name):
            return False
        if self.remaining is not None:
            self.remaining -= 1
        return True


@functools.cache
def _modeled_errors() -> dict[str, tuple[int, str, bool]]:
    """Invoke's errors from botocore's Lambda model: code -> (HTTP status, message key, sender fault).

    Taken from the model botocore parses responses with, so each error comes back with the
    status and body shape botocore expects and surfaces as ``ClientError`` with that code.
    """
    import botocore.session

    model = botocore.session.get_session().get_service_model("lambda")
    errors: dict[str, tuple[int, str, bool]] = {}
    for shape in model.operation_model("Invoke").error_shapes:
        members: Mapping[str, Any] = getattr(shape, "members", {})
        key = "message" if "message" in members else "Message"
        errors[shape.name] = (
            int(shape.metadata["error"]["httpStatusCode"]),
            key,
            bool(shape.metadata["error"].get("senderFault")),
        )
    # Not in the model because any API can answer them: IAM's denial and a bad signature.
    errors["AccessDeniedException"] = (403, "Message", True)
    errors["UnrecognizedClientException"] = (403, "message", True)
    return errors


def _error_body(code: str, arn: str, message: str | None, reason: str | None) -> bytes:
    """Lambda's JSON error body: ``Type`` (User/Service) and the message under the key the model names."""
    _, key, sender_fault = _modeled_errors().get(code, (0, "message", True))
    defaults = {
        "TooManyRequestsException": "Rate Exceeded.",
        "AccessDeniedException": (
            f"User: arn:aws:sts::{ACCOUNT}:assumed-role/{FUNCTION_NAME}-role/{FUNCTION_NAME} is not authorized to "
            f"perform: lambda:InvokeFunction on resource: {arn} because no identity-based policy allows the "
            "lambda:InvokeFunction action"
        ),
        "ResourceNotFoundException": f"Function not found: {arn}",
        "ServiceException": "An internal error occurred.",
    }
    body: dict[str, Any] = {key: message or defaults.get(code, f"{code} (from LocalLambda)")}
    if code not in ("AccessDeniedException", "UnrecognizedClientException"):
        body["Type"] = "User" if sender_fault else "Service"
    if code == "TooManyRequestsException":
        body["Reason"] = reason or "ReservedFunctionConcurrentInvocationLimitExceeded"
    return json.dumps(body).encode()
