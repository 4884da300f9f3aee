"""The self-invocation envelope: only what this function sealed, recently, for itself, opens."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from bot.aws_lambda.invoke import MAX_AGE_SECONDS, Forged, envelope_key, seal, unseal
from bot.work import Decide, PickUp, StartRun, SweepRun, Work, from_wire, to_wire
from engine.records import Decision, MessageRef, Verdict

KEY = envelope_key("signing-secret")
NOW = 1_800_000_000.0
FN = "stack-approval-bot"

WORK: list[Work] = [
    StartRun(run_id="r1", graph="deploy", task="ship <b> & co", user="U1", channel="C1", response_url="https://x/y"),
    Decide(
        run_id="r1",
        ask_key="a1",
        decision=Decision(verdict=Verdict.APPROVE, user="U1", at=NOW),
        card=MessageRef(channel="C1", ts="1.2"),
        response_url="https://x/y",
    ),
    Decide(
        run_id="r1",
        ask_key="a1",
        decision=Decision(verdict=Verdict.TRUST, user="U1", at=NOW),
        card=None,
        response_url="",
    ),
    PickUp(run_id="r1"),
    SweepRun(run_id="r2"),
]


@pytest.mark.parametrize("work", WORK, ids=lambda w: type(w).__name__)
def test_work_round_trips_through_json(work: Work) -> None:
    sealed = json.loads(json.dumps(seal(work, key=KEY, function=FN, now=NOW)))
    assert unseal(sealed, key=KEY, function=FN, now=NOW + 5) == work
    assert from_wire(json.loads(json.dumps(to_wire(work)))) == work


def test_envelopes_stay_small() -> None:
    for work in WORK:
        assert len(json.dumps(seal(work, key=KEY, function=FN, now=NOW))) < 1024


def _tampered(change: Any) -> dict[str, Any]:
    sealed = seal(WORK[1], key=KEY, function=FN, now=NOW)
    tampered = copy.deepcopy(sealed)
    change(tampered)
    return tampered


@pytest.mark.parametrize(
    "event",
    [
        _tampered(lambda e: e["approval_bot"]["work"].update(run_id="r2")),
        _tampered(lambda e: e["approval_bot"]["work"]["decision"].update(user="U2")),
        _tampered(lambda e: e.update(sig="0" * 64)),
        _tampered(lambda e: e.pop("sig")),
        _tampered(lambda e: e["approval_bot"].update(to="other-function")),
        seal(WORK[1], key=envelope_key("another-secret"), function=FN, now=NOW),
        seal(WORK[1], key=KEY, function="other-function", now=NOW),
        {"approval_bot": "x", "sig": "y"},
        {"approval_bot": {"v": 1}},
    ],
)
def test_forged_or_altered_envelopes_are_refused(event: dict[str, Any]) -> None:
    with pytest.raises(Forged):
        unseal(event, key=KEY, function=FN, now=NOW)


def test_old_envelopes_are_refused() -> None:
    sealed = seal(WORK[0], key=KEY, function=FN, now=NOW)
    assert unseal(sealed, key=KEY, function=FN, now=NOW + MAX_AGE_SECONDS - 1) == WORK[0]
    with pytest.raises(Forged):
        unseal(sealed, key=KEY, function=FN, now=NOW + MAX_AGE_SECONDS + 1)


def test_sealed_but_malformed_work_is_refused() -> None:
    from bot.aws_lambda.invoke import _mac

    body = {"v": 1, "to": FN, "at": int(NOW), "work": {"kind": "pick_up", "run_id": ["not", "text"]}}
    with pytest.raises(Forged):
        unseal({"approval_bot": body, "sig": _mac(KEY, body)}, key=KEY, function=FN, now=NOW)


def test_the_envelope_key_is_not_the_signing_secret() -> None:
    assert KEY != b"signing-secret" and len(KEY) == 32
