"""Turning a Web API request into checked arguments, the same way for every method.

Form posts carry JSON fields as strings and booleans as ``"true"``/``"1"``; JSON posts carry
them as they are. Every handler (``webapi.py``, ``streams.py``, ``home.py``, ``directory.py``)
reads its arguments through these helpers, so a refusal has the same error code whichever
encoding the bot's client chose.
"""

from __future__ import annotations

import json
from typing import Any, Final, Literal

from localslack.limits import check_message, check_view
from localslack.metadata import check_metadata
from localslack.state import ApiError

_JSON_FIELDS: Final = ("blocks", "attachments", "view", "metadata", "chunks")
_BOOL_FIELDS: Final = (
    "reply_broadcast",
    "replace_original",
    "delete_original",
    "unfurl_links",
    "mrkdwn",
    "include_all_metadata",
    "inclusive",
    "include_users",
    "include_count",
    "include_disabled",
    "exclude_archived",
)
_JSON_ERRORS: Final = {
    "blocks": "invalid_blocks_format",
    "metadata": "invalid_metadata_format",
    "chunks": "invalid_chunks",
}


def decode(params: dict[str, Any]) -> dict[str, Any]:
    """Undo form encoding: JSON fields arrive as strings and booleans as "true"/"1"."""
    for key in _JSON_FIELDS:
        if isinstance(params.get(key), str):
            try:
                params[key] = json.loads(params[key])
            except json.JSONDecodeError:
                raise ApiError(_JSON_ERRORS.get(key, "invalid_arguments")) from None
    for key in _BOOL_FIELDS:
        if isinstance(params.get(key), str):
            params[key] = params[key].lower() in ("1", "true")
    return params


def required(params: dict[str, Any], key: str, error: str) -> str:
    """A non-empty string argument, or ``error``."""
    value = params.get(key)
    if not isinstance(value, str) or not value:
        raise ApiError(error)
    return value


def check_message_params(params: dict[str, Any], *, require_content: bool = True) -> None:
    """What chat.postMessage and chat.update refuse: text, blocks and metadata."""
    problem = check_message(params, require_content=require_content)
    if problem is None and "metadata" in params:
        problem = check_metadata(params["metadata"])
    if problem is not None:
        raise ApiError(*problem)


def checked_view(params: dict[str, Any], *, surface: Literal["modal", "home"] = "modal") -> dict[str, Any]:
    """The ``view`` argument if Slack would accept it on ``surface`` (``modal`` or ``home``)."""
    view = params.get("view")
    errors = check_view(view, surface=surface)
    if errors:
        raise ApiError("invalid_arguments", errors)
    assert isinstance(view, dict)
    return view
