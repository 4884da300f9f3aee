"""The e2e harness (the real bot process, signed Slack users, the two stores), shared with this suite.

The reliability tests drive the same real parts as tests/e2e, so they use its fixtures
rather than a copy that could drift from it.
"""

from tests.e2e.conftest import (  # noqa: F401  (fixtures and the report hook, re-exported for pytest)
    dynamodb_backend,
    markers_file,
    pytest_runtest_makereport,
    slack_never_refused,
    sqlite_backend,
    start_bot,
    user_for,
)
