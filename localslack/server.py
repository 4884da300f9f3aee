"""A local stand-in for Slack's Web API and response URLs, served over real HTTP on 127.0.0.1.

The bot talks to it through its unmodified ``AsyncWebClient`` (``SLACK_API_URL`` points here),
so tests and the offline demo exercise the same code paths as production. It keeps the state
a Slack workspace would show (messages, threads, ephemerals, modals), refuses what real Slack
refuses (see ``limits.py``) and records every call so tests can assert on them. Tests can also
make it fail the way Slack sometimes does, with a 429 or a 5xx (see ``inject_failures``).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, TypeVar

from aiohttp import web

from localslack.calls import Call
from localslack.faults import Fault, Faults, RequestPredicate, fault_response
from localslack.params import decode
from localslack.socket_mode import ACK_TIMEOUT_SECONDS, APP_LEVEL_METHODS, LOCAL_APP_TOKEN, SocketMode
from localslack.state import ApiError
from localslack.streams import STREAM_LIFETIME_SECONDS
from localslack.webapi import TRIGGER_TTL_SECONDS, WebApi

LOCAL_BOT_TOKEN: Final = "xoxb-local"
_log = logging.getLogger(__name__)

_MESSAGE_WRITES: Final = frozenset(
    {"chat.postMessage", "chat.update", "chat.delete", "chat.startStream", "chat.appendStream", "chat.stopStream"}
)

T = TypeVar("T")
ChangeHook = Callable[[str, dict[str, Any]], object]
"""Called as ``hook(event, details)`` after every change; may return an awaitable."""


class LocalSlack(WebApi):
    """Slack's Web API (the methods a bot uses), response URLs and Socket Mode, with inspectable state."""

    def __init__(
        self,
        *,
        bot_token: str = LOCAL_BOT_TOKEN,
        app_token: str = LOCAL_APP_TOKEN,
        ack_timeout: float = ACK_TIMEOUT_SECONDS,
        team_id: str = "T0LOCAL",
        team_domain: str = "local",
        bot_user_id: str = "U0LOCALBOT",
        bot_id: str = "B0LOCAL",
        app_id: str = "A0LOCAL",
        users: Mapping[str, str] | None = None,
        channels: Mapping[str, str] | None = None,
        trigger_ttl: float = TRIGGER_TTL_SECONDS,
        usergroups: Mapping[str, Sequence[str]] | None = None,
        streaming: bool = True,
        stream_lifetime: float = STREAM_LIFETIME_SECONDS,
    ) -> None:
        """``streaming=False`` is a workspace without streamed messages (chat.*Stream answer
        ``feature_not_enabled``); ``stream_lifetime`` is how long a stream lasts after it started."""
        super().__init__(
            team_id=team_id,
            team_domain=team_domain,
            bot_user_id=bot_user_id,
            bot_id=bot_id,
            app_id=app_id,
            users=users,
            channels=channels,
            trigger_ttl=trigger_ttl,
            streaming=streaming,
            stream_lifetime=stream_lifetime,
        )
        for group, members in (usergroups or {}).items():
            self.set_usergroup(group, members)  # more with set_usergroup, as an admin edits them
        self.bot_token = bot_token
        self.socket_mode = SocketMode(slack=self, app_token=app_token, ack_timeout=ack_timeout)
        """Socket Mode (``apps.connections.open`` and its WebSocket); see ``socket_mode.py``."""
        self.methods["apps.connections.open"] = self.socket_mode.connections_open
        self.faults = Faults()
        """Planned and served failures; use ``inject_failures`` and ``faults_served``."""
        self.on_change: list[ChangeHook] = []
        """Hooks run after every change (the demo re-renders from here)."""
        self._cond = asyncio.Condition()
        self._runner: web.AppRunner | None = None
        self._base_url: str | None = None
        self._timers: list[asyncio.TimerHandle] = []
        self._wakeups: set[asyncio.Task[None]] = set()

    # -- lifecycle -------------------------------------------------------------------------------

    async def start(self, *, host: str = "127.0.0.1", port: int = 0) -> None:
        """Serve on ``host:port`` (0 picks a free port; read it back from ``base_url``)."""
        app = web.Application()
        app.router.add_route("*", "/api/{method}", self._handle_api)
        app.router.add_post("/response/{token}", self._handle_response_url)
        app.router.add_get("/socket/{ticket}", self.socket_mode.handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, host, port).start()
        bound_host, bound_port = self._runner.addresses[0][:2]
        self._base_url = f"http://{bound_host}:{bound_port}/"

    async def stop(self) -> None:
        if self._runner is not None:
            await self.socket_mode.close()
            await self._runner.cleanup()
            self._runner = None
        for timer in self._timers:
            timer.cancel()
        self._timers.clear()

    @property
    def base_url(self) -> str:
        if self._base_url is None:
            raise RuntimeError("LocalSlack is not started: await start() first")
        return self._base_url

    @property
    def api_url(self) -> str:
        """What the bot gets as ``SLACK_API_URL`` (slack_sdk's ``base_url``)."""
        return f"{self.base_url}api/"

    # -- failures ----------------------------------------------------------------------------------

    def inject_failures(
        self,
        *,
        method: str,
        status: int,
        times: int | None = 1,
        retry_after: int = 1,
        when: RequestPredicate | None = None,
    ) -> Fault:
        """Fail the next ``times`` calls of ``method`` (that ``when(params)`` accepts) with ``status``.

        ``429`` answers as Slack's rate limiter does: ``Retry-After: <retry_after>`` and
        ``{"ok": false, "error": "ratelimited"}``; a ``5xx`` answers an HTML page, no JSON.
        ``times=None`` fails every matching call until ``clear_failures()``. Plans stack and are
        used in the order made. A failed call reaches no handler: nothing is posted and it is
        not in ``calls`` but in ``faults_served``; the returned ``Fault`` counts its ``served``.
        """
        return self.faults.inject(method=method, status=status, times=times, retry_after=retry_after, when=when)

    def hold_answers(
        self, *, method: str, seconds: float, times: int | None = 1, when: RequestPredicate | None = None
    ) -> Fault:
        """Let the next ``times`` calls of ``method`` take effect at once but answer ``seconds`` later.

        Longer than the bot's Slack client timeout, this is a timeout after the fact: the
        message is posted or changed, the bot hears nothing. Served holds are in ``faults_served``.
        """
        return self.faults.hold(method=method, seconds=seconds, times=times, when=when)

    def clear_failures(self) -> None:
        """Stop failing calls; ``faults_served`` keeps what was served."""
        self.faults.clear()

    @property
    def faults_served(self) -> list[dict[str, Any]]:
        """Every failure answered, in order, as ``{"method", "status", "params"}``."""
        return list(self.faults.served)

    # -- pacing ----------------------------------------------------------------------------------

    def message_calls(self, channel: str, ts: str) -> list[Call]:
        """Every call that posted, changed or deleted message ``ts`` in ``channel``, oldest first.

        Refused calls are included (Slack's rate limits count them too); read ``Call.at`` for
        when each came, e.g. to check the bot updates one message at most about once a second.
        """
        return [
            call
            for call in self.calls
            if call.method in _MESSAGE_WRITES
            and call.params.get("channel") == channel
            and ts in (call.params.get("ts"), (call.result or {}).get("ts"))
        ]

    # -- waiting and change notification ---------------------------------------------------------

    async def wait_for(self, predicate: Callable[[], T | None], *, timeout: float = 10.0, what: str = "") -> T:
        """Wait until ``predicate()`` returns something truthy, re-checking after every change.

        Raises TimeoutError naming ``what`` (or the predicate) and the last calls seen, so a
        failing test says what never happened instead of just hanging.
        """

        async def poll() -> T:
            async with self._cond:
                while True:
                    result = predicate()
                    if result:
                        return result
                    await self._cond.wait()

        try:
            return await asyncio.wait_for(poll(), timeout)
        except TimeoutError:
            name = what or getattr(predicate, "__qualname__", repr(predicate))
            recent = [method for method, _ in self.calls[-8:]]
            raise TimeoutError(
                f"LocalSlack.wait_for: {name} did not happen within {timeout}s; last calls: {recent}, "
                f"rejected: {[r['error'] for r in self.rejected]}"
            ) from None

    async def changed(self, event: str, details: dict[str, Any]) -> None:
        """Wake ``wait_for`` and run the ``on_change`` hooks; a failing hook is logged, never raised."""
        async with self._cond:
            self._cond.notify_all()
        for hook in list(self.on_change):
            try:
                result = hook(event, details)
                if inspect.isawaitable(result):
                    await result
            except Exception:
                _log.exception("LocalSlack on_change hook failed for %s", event)

    def _wake_when_stream_ends(self, *, channel: str, ts: str) -> None:
        """Slack ends a stream after its lifetime with no call from anyone: tell ``wait_for`` and the hooks."""

        def expired() -> None:
            self.streams.expire()
            task = asyncio.ensure_future(self.changed("stream_expired", {"channel": channel, "ts": ts}))
            self._wakeups.add(task)
            task.add_done_callback(self._wakeups.discard)

        self._timers = [t for t in self._timers if not t.cancelled() and t.when() > asyncio.get_running_loop().time()]
        self._timers.append(asyncio.get_running_loop().call_later(self.streams.lifetime, expired))

    # -- HTTP ------------------------------------------------------------------------------------

    async def _handle_api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        params: dict[str, Any] = dict(request.query)
        call: Call | None = None
        try:
            if request.method == "POST" and request.can_read_body:
                if request.content_type == "application/json":
                    body = await request.json()
                    if not isinstance(body, dict):
                        raise ApiError("invalid_json")
                    params.update(body)
                else:
                    form = await request.post()
                    params.update({k: v for k, v in form.items() if isinstance(v, str)})
            params = decode(params)
            token = params.pop("token", None)
            header = request.headers.get("Authorization", "")
            token = header.removeprefix("Bearer ").strip() if header.startswith("Bearer ") else token
            self._check_token(method, token)
            # After auth, as Slack rate-limits an app, not an anonymous caller; before the handler,
            # so a failed call changes nothing and is not a call in ``calls``.
            fault = self.faults.take(method=method, params=params)
            if fault is not None and fault.hold:
                # A slow Slack: the call lands now, its answer leaves later (a held answer).
                call = Call(method, params)
                self.calls.append(call)
                handler = self.methods.get(method)
                if handler is None:
                    raise ApiError("unknown_method")
                held = {"ok": True, **handler(params)}
                call.result = held
                await self.changed(method, {"params": params, "result": held})
                await asyncio.sleep(fault.hold)
                return web.json_response(held)
            if fault is not None:
                await self.changed("fault", {"method": method, "status": fault.status, "params": params})
                return fault_response(fault)
            call = Call(method, params)
            self.calls.append(call)
            handler = self.methods.get(method)
            if handler is None:
                raise ApiError("unknown_method")
            result = {"ok": True, **handler(params)}
        except (ApiError, json.JSONDecodeError, UnicodeDecodeError) as error:
            if call is None:  # a refused call is still a call Slack received
                call = Call(method, params)
                self.calls.append(call)
            result = self.reject(method, params, error if isinstance(error, ApiError) else ApiError("invalid_json"))
        call.result = result
        if method == "chat.startStream" and result["ok"]:
            self._wake_when_stream_ends(channel=result["channel"], ts=result["ts"])
        await self.changed(method, {"params": params, "result": result})
        return web.json_response(result)

    def _check_token(self, method: str, token: str | None) -> None:
        """The bot token for everything but the app-level methods, which take the ``xapp-`` token."""
        if not token:
            raise ApiError("not_authed")
        app_token = self.socket_mode.app_token
        expected = app_token if method in APP_LEVEL_METHODS else self.bot_token
        if token != expected:
            raise ApiError("not_allowed_token_type" if token in (app_token, self.bot_token) else "invalid_auth")

    async def _handle_response_url(self, request: web.Request) -> web.Response:
        token = request.match_info["token"]
        url = str(request.url)
        body: dict[str, Any] = {}
        try:
            raw = await request.json() if request.content_type == "application/json" else None
            if raw is None:
                form = await request.post()
                raw = json.loads(str(form["payload"])) if "payload" in form else dict(form)
            body = decode(dict(raw))
            effect = self.respond(token, body)
        except (ValueError, TypeError, ApiError) as error:
            if not isinstance(error, ApiError):
                error = ApiError("invalid_payload")
            status = 404 if error.error in ("no_such_url", "used_url", "expired_url") else 400
            result = self.reject("response_url", body, error)
            await self.changed("response_url", {"url": url, "body": body, "result": result})
            return web.json_response(result, status=status)
        await self.changed("response_url", {"url": url, "body": body, "effect": effect})
        return web.json_response({"ok": True})
