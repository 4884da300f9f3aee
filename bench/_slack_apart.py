"""The local Slack of ``bench/ack_load.py``, in a process of its own.

Why a process: in production Slack is another machine. Ours' hundreds of Web API calls a
burst (posting cards, updating status messages) land on the local Slack while ours acks the
next burst; on a thread of the bench's process that Slack shares the servers' interpreter
lock, so an ack can wait up to the switch interval (5 ms) behind Slack's own work, which
only ours pays (the bare app makes no Slack call). In a process of its own Slack no longer
holds ours' interpreter lock, but it still takes its share of the bench's two cores at the
same priority as ours, which production Slack does not: if anything, ours at a
disadvantage. ``bench/README.md`` lists the runs made each way.

What the bench needs from Slack is small, so the process answers one JSON line per line:
``{"op": "bodies", "bursts": [[{"kind": "run"|"help"|"click", "text": ...}, ...], ...]}``
(the signed-to-be bodies a person's commands and Approve clicks on the pending cards make,
built by ``LocalSlackUser`` against this Slack's state, and the ``ts`` of each card clicked),
``{"op": "pending"}`` (the ``ts`` of the cards still waiting), ``{"op": "calls"}`` (Web API
calls so far) and ``{"op": "rejected"}``. Its first line out is ``{"api_url": ...,
"bot_token": ...}``; a request it cannot answer gets ``{"error": ...}``; end of input stops it.
"""

from __future__ import annotations

import asyncio
import base64
import json
import sys
from typing import Any

from bench.ack_latency import APPROVER, CHANNEL, REQUESTER, _BodyRecorder, _pending_cards
from localslack import LocalSlack, LocalSlackUser

_LINE_LIMIT = 64 * 1024 * 1024  # a round's bodies are one line of a few hundred KB (asyncio's default: 64 KB)
_STOP_SECONDS = 10.0


async def _bodies(slack: LocalSlack, bursts: list[list[dict[str, str]]]) -> dict[str, Any]:
    recording = _BodyRecorder()
    person = LocalSlackUser(slack=slack, transport=recording)
    cards = iter(_pending_cards(slack))
    built: list[list[str]] = []
    clicked: list[str] = []
    for burst in bursts:
        bodies: list[str] = []
        for request in burst:
            if request["kind"] == "click":
                card = next(cards, None)
                if card is None:
                    raise RuntimeError("no pending card left to click: the previous round's runs did not ask")
                await person.click(message=card, label="Approve", user_id=APPROVER, channel_id=CHANNEL)
                clicked.append(str(card["ts"]))
            else:
                await person.slash_command(text=request["text"], user_id=REQUESTER, channel_id=CHANNEL)
            bodies.append(base64.b64encode(recording.body).decode())
        built.append(bodies)
    return {"bursts": built, "clicked": clicked}


async def _answer(slack: LocalSlack, request: dict[str, Any]) -> dict[str, Any]:
    op = request["op"]
    if op == "bodies":
        return await _bodies(slack, request["bursts"])
    if op == "pending":
        return {"cards": [str(card["ts"]) for card in _pending_cards(slack)]}
    if op == "calls":
        return {"n": len(slack.calls)}
    if op == "rejected":
        return {"rejected": [str(r.get("error")) for r in slack.rejected[:3]]}
    return {"error": f"unknown op {op!r}"}


async def _serve() -> None:
    loop = asyncio.get_running_loop()
    slack = LocalSlack()
    await slack.start()
    try:
        sys.stdout.write(json.dumps({"api_url": slack.api_url, "bot_token": slack.bot_token}) + "\n")
        sys.stdout.flush()
        while line := await loop.run_in_executor(None, sys.stdin.readline):
            try:
                answer = await _answer(slack, json.loads(line))
            except Exception as error:  # one bad request must not take Slack away from the workers
                answer = {"error": f"{type(error).__name__}: {error}"}
            sys.stdout.write(json.dumps(answer) + "\n")
            sys.stdout.flush()
    finally:
        await slack.stop()


class SlackApart:
    """The bench's handle on the Slack process (used from one event loop)."""

    def __init__(self, process: asyncio.subprocess.Process, *, api_url: str, bot_token: str) -> None:
        self._process = process
        self._turn = asyncio.Lock()  # one exchange at a time: answers come back in order, unnamed
        self.api_url = api_url
        self.bot_token = bot_token

    @classmethod
    async def start(cls) -> SlackApart:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bench._slack_apart",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            limit=_LINE_LIMIT,
        )
        assert process.stdout is not None
        first = await process.stdout.readline()
        if not first:
            raise RuntimeError("the Slack process exited before it served")
        started = json.loads(first)
        return cls(process, api_url=started["api_url"], bot_token=started["bot_token"])

    async def bodies(self, bursts: list[list[dict[str, str]]]) -> tuple[list[list[bytes]], list[str]]:
        """The bodies of these bursts' requests (commands as typed, clicks on the pending cards
        in turn) and the ``ts`` of the cards clicked, in order."""
        answer = await self._ask({"op": "bodies", "bursts": bursts})
        return [[base64.b64decode(b) for b in burst] for burst in answer["bursts"]], list(answer["clicked"])

    async def pending(self) -> set[str]:
        """The ``ts`` of the cards waiting for a click."""
        return set((await self._ask({"op": "pending"}))["cards"])

    async def calls(self) -> int:
        return int((await self._ask({"op": "calls"}))["n"])

    async def rejected(self) -> list[str]:
        return list((await self._ask({"op": "rejected"}))["rejected"])

    async def stop(self) -> None:
        if self._process.stdin is not None:
            self._process.stdin.close()
        try:
            await asyncio.wait_for(self._process.wait(), _STOP_SECONDS)
        except TimeoutError:
            self._process.kill()
            await self._process.wait()

    async def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self._process.stdin is not None and self._process.stdout is not None
        async with self._turn:
            self._process.stdin.write((json.dumps(request) + "\n").encode())
            await self._process.stdin.drain()
            line = await self._process.stdout.readline()
        if not line:
            raise RuntimeError("the Slack process exited")
        answer: dict[str, Any] = json.loads(line)
        if "error" in answer:
            raise RuntimeError(answer["error"])
        return answer


if __name__ == "__main__":
    asyncio.run(_serve())
