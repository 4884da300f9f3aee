"""Configuration from the environment (the names are a fixed contract, listed in the README), validated once.

Secrets are ``SecretStr`` so that a logged settings object never shows them.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_file=None, extra="ignore", populate_by_name=True)

    slack_bot_token: SecretStr = Field(alias="SLACK_BOT_TOKEN")
    slack_signing_secret: SecretStr = Field(alias="SLACK_SIGNING_SECRET")
    slack_app_token: SecretStr | None = Field(default=None, alias="SLACK_APP_TOKEN")
    slack_api_url: str = Field(default="https://slack.com/api/", alias="SLACK_API_URL")
    slack_command: str = Field(default="/graph", alias="SLACK_COMMAND")
    dynamodb_table: str | None = Field(default=None, alias="DYNAMODB_TABLE")
    snapshot_bucket: str | None = Field(default=None, alias="SNAPSHOT_BUCKET")
    graph_modules: Annotated[list[str], NoDecode] = Field(default_factory=list, alias="GRAPH_MODULES")
    sqlite_path: str = Field(default=".approval-bot/runs.sqlite3", alias="SQLITE_PATH")
    port: int = Field(default=3000, alias="PORT", ge=1, le=65535)
    lease_seconds: float = Field(default=120.0, alias="LEASE_SECONDS", ge=5)

    @field_validator("graph_modules", mode="before")
    @classmethod
    def _split_modules(cls, value: object) -> object:
        if isinstance(value, str):
            return [m.strip() for m in value.split(",") if m.strip()]
        return value

    @field_validator("slack_command")
    @classmethod
    def _command_shape(cls, value: str) -> str:
        if not value.startswith("/") or " " in value:
            raise ValueError("SLACK_COMMAND must look like /graph")
        return value

    @field_validator("slack_api_url")
    @classmethod
    def _trailing_slash(cls, value: str) -> str:
        # slack_sdk joins base_url and method names by plain concatenation.
        return value if value.endswith("/") else value + "/"

    @field_validator("dynamodb_table", "snapshot_bucket", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: object) -> object:
        return value or None
