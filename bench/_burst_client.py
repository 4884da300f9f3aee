"""The clients of ``bench/ack_load.py``, in a process of their own.

Why a process: clients on a thread of the servers' process share its GIL, so while the
server runs the work it handed off, a client waits up to the interpreter's switch
interval (5 ms) to read an ack that had already been sent, and the bench charges that
wait to the server. Slack is another machine; this is the nearest the bench gets.

Protocol, one JSON line each way per round: in ``{"url": ..., "bursts": [[base64, ...], ...]}``
(bursts sent back to back, each as soon as the previous one's acks are all in), out
``{"times": [[seconds, ...], ...]}`` in the order of the bodies, or ``{"error": "..."}``
when an ack was not HTTP 200. Each side keeps one connection pool for the whole run,
like Slack's keep-alive connections.
"""

from __future__ import annotations

import asyncio
import base64
import json
import sys
import time

from localslack import LOCAL_SIGNING_SECRET, HttpTransport


async def _timed(transport: HttpTransport, body: bytes) -> float:
    started = time.perf_counter()
    response = await transport.post(body)
    elapsed = time.perf_counter() - started
    if response.status != 200:
        raise RuntimeError(f"ack failed with HTTP {response.status}: {response.text[:200]}")
    return elapsed


async def _serve() -> None:
    loop = asyncio.get_running_loop()
    transports: dict[str, HttpTransport] = {}
    try:
        while line := await loop.run_in_executor(None, sys.stdin.readline):
            request = json.loads(line)
            url = request["url"]
            transport = transports.setdefault(url, HttpTransport(bot_url=url, signing_secret=LOCAL_SIGNING_SECRET))
            bursts = [[base64.b64decode(b) for b in burst] for burst in request["bursts"]]
            try:
                times = []
                for bodies in bursts:  # back to back: the next leaves as the last ack of this one arrives
                    times.append(list(await asyncio.gather(*(_timed(transport, body) for body in bodies))))
                answer: dict[str, object] = {"times": times}
            except RuntimeError as error:
                answer = {"error": str(error)}
            sys.stdout.write(json.dumps(answer) + "\n")
            sys.stdout.flush()
    finally:
        for transport in transports.values():
            await transport.aclose()


class BurstClient:
    """The parent's handle on the client process."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self._process = process

    @classmethod
    async def start(cls) -> BurstClient:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bench._burst_client", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
        )
        return cls(process)

    async def bursts(self, *, url: str, bursts: list[list[bytes]]) -> list[list[float]]:
        """Send each burst's bodies at once to ``url``, the bursts back to back; the seconds until each ack."""
        assert self._process.stdin is not None and self._process.stdout is not None
        request = {"url": url, "bursts": [[base64.b64encode(b).decode() for b in burst] for burst in bursts]}
        self._process.stdin.write((json.dumps(request) + "\n").encode())
        await self._process.stdin.drain()
        line = await self._process.stdout.readline()
        if not line:
            raise RuntimeError("the burst client exited")
        answer = json.loads(line)
        if "error" in answer:
            raise RuntimeError(answer["error"])
        return [[float(t) for t in burst] for burst in answer["times"]]

    async def close(self) -> None:
        if self._process.stdin is not None:
            self._process.stdin.close()
        await self._process.wait()


if __name__ == "__main__":
    asyncio.run(_serve())
