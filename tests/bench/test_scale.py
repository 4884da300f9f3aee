"""``bench.scale`` at a small size, checking what must hold at any size on any machine.

Never a time threshold besides Slack's 3 s ack: this machine is shared and noisy. What is
checked is what the benchmark's figures rest on: every card of a burst posted exactly once,
no 5xx, no ack over 3 s, every run of the burst waiting on its ask; a sweep over waiting
runs that are not due touches none of them (same version, same status) and sends the
same DynamoDB requests at any number of waiting runs, as do the listings; the local Slack
refused no call. The small SQLite run is in the default suite; DynamoDB and the full size
are behind ``-m long``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench._scale_report import write
from bench.scale import Sizes, measure_backend
from tests.support.aws import CountingMotoServer

SMALL = Sizes(waiting=50, baseline=5, burst=20, burst_baseline=5, samples=2)


def _check(result: dict[str, Any], *, sizes: Sizes) -> None:
    for key, count in (("burst_baseline", sizes.burst_baseline), ("burst", sizes.burst)):
        burst = result[key]
        assert burst["statuses"] == [200], burst
        assert burst["server_errors"] == 0 and burst["acks_over_3s"] == 0, burst
        assert burst["cards"] == count and burst["distinct_cards"] == count, burst  # each card exactly once
        assert burst["runs"] == count and burst["runs_waiting"] == count, burst
    sweep = result["sweep"]
    assert sweep["runs_swept"] == 0 and sweep["runs_changed"] == [], sweep
    assert sweep["runs_waiting_after"] == sizes.waiting, sweep
    assert result["cli_sweep"]["exit"] == 0 and result["cli_sweep"]["swept_lines"] == [], result["cli_sweep"]
    assert [row.name for row in result["listings"]][:3] == ["/graph runs", "/graph pending", "App Home open"]
    assert all(len(row.ours.samples) == sizes.samples for row in result["listings"])
    assert result["slack_refused"] == 0
    for moment in ("rss_kib_started", "rss_kib_idle", "rss_kib_after_listing"):
        assert all(kib > 10_000 for kib in result[moment].values()), result[moment]  # a live Python process


def _same_requests_at_any_size(result: dict[str, Any]) -> None:
    requests = result["sweep"]["requests"]
    assert requests["small"] == requests["large"] == {"dynamodb.Query": 1}, requests
    # bot.preflight's read of the store and due(limit=1), then the sweep's own look
    assert result["cli_sweep"]["requests"] == {"dynamodb.GetItem": 1, "dynamodb.Query": 2}, result["cli_sweep"]
    for kind, sides in result["listing_requests"].items():
        assert sides["small"] == sides["large"], (kind, sides)
        assert sides["small"], (kind, sides)
        assert not any(op.endswith(".Scan") for op in sides["large"]), (kind, sides)


@pytest.mark.long  # 18 s: kept out of CI with the other benchmark runs
async def test_a_small_scale_run_on_sqlite_keeps_every_invariant(tmp_path: Path) -> None:
    result = await measure_backend(backend="sqlite", sizes=SMALL, workdir=tmp_path, moto=None)
    _check(result, sizes=SMALL)
    md, js = write({"sizes": SMALL.__dict__, "backends": {"sqlite": result}}, out=tmp_path / "out", command="test")
    assert md.read_text().startswith("## Scale") and js.exists()


@pytest.mark.long
async def test_a_small_scale_run_on_dynamodb_keeps_every_invariant(
    tmp_path: Path, moto_server: CountingMotoServer, aws_env: dict[str, str]
) -> None:
    result = await measure_backend(backend="dynamodb", sizes=SMALL, workdir=tmp_path, moto=moto_server)
    _check(result, sizes=SMALL)
    _same_requests_at_any_size(result)


@pytest.mark.long
@pytest.mark.parametrize("backend", ["sqlite", "dynamodb"])
async def test_the_full_size_keeps_every_invariant(
    backend: str, tmp_path: Path, moto_server: CountingMotoServer, aws_env: dict[str, str]
) -> None:
    sizes = Sizes()
    moto = moto_server if backend == "dynamodb" else None
    result = await measure_backend(backend=backend, sizes=sizes, workdir=tmp_path, moto=moto)
    _check(result, sizes=sizes)
    if moto is not None:
        _same_requests_at_any_size(result)
