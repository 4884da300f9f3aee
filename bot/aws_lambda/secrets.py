"""Slack's token and signing secret from Secrets Manager, read once per container.

On Lambda they are never plain environment values (anyone who may read the function's
configuration would see them): ``SLACK_SECRET_ARN`` names a secret whose value is JSON
``{"SLACK_BOT_TOKEN": "xoxb-…", "SLACK_SIGNING_SECRET": "…"}``. Locally and in tests the
environment variables are used as on the server.
"""

from __future__ import annotations

import json
from typing import Final

SECRET_ENV: Final = "SLACK_SECRET_ARN"
_FIELDS: Final = ("SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET")


class SecretsUnavailable(RuntimeError):
    """One line for the log: which secret, and what went wrong (never its value)."""


def slack_secrets(secret_id: str) -> dict[str, str]:
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        value = boto3.client("secretsmanager").get_secret_value(SecretId=secret_id)["SecretString"]
    except ClientError as error:
        code = error.response.get("Error", {}).get("Code", "error")
        raise SecretsUnavailable(f"{SECRET_ENV}: Secrets Manager refused {secret_id}: {code}") from None
    except (BotoCoreError, KeyError) as error:
        raise SecretsUnavailable(f"{SECRET_ENV}: could not read {secret_id}: {type(error).__name__}") from None
    try:
        data = json.loads(value)
    except ValueError:
        raise SecretsUnavailable(f"{SECRET_ENV}: {secret_id} is not JSON") from None
    missing = [f for f in _FIELDS if not isinstance(data, dict) or not isinstance(data.get(f), str) or not data[f]]
    if missing:
        raise SecretsUnavailable(f"{SECRET_ENV}: {secret_id} has no {', '.join(missing)}")
    return {f: data[f] for f in _FIELDS}
