"""Where the bot a new project depends on comes from: the ``requirements.txt`` line.

A project made by ``approval-bot init`` must get the same bot its author just ran, so
that its tests and its Lambda package run that code. pip records where it installed a
distribution from in ``direct_url.json`` (PEP 610): a local folder (editable or not), a
VCS checkout at a commit, or an archive URL. Without that record the bot came from a
package index, and its version pins it.
"""

from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path
from typing import Any, Final
from urllib.parse import unquote, urlparse

from bot.slack_access import ConfigError

DISTRIBUTION: Final = "slack-approval-bot"


class BotSourceError(ConfigError):
    """``--bot-source`` cannot be a requirement (one line for ``approval-bot init``)."""


def installed_requirement() -> str:
    """The requirement line for the bot that is running (see the module's docstring).

    A bot imported from a checkout (an editable install, or the checkout on the path) is
    that checkout's path. Otherwise the first installed copy with a PEP 610 record names
    its source; a copy without one came from an index and its version pins it. (A
    checkout's own ``*.egg-info`` may be found before the installed copy: it has no record.)
    """
    checkout = Path(__file__).resolve().parents[2]
    pyproject = checkout / "pyproject.toml"
    if pyproject.is_file() and f'name = "{DISTRIBUTION}"' in pyproject.read_text(encoding="utf-8"):
        return str(checkout)
    found = list(metadata.distributions(name=DISTRIBUTION))
    if not found:
        raise BotSourceError(
            f"{DISTRIBUTION} is not installed as a distribution here, so where it comes from is unknown; "
            "pass --bot-source (a path to a checkout, a git URL or a version requirement)"
        )
    for dist in found:
        record = dist.read_text("direct_url.json")
        if record:
            return requirement_from_direct_url(record, version=dist.version)
    return requirement_from_direct_url(None, version=found[0].version)


def requirement_from_direct_url(text: str | None, *, version: str) -> str:
    """The requirement for a PEP 610 record ``text`` (None: installed from an index)."""
    if not text:
        return f"{DISTRIBUTION}=={version}"
    record: dict[str, Any] = json.loads(text)
    url = str(record.get("url", ""))
    if "vcs_info" in record:
        vcs = record["vcs_info"]
        commit = vcs.get("commit_id") or vcs.get("requested_revision")
        return f"{DISTRIBUTION} @ {vcs.get('vcs', 'git')}+{url}" + (f"@{commit}" if commit else "")
    parsed = urlparse(url)
    if parsed.scheme == "file":
        return str(Path(unquote(parsed.path)))
    if url:
        return f"{DISTRIBUTION} @ {url}"
    return f"{DISTRIBUTION}=={version}"


def requirement_from_spec(spec: str) -> str:
    """``--bot-source``: an existing folder or file becomes its absolute path; anything else is a
    pip requirement, kept as given (``slack-approval-bot==0.1.0``, ``slack-approval-bot @ git+https://…``)."""
    spec = spec.strip()
    if not spec or "\n" in spec or spec.startswith("-"):
        raise BotSourceError(
            f"--bot-source {spec!r} is not a requirement; give a path to the bot's checkout, a git URL "
            f"({DISTRIBUTION} @ git+https://…) or a version ({DISTRIBUTION}==0.1.0)"
        )
    path = Path(spec).expanduser()
    if path.exists():
        return str(path.resolve())
    if spec.startswith((".", "/", "~")):
        raise BotSourceError(f"--bot-source {spec!r}: no such file or folder; give the path to the bot's checkout")
    return spec
