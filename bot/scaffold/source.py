"""Where the bot a new project depends on comes from: the ``requirements.txt`` line.

A project made by ``approval-bot init`` must get the same bot its author just ran, so
that its tests and its Lambda package run that code. pip records where it installed a
distribution from in ``direct_url.json`` (PEP 610): a local folder (editable or not), a
VCS checkout at a commit, or an archive URL. Without that record the bot came from a
package index, and its version pins it.
"""

from __future__ import annotations

import json
import re
from importlib import metadata
from pathlib import Path
from typing import Any, Final
from urllib.parse import unquote, urlparse

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

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


USAGE: Final = (
    f"give a path to the bot's checkout, a git URL ({DISTRIBUTION} @ git+https://…) "
    f"or a version ({DISTRIBUTION}==0.1.0)"
)
_USERINFO: Final = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?P<userinfo>[^/@\s]*)@")
_PASSWORD_WITH_SLASH: Final = re.compile(r"://[^/@:\s]+:(?!\d+/)[^@\s]*/[^@\s]*@")
"""``user:pa/ss@host``: a password that holds a ``/``, which ``_USERINFO`` (stopping at ``/``) misses.
A port (``host:8443/path@v1``) is not one."""
_QUERY: Final = re.compile(r"://[^\s?]*\?(?P<query>[^\s#]*)")
_ENV_VAR: Final = re.compile(r"\$\{[A-Z0-9_]+\}")
"""pip expands ``${VAR}`` (capitals, digits, ``_``) in requirements files, from the environment."""


def requirement_from_spec(spec: str) -> str:
    """``--bot-source``: an existing folder or file becomes its absolute path; anything else must be
    a requirement for the bot (``slack-approval-bot==0.1.0``, ``slack-approval-bot @ git+https://…``),
    kept as given. ``requirements.txt`` is committed, so a URL never carries a credential:
    only ``${VAR}`` forms, which pip fills in from the environment when it reads the file."""
    spec = spec.strip()
    if not spec or "\n" in spec or spec.startswith("-"):
        raise BotSourceError(f"--bot-source {_shown(spec)!r} is not a requirement; {USAGE}")
    _refuse_credentials(spec)
    path = Path(spec).expanduser()
    if path.exists():
        return str(path.resolve())
    if spec.startswith((".", "/", "~")):
        raise BotSourceError(f"--bot-source {spec!r}: no such file or folder; give the path to the bot's checkout")
    try:
        requirement = Requirement(spec)
    except InvalidRequirement:
        raise BotSourceError(f"--bot-source {_shown(spec)!r} is not one requirement; {USAGE}") from None
    if canonicalize_name(requirement.name) != DISTRIBUTION:
        raise BotSourceError(f"--bot-source {_shown(spec)!r} names {requirement.name!r}, not the bot; {USAGE}")
    if requirement.marker is not None:
        raise BotSourceError(
            f"--bot-source {_shown(spec)!r} has an environment marker: the bot is needed everywhere; {USAGE}"
        )
    return spec


def _refuse_credentials(spec: str) -> None:
    """A user or password in a URL would be printed and committed with ``requirements.txt``.

    ``${VAR}`` forms are kept as written; ``ssh://git@host`` names an account, not a secret."""
    found = _PASSWORD_WITH_SLASH.search(spec) is not None
    for match in _USERINFO.finditer(spec):
        userinfo, scheme = match["userinfo"], match["scheme"].lower()
        if not userinfo or all(_ENV_VAR.fullmatch(part) for part in userinfo.split(":", 1)):
            continue
        if scheme.endswith("ssh") and userinfo == "git":  # GitHub's, GitLab's and Bitbucket's ssh user
            continue
        found = True
    for match in _QUERY.finditer(spec):  # ?token=…, a presigned archive's signature
        pairs = [pair.partition("=")[2] for pair in match["query"].split("&") if pair]
        if not all(_ENV_VAR.fullmatch(value) for value in pairs):
            found = True
    if found:
        raise BotSourceError(
            f"--bot-source {_shown(spec)!r} has a credential in its URL, which requirements.txt (a committed file) "
            "would hold: name an environment variable instead, which pip expands, "
            "e.g. git+https://${GIT_TOKEN}@github.com/OWNER/REPO"
        )


def _shown(spec: str) -> str:
    """``spec`` with any URL's user, password and query hidden, for a message."""
    spec = re.sub(r"(://[^/@:\s]+:)(?!\d+/)[^@\s]*/[^@\s]*@", r"://***@", spec)
    spec = _USERINFO.sub(lambda m: f"{m['scheme']}://***@" if m["userinfo"] else m[0], spec)
    return _QUERY.sub(lambda m: m[0][: len(m[0]) - len(m["query"])] + "***", spec)
