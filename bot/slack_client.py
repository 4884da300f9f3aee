"""The one place the bot makes a Slack Web API client, so every client retries the same way.

Slack answers a busy app with ``429`` and ``Retry-After``, and now and then with a ``5xx``.
slack_sdk ships handlers for both but installs only the connection-error one by default, so
without this a rate-limited ``chat.update`` would leave a card stale (or a run's result
unposted) on the first refusal. Bolt copies ``retry_handlers`` into the client it makes for
each request, so the app's client passes them on to every listener.

Retries share one count per request in slack_sdk (``RetryState.current_attempt``), and each
handler stops once that count reaches its own maximum: at most 3 retries of any kind, then
the error surfaces to the caller as before.

Each handler is wrapped to count the retries it makes (``SlackRetries``), and one more
handler at the end of the list, which never retries, counts the calls that failed after
them (``SlackErrors``: slack_sdk asks the handlers in order about every answer, and asks
the last only when none before it retried).
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
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState
from slack_sdk.web.async_client import AsyncWebClient

from engine import metrics

RATE_LIMIT_RETRIES: Final = 3
"""Each waits the ``Retry-After`` seconds Slack asked for (plus up to 1 s of jitter)."""
SERVER_ERROR_RETRIES: Final = 3
"""For 500 and 503, after 0.5 s, 1 s, 2 s (each plus up to 1 s of jitter)."""
CONNECTION_ERROR_RETRIES: Final = 1
"""slack_sdk's default: one more try after a reset or refused connection."""
SERVER_ERROR_BACKOFF: Final = 0.5


class CountedRetries(AsyncRetryHandler):
    """``handler``, with each retry it makes counted."""

    def __init__(self, handler: AsyncRetryHandler) -> None:
        super().__init__(max_retry_count=handler.max_retry_count, interval_calculator=handler.interval_calculator)
        self.handler = handler

    async def can_retry_async(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> bool:
        return await self.handler.can_retry_async(state=state, request=request, response=response, error=error)

    async def prepare_for_next_attempt_async(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> None:
        metrics.add(metrics.SLACK_RETRIES)
        await self.handler.prepare_for_next_attempt_async(state=state, request=request, response=response, error=error)


class CountedFailures(AsyncRetryHandler):
    """Never retries: counts an answer that is a failure once no handler before it retried."""

    async def can_retry_async(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> bool:
        refused = response is not None and (response.status_code >= 400 or (response.body or {}).get("ok") is False)
        if error is not None or refused:
            metrics.add(metrics.SLACK_ERRORS)
        return False


def retry_handlers() -> list[AsyncRetryHandler]:
    """Fresh handlers for one client: connection errors, rate limits, then server errors, each
    counted, and the count of what failed after them."""
    return [
        CountedRetries(AsyncConnectionErrorRetryHandler(max_retry_count=CONNECTION_ERROR_RETRIES)),
        CountedRetries(AsyncRateLimitErrorRetryHandler(max_retry_count=RATE_LIMIT_RETRIES)),
        CountedRetries(
            AsyncServerErrorRetryHandler(
                max_retry_count=SERVER_ERROR_RETRIES,
                interval_calculator=BackoffRetryIntervalCalculator(backoff_factor=SERVER_ERROR_BACKOFF),
            )
        ),
        CountedFailures(),
    ]


def web_client(*, token: str | None, base_url: str) -> AsyncWebClient:
    """An ``AsyncWebClient`` for ``base_url`` that retries rate limits, server and connection errors.

    ``token`` may be None for Bolt's app client: Bolt then supplies the token per request.
    """
    return AsyncWebClient(token=token, base_url=base_url, retry_handlers=retry_handlers())
