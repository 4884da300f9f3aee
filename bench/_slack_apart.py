"""The local Slack of ``bench/ack_load.py``, in a process of its own.

Why a process: in production Slack is another machine. Ours' hundreds of Web API calls a
burst (posting cards, updating status messages) land on the local Slack while ours acks the
next burst; in the bench's process that Slack shares the servers' interpreter lock, so an
ack waits up to the switch interval (5 ms) behind Slack's own work, and only ours pays it
(the bare app makes no Slack call). Measured on steady traffic with one worker, the only
change being where Slack ran: a p99 ratio of 1.64 with Slack on a thread of the bench,
0.91 with the interpreter's switch interval at 0.5 ms, and 1.18, 1.08 and 1.41 in three
runs with Slack in this process. It runs at the workers' low priority: its CPU stands for
another machine's, so it must not take the acking process's turn on the bench's two cores.

What the bench needs from Slack is small, so the process answers one JSON line per line:
``{"op": "bodies", "bursts": [[{"kind": "run"|"help"|"click", "text": ...}, ...], ...]}``
(the signed-to-be bodies a person's commands and Approve clicks on the pending cards make,
built by ``LocalSlackUser`` against this Slack's state), ``{"op": "pending"}`` (cards still
waiting), ``{"op": "calls"}`` (Web API calls so far) and ``{"op": "rejected"}``. Its first
line out is ``{"api_url": ..., "bot_token": ...}``; end of input stops it.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import sys
from typing import Any

from bench.ack_latency import APPROVER, CHANNEL, REQUESTER, _BodyRecorder, _pending_cards
from localslack import LocalSlack, LocalSlackUser

_LINE_LIMIT = 64 * 1024 * 1024  # a round's bodies are one line of a few hundred KB (asyncio's default: 64 KB)
NICENESS = 19  # as the workers (``bot.workers.WORKER_NICENESS``): another machine's CPU, not ours


async def _bodies(slack: LocalSlack, bursts: list[list[dict[str, str]]]) -> list[list[str]]:
    recording = _BodyRecorder()
    person = LocalSlackUser(slack=slack, transport=recording)
    cards = iter(_pending_cards(slack))
    built: list[list[str]] = []
    for burst in bursts:
        bodies: list[str] = []
        for request in burst:
            if request["kind"] == "click":
                card = next(cards, None)
                if card is None:
                    raise RuntimeError("no pending card left to click: the previous round's runs did not ask")
                await person.click(message=card, label="Approve", user_id=APPROVER, channel_id=CHANNEL)
            else:
                await person.slash_command(text=request["text"], user_id=REQUESTER, channel_id=CHANNEL)
            bodies.append(base64.b64encode(recording.body).decode())
        built.append(bodies)
    return built


async def _answer(slack: LocalSlack, request: dict[str, Any]) -> dict[str, Any]:
    op = request["op"]
    if op == "bodies":
        return {"bursts": await _bodies(slack, request["bursts"])}
    if op == "pending":
        return {"n": len(_pending_cards(slack))}
    if op == "calls":
        return {"n": len(slack.calls)}
    if op == "rejected":
        return {"rejected": [str(r.get("error")) for r in slack.rejected[:3]]}
    return {"error": f"unknown op {op!r}"}


async def _serve() -> None:
    os.nice(NICENESS)
    loop = asyncio.get_running_loop()
    slack = LocalSlack()
    await slack.start()
    try:
        sys.stdout.write(json.dumps({"api_url": slack.api_url, "bot_token": slack.bot_token}) + "\n")
        sys.stdout.flush()
        while line := await loop.run_in_executor(None, sys.stdin.readline):
            try:
                answer = await _answer(slack, json.loads(line))
            except RuntimeError as error:
                answer = {"error": str(error)}
            sys.stdout.write(json.dumps(answer) + "\n")
            sys.stdout.flush()
    finally:
        await slack.stop()


class SlackApart:
    """The bench's handle on the Slack process (used from one event loop)."""

    def __init__(self, process: asyncio.subprocess.Process, *, api_url: str, bot_token: str) -> None:
        self._process = process
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

    async def bodies(self, bursts: list[list[dict[str, str]]]) -> list[list[bytes]]:
        """The bodies of these bursts' requests: commands as typed, clicks on the pending cards in turn."""
        answer = await self._ask({"op": "bodies", "bursts": bursts})
        return [[base64.b64decode(b) for b in burst] for burst in answer["bursts"]]

    async def pending(self) -> int:
        return int((await self._ask({"op": "pending"}))["n"])

    async def calls(self) -> int:
        return int((await self._ask({"op": "calls"}))["n"])

    async def rejected(self) -> list[str]:
        return list((await self._ask({"op": "rejected"}))["rejected"])

    async def stop(self) -> None:
        if self._process.stdin is not None:
            self._process.stdin.close()
        await self._process.wait()

    async def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self._process.stdin is not None and self._process.stdout is not None
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
