"""Slack's token and signing secret from Secrets Manager, read once per container.

On Lambda they are never plain environment values (anyone who may read the function's
configuration would see them): ``SLACK_SECRET_ARN`` names a secret whose value is JSON
``{"SLACK_BOT_TOKEN": "xoxb-…", "SLACK_SIGNING_SECRET": "…"}``. Locally and in tests the
environment variables are used as on the server.
"""

from __future__ import annotations

import json
from typing import Any, Final

from bot.slack_access import ConfigError

SECRET_ENV: Final = "SLACK_SECRET_ARN"
_FIELDS: Final = ("SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET")


class SecretsUnavailable(ConfigError):
    """One line for the log: which secret, and what went wrong (never its value)."""


def slack_secrets(secret_id: str) -> dict[str, str]:
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError, ClientError

    from bot.aws_lambda.sdk import session

    # Read in the init phase (or, if that failed, inside the first ack): a short wait, one retry, never 60 s.
    config = Config(connect_timeout=1, read_timeout=1, retries={"mode": "standard", "total_max_attempts": 2})
    try:
        client: Any = session().create_client("secretsmanager", config=config)
        value = client.get_secret_value(SecretId=secret_id)["SecretString"]
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
