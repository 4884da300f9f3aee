"""The chunks of a streamed message (``chat.startStream``/``appendStream``/``stopStream``), checked and applied.

A streamed reply is built from chunks: ``markdown_text`` appends text, ``task_update`` adds or
moves a task on the timeline (or plan), ``plan_update`` titles the plan, ``blocks`` adds Block
Kit blocks. Slack refuses a malformed chunk with ``invalid_chunks``; the local Slack must too,
or a bad chunk would only fail in production. What the chunks add up to is kept on the message
as ``message["stream"]`` (for tests) and rendered into its ``text`` (for the demo).
"""

from __future__ import annotations

import copy
from typing import Any, Final, Literal

from localslack.limits import LIMITS, check_message

DisplayMode = Literal["timeline", "plan"]
STATUSES: Final = ("pending", "in_progress", "complete", "error")
_KEYS: Final[dict[str, tuple[frozenset[str], frozenset[str]]]] = {
    # type: (allowed fields besides "type", required fields)
    "markdown_text": (frozenset({"text"}), frozenset({"text"})),
    "task_update": (
        frozenset({"id", "title", "status", "details", "output", "sources"}),
        frozenset({"id", "title", "status"}),
    ),
    "plan_update": (frozenset({"title"}), frozenset({"title"})),
    "blocks": (frozenset({"blocks"}), frozenset({"blocks"})),
}
_ICONS: Final = {"pending": "○", "in_progress": "◐", "complete": "✓", "error": "✗"}


def check_chunks(chunks: Any) -> list[str]:
    """The reasons Slack would refuse ``chunks`` with ``invalid_chunks`` (empty when accepted)."""
    if not isinstance(chunks, list):
        return ["must be an array [json-pointer:/chunks]"]
    errors: list[str] = []
    for i, chunk in enumerate(chunks):
        path = f"/chunks/{i}"
        if not isinstance(chunk, dict):
            errors.append(f"must be an object [json-pointer:{path}]")
            continue
        kind = chunk.get("type")
        if kind not in _KEYS:
            errors.append(f"unsupported chunk type: {kind!r} [json-pointer:{path}/type]")
            continue
        allowed, needed = _KEYS[kind]
        fields = set(chunk) - {"type"}
        errors += [f"unexpected property [json-pointer:{path}/{k}]" for k in sorted(fields - allowed)]
        errors += [f"is required [json-pointer:{path}/{k}]" for k in sorted(needed - fields)]
        errors += _check_fields(kind, chunk, path)
    return errors


def _check_fields(kind: str, chunk: dict[str, Any], path: str) -> list[str]:
    errors: list[str] = []

    def text(key: str, limit: str | None, *, optional: bool = False) -> None:
        value = chunk.get(key)
        if value is None and (optional or key not in chunk):
            return  # a missing required field is reported once, above
        if not isinstance(value, str) or (not value and not optional):
            errors.append(f"must be a non-empty string [json-pointer:{path}/{key}]")
        elif limit is not None and len(value) > LIMITS[limit]:
            errors.append(f"must be less than {LIMITS[limit] + 1} characters [json-pointer:{path}/{key}]")

    if kind == "markdown_text":
        text("text", "stream.markdown_text")
    elif kind == "plan_update":
        text("title", "stream.plan_title")
    elif kind == "task_update":
        text("id", None)
        text("title", "stream.task_title")
        if "status" in chunk and chunk["status"] not in STATUSES:
            errors.append(f"must be one of {list(STATUSES)} [json-pointer:{path}/status]")
        text("details", "stream.markdown_text", optional=True)
        text("output", "stream.markdown_text", optional=True)
        errors += _check_sources(chunk.get("sources"), f"{path}/sources")
    elif kind == "blocks":
        problem = check_message({"blocks": chunk.get("blocks")}, require_content=False)
        if problem is not None:
            errors += [m.replace("[json-pointer:/blocks", f"[json-pointer:{path}/blocks") for m in problem[1]]
    return errors


def _check_sources(sources: Any, path: str) -> list[str]:
    if sources is None:
        return []
    if not isinstance(sources, list):
        return [f"must be an array [json-pointer:{path}]"]
    return [
        f"must be a url source with url and text [json-pointer:{path}/{i}]"
        for i, source in enumerate(sources)
        if not isinstance(source, dict)
        or source.get("type") != "url"
        or not all(isinstance(source.get(k), str) and source[k] for k in ("url", "text"))
        or set(source) - {"type", "url", "text"}
    ]


def new_stream(*, display: DisplayMode, recipient_user_id: str | None, recipient_team_id: str | None) -> dict[str, Any]:
    """The inspectable state of a message that just started streaming."""
    return {
        "state": "streaming",
        "display": display,
        "plan": None,
        "markdown": "",
        "tasks": {},
        "recipient_user_id": recipient_user_id,
        "recipient_team_id": recipient_team_id,
    }


def apply(message: dict[str, Any], *, markdown_text: str | None = None, chunks: list[Any] | None = None) -> None:
    """Add already-checked ``markdown_text`` or ``chunks`` to a streamed ``message``, then re-render its text.

    A task update replaces the task's title and status and appends to its details and output,
    which is how Slack shows a task's progress accumulate.
    """
    stream = message["stream"]
    if markdown_text:
        stream["markdown"] += markdown_text
    for chunk in chunks or []:
        kind = chunk["type"]
        if kind == "markdown_text":
            stream["markdown"] += chunk["text"]
        elif kind == "plan_update":
            stream["plan"] = chunk["title"]
        elif kind == "blocks":
            message["blocks"] = [*message.get("blocks", []), *copy.deepcopy(chunk["blocks"])]
        else:
            task = stream["tasks"].setdefault(chunk["id"], {"title": "", "status": "", "details": "", "output": ""})
            task |= {"title": chunk["title"], "status": chunk["status"]}
            task["details"] += chunk.get("details") or ""
            task["output"] += chunk.get("output") or ""
            if chunk.get("sources"):
                task["sources"] = [*task.get("sources", []), *copy.deepcopy(chunk["sources"])]
    message["text"] = render(stream)


def render(stream: dict[str, Any]) -> str:
    """A plain reading of the stream: the plan title, one line per task, then the markdown."""
    lines = [stream["plan"]] if stream["plan"] else []
    lines += [f"{_ICONS.get(t['status'], '?')} {t['title']}" for t in stream["tasks"].values()]
    if stream["markdown"]:
        lines.append(stream["markdown"])
    return "\n".join(lines)
