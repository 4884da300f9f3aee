"""The SDK this container runs: whether Lambda's own boto3 is new enough, and its one botocore session.

A project's Makefile leaves boto3 and botocore out of the package (~25 MB), because
Lambda's Python runtime has them; AWS updates that copy, but a function may run on an old
one (a pinned runtime version, a stale region). The bot then needs what pyproject pins
(``boto3>=1.35``), so a container that finds an older one says so, once, with the fix,
instead of failing later in some call that copy lacks. Reading ``botocore.__version__`` is
free on a deployed function: reading the Slack secret has imported botocore already
(and importing its package alone takes under a millisecond).

Every client the container makes comes from one botocore session (``session``), as
``boto3.client`` makes them from boto3's default one: a session reads botocore's endpoint
data and caches the models it loads, and a second session would read them all again
(~55 ms of a cold start that reads the Slack secret, then makes the Lambda client).
"""

from __future__ import annotations

import functools
import logging
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from botocore.session import Session

logger = logging.getLogger(__name__)

MIN_BOTO3: Final = (1, 35)
"""pyproject's ``boto3>=1.35`` (a test holds them equal). boto3 1.X.* requires botocore
1.X.*, so botocore's version says which boto3 came with it."""


def sdk_too_old(botocore_version: str) -> bool:
    """Log one error line and say True if ``botocore_version`` is older than ``MIN_BOTO3``.

    A version that does not parse is not judged: this check must never stop a cold start."""
    try:
        major, minor = (int(part) for part in botocore_version.split(".")[:2])
    except ValueError:
        return False
    if (major, minor) >= MIN_BOTO3:
        return False
    logger.error(
        "Lambda's runtime has botocore %s, older than the boto3>=%d.%d this bot needs: ship your own boto3 "
        "by deleting the `rm -rf boto3 … jmespath …` line of the project's Makefile, then sam build && sam deploy",
        botocore_version,
        *MIN_BOTO3,
    )
    return True


@functools.cache
def session() -> Session:
    """This container's botocore session (clients made in the init phase, one thread at a time)."""
    from botocore.session import get_session

    return get_session()


def check_runtime_sdk() -> bool:
    """``sdk_too_old`` for the botocore this process imports (Lambda's, unless the package ships one)."""
    import botocore

    return sdk_too_old(str(botocore.__version__))
