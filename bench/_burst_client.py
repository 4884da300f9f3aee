"""The clients of ``bench/ack_load.py``, in a process of their own.

Why a process: clients on a thread of the servers' process share its GIL, so while the
server runs the work it handed off, a client waits up to the interpreter's switch
interval (5 ms) to read an ack that had already been sent, and the bench charges that
wait to the server. Slack is another machine; this is the nearest the bench gets.

Protocol, one JSON line each way per burst: in ``{"url": ..., "bodies": [base64, ...]}``,
out ``{"times": [seconds, ...]}`` in the order of the bodies, or ``{"error": "..."}``
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
            bodies = [base64.b64decode(b) for b in request["bodies"]]
            try:
                times = await asyncio.gather(*(_timed(transport, body) for body in bodies))
                answer: dict[str, object] = {"times": list(times)}
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

    async def burst(self, *, url: str, bodies: list[bytes]) -> list[float]:
        """Send every body at once to ``url``; the seconds until each ack, in order."""
        assert self._process.stdin is not None and self._process.stdout is not None
        request = {"url": url, "bodies": [base64.b64encode(b).decode() for b in bodies]}
        self._process.stdin.write((json.dumps(request) + "\n").encode())
        await self._process.stdin.drain()
        line = await self._process.stdout.readline()
        if not line:
            raise RuntimeError("the burst client exited")
        answer = json.loads(line)
        if "error" in answer:
            raise RuntimeError(answer["error"])
        return [float(t) for t in answer["times"]]

    async def close(self) -> None:
        if self._process.stdin is not None:
            self._process.stdin.close()
        await self._process.wait()


if __name__ == "__main__":
    asyncio.run(_serve())
