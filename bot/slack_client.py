"""The one place the bot makes a Slack Web API client, so every client retries the same way.

Slack answers a busy app with ``429`` and ``Retry-After``, and now and then with a ``5xx``.
slack_sdk ships handlers for both but installs only the connection-error one by default, so
without this a rate-limited ``chat.update`` would leave a card stale (or a run's result
unposted) on the first refusal. Bolt copies ``retry_handlers`` into the client it makes for
each request, so the app's client passes them on to every listener.

Retries share one count per request in slack_sdk (``RetryState.current_attempt``), and each
handler stops once that count reaches its own maximum: at most 3 retries of any kind, then
the error surfaces to the caller as before.
"""

from __future__ import annotations

from typing import Final

from slack_sdk.http_retry.async_handler import AsyncRetryHandler
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.http_retry.builtin_interval_calculators import BackoffRetryIntervalCalculator
from slack_sdk.web.async_client import AsyncWebClient

RATE_LIMIT_RETRIES: Final = 3
"""Each waits the ``Retry-After`` seconds Slack asked for (plus up to 1 s of jitter)."""
SERVER_ERROR_RETRIES: Final = 3
"""For 500 and 503, after 0.5 s, 1 s, 2 s (each plus up to 1 s of jitter)."""
CONNECTION_ERROR_RETRIES: Final = 1
"""slack_sdk's default: one more try after a reset or refused connection."""
SERVER_ERROR_BACKOFF: Final = 0.5


def retry_handlers() -> list[AsyncRetryHandler]:
    """Fresh handlers for one client: connection errors, rate limits, then server errors."""
    return [
        AsyncConnectionErrorRetryHandler(max_retry_count=CONNECTION_ERROR_RETRIES),
        AsyncRateLimitErrorRetryHandler(max_retry_count=RATE_LIMIT_RETRIES),
        AsyncServerErrorRetryHandler(
            max_retry_count=SERVER_ERROR_RETRIES,
            interval_calculator=BackoffRetryIntervalCalculator(backoff_factor=SERVER_ERROR_BACKOFF),
        ),
    ]


def web_client(*, token: str | None, base_url: str) -> AsyncWebClient:
    """An ``AsyncWebClient`` for ``base_url`` that retries rate limits, server and connection errors.

    ``token`` may be None for Bolt's app client: Bolt then supplies the token per request.
    """
    return AsyncWebClient(token=token, base_url=base_url, retry_handlers=retry_handlers())
