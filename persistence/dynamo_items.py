"""How a Run becomes a DynamoDB item and back, and how big that item is.

Kept apart from the store so that the store reads as the sequence of requests it makes.
The item layout is described in ``persistence/dynamodb.py``.

Numbers: DynamoDB has no float type and boto3 refuses Python floats, so the fixed
numeric fields (timestamps, version) go through ``Decimal(repr(f))``: ``repr`` is the
shortest string that reads back as the same float, and DynamoDB keeps 38 digits. What
graph code puts in an ask (``reason``, an edited tool input) is arbitrary JSON: it may
hold floats DynamoDB cannot represent (1e300, NaN), integers past 38 digits, or ``1.0``
that DynamoDB would hand back as ``1``. Those payloads are stored as JSON text so they
come back exactly as they went in.
"""

from __future__ import annotations

import json
from dataclasses import asdict, fields, replace
from decimal import Decimal
from typing import Any, cast

from boto3.dynamodb.types import Binary, TypeDeserializer, TypeSerializer

from engine.conditions import And, Condition, Contains, Empty, Eq, Exists, Gt, In, Le, Missing, Not, Or, Path, Value
from engine.policy import APPROVING
from engine.records import Ask, Decision, Run
from engine.store import Delivery

RUN_SK = "run"
SWEEP_PK = "sweep"
ITEM_LIMIT = 400 * 1024  # DynamoDB's hard limit for one item, names and values included

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()
# Attributes of the run item that are not Run fields.
_STORE_ATTRS = ("pk", "sk", "state", "sweep_pk", "sweep_at", "expires_at", "write_id")
# Attributes of the run item that are Run fields (``run_item`` names them after the
# fields); derived, so that a field added to Run is read without anyone editing a list.
RUN_ATTRS = tuple(f.name for f in fields(Run) if f.name != "snapshot")


def pk(run_id: str) -> str:
    return f"run#{run_id}"


def key(run_id: str, sk: str = RUN_SK) -> dict[str, Any]:
    return {"pk": {"S": pk(run_id)}, "sk": {"S": sk}}


def wire(value: Any) -> dict[str, Any]:
    """One attribute value in DynamoDB's wire form, floats turned into Decimals."""
    return dict(_serializer.serialize(_decimals(value)))


def decision_value(decision: Decision) -> dict[str, Any]:
    data = decision.to_dict()
    if "edited_input" in data:
        data["edited_input"] = _json(data["edited_input"])
    return wire(data)


def counts_as_approval(decision: Decision) -> bool:
    return not decision.expired and decision.verdict.value in APPROVING


def all_of_vote(decision: Decision, names: dict[str, str], values: dict[str, Any]) -> tuple[list[str], str]:
    """What a vote under ``all_of`` adds to the write (the entry it fills, one gap fewer) and
    the condition that keeps it a vote: an ``all_of`` entry is still missing after it (the
    rules, ``engine.decision_rules``, check the entry itself is missing)."""
    names["#gaps"] = "gaps"
    values[":gaps_left"] = wire(1 if decision.counts_for else 0)
    still = "asks.#k.#gaps > :gaps_left"
    if decision.counts_for is None:
        return [], still
    names.update({"#filled": "filled", "#slot": decision.counts_for})
    values[":slot_user"] = {"S": decision.user}
    values[":gap"] = {"N": "1"}
    return ["asks.#k.#filled.#slot = :slot_user", "asks.#k.#gaps = asks.#k.#gaps - :gap"], still


def all_of_complete(decision: Decision, names: dict[str, str], values: dict[str, Any]) -> str:
    """The condition an approval that decides the ask needs: no ``all_of`` entry missing
    once it counts (at most the one it fills is missing now)."""
    names["#gaps"] = "gaps"
    values[":gaps_left"] = wire(1 if decision.counts_for else 0)
    return "(attribute_not_exists(asks.#k.#gaps) OR asks.#k.#gaps <= :gaps_left)"


def as_recorded(ask: Ask, decision: Decision) -> Decision:
    """``decision`` as the rules recorded it on ``ask`` (with the ``all_of`` entry it fills)."""
    recorded = ask.votes.get(decision.user) if ask.decision is None else ask.decision
    return replace(decision, counts_for=recorded.counts_for) if recorded is not None else decision


def render(condition: Condition, names: dict[str, str], values: dict[str, Any]) -> str:
    """``condition`` (``engine.conditions``) as a DynamoDB condition expression.

    Adds the placeholders it uses to ``names`` (``#c…``) and ``values`` (``:c…``), and only
    those: DynamoDB refuses an expression whose placeholders go unused. The rules of a
    decision are declared once in the engine (``engine.decision_rules``); this renders
    them, it does not restate them.
    """
    by_name: dict[str, str] = {}
    by_value: dict[tuple[str, str], str] = {}

    def name(part: str) -> str:
        if part not in by_name:
            by_name[part] = f"#c{len(by_name)}"
            names[by_name[part]] = part
        return by_name[part]

    def path(p: Path) -> str:
        return ".".join(name(part) for part in p.parts)

    def value(v: Value) -> str:
        wired = wire(v)
        tag = json.dumps(wired, sort_keys=True, default=str)
        kind = next(iter(wired))
        if (kind, tag) not in by_value:
            by_value[(kind, tag)] = f":c{len(by_value)}"
            values[by_value[(kind, tag)]] = wired
        return by_value[(kind, tag)]

    def go(c: Condition) -> str:
        match c:
            case Exists(p):
                return f"attribute_exists({path(p)})"
            case Missing(p):
                return f"attribute_not_exists({path(p)})"
            case Eq(p, v):
                return f"{path(p)} = {value(v)}"
            case Gt(p, v):
                return f"{path(p)} > {value(v)}"
            case Le(p, v):
                return f"{path(p)} <= {value(v)}"
            case Contains(p, v):
                return f"contains({path(p)}, {value(v)})"
            case In(p, vs):
                return f"{path(p)} IN ({', '.join(value(v) for v in vs)})"
            case Empty(p):
                return f"size({path(p)}) = {value(0)}"
            case And(items_):
                return "(" + " AND ".join(go(i) for i in items_) + ")"
            case Or(items_):
                return "(" + " OR ".join(go(i) for i in items_) + ")"
            case Not(item):
                return f"(NOT {go(item)})"
        raise TypeError(f"not a condition: {c!r}")

    return go(condition)


def _doc(run: Run) -> dict[str, Any]:
    doc = run.to_dict()
    for ask in doc["asks"].values():
        ask["reason"] = _json(ask["reason"])
        if "tool" in ask:
            ask["tool"] = _json(ask["tool"])
        if "decision" in ask and "edited_input" in ask["decision"]:
            ask["decision"]["edited_input"] = _json(ask["decision"]["edited_input"])
    return doc


def run_item(run: Run, *, expires_at: float | None) -> dict[str, Any]:
    """The run item without its state (the store adds ``state`` when it is inline)."""
    doc = _doc(run)
    item = {name: wire(value) for name, value in doc.items() if value is not None}
    item.update(key(run.run_id))
    if run.sweep_at is not None:
        item["sweep_pk"] = {"S": SWEEP_PK}
        item["sweep_at"] = wire(run.sweep_at)
    if expires_at is not None:
        item["expires_at"] = {"N": str(int(expires_at))}
    return item


def save_expression(
    run: Run,
    *,
    expires_at: float | None,
    write_id: str,
    inline_state: bytes | None,
    drop_inline: bool,
    expected_version: int,
) -> dict[str, Any]:
    """UpdateItem arguments that make the record ``run`` (fields, index, TTL), state aside.

    An update rather than a put: a put replaces the whole item, so a state kept in the
    item would have to be sent (and billed) again with every save that did not change it.
    """
    names: dict[str, str] = {"#version": "version"}
    values: dict[str, Any] = {":expected": wire(expected_version), ":write_id": {"S": write_id}}
    sets, removes = ["write_id = :write_id"], []
    for n, (name, value) in enumerate(_doc(run).items()):
        names[f"#f{n}"] = name
        if name == "version":
            sets.append(f"#f{n} = :f{n}")
            values[f":f{n}"] = wire(value)
        elif value is None:
            removes.append(f"#f{n}")
        else:
            sets.append(f"#f{n} = :f{n}")
            values[f":f{n}"] = wire(value)
    extra: dict[str, Any] = {
        "sweep_pk": {"S": SWEEP_PK} if run.sweep_at is not None else None,
        "sweep_at": wire(run.sweep_at) if run.sweep_at is not None else None,
        "expires_at": {"N": str(int(expires_at))} if expires_at is not None else None,
    }
    for name, wired in extra.items():
        if wired is None:
            removes.append(name)
        else:
            sets.append(f"{name} = :{name}")
            values[f":{name}"] = wired
    if inline_state is not None:
        names["#state"] = "state"
        sets.append("#state = :state")
        values[":state"] = {"B": inline_state}
    elif drop_inline:
        names["#state"] = "state"
        removes.append("#state")
    expression = "SET " + ", ".join(sets) + (" REMOVE " + ", ".join(removes) if removes else "")
    return {"UpdateExpression": expression, "ExpressionAttributeNames": names, "ExpressionAttributeValues": values}


_UNSET: Any = object()


def delivery_expression(
    delivery: Delivery, *, sweep_at: Any = _UNSET, seen_version: int | None = None
) -> dict[str, Any]:
    """UpdateItem arguments recording ``delivery``; refs already stored are kept (if_not_exists)."""
    names: dict[str, str] = {"#version": "version"}
    values: dict[str, Any] = {":one": {"N": "1"}}
    sets = ["#version = #version + :one"]
    removes: list[str] = []
    if delivery.thread is not None:
        names["#thread"] = "thread"
        values[":thread"] = wire(asdict(delivery.thread))
        sets.append("#thread = if_not_exists(#thread, :thread)")
    names["#stalled"], names["#stalled_at"], values[":zero"] = "stalled", "stalled_at", {"N": "0"}
    if delivery.stalled_at is not None:
        values[":stalled_at"] = wire(delivery.stalled_at)
        sets += ["#stalled = if_not_exists(#stalled, :zero) + :one", "#stalled_at = :stalled_at"]
    else:
        sets.append("#stalled = :zero")
        removes.append("#stalled_at")
    if delivery.progress is not None:
        # The status message's ref is kept once recorded; ``shown`` is the rev this delivery
        # put on it (a delivery of an older rev cannot run: the holder is the only one that
        # shows progress while the run is leased, and a sweeper only after).
        names["#progress"], names["#pmsg"], names["#pshown"] = "progress", "message", "shown"
        values[":pmsg"] = wire(asdict(delivery.progress))
        values[":pshown"] = wire(delivery.progress_shown or 0)
        sets += ["#progress.#pmsg = if_not_exists(#progress.#pmsg, :pmsg)", "#progress.#pshown = :pshown"]
    if delivery.final is not None:
        names["#final"] = "final"
        values[":final"] = wire(asdict(delivery.final))
        sets.append("#final = if_not_exists(#final, :final)")
    keys = {k: f"#a{n}" for n, k in enumerate(dict.fromkeys([*delivery.cards, *delivery.shown, *delivery.notified]))}
    names.update({placeholder: k for k, placeholder in keys.items()})
    if keys:
        names["#asks"] = "asks"
    if delivery.cards:
        names["#card"] = "card"
    if delivery.shown:
        names["#shown"] = "shown"
    if delivery.notified:
        names["#notified"] = "notified"
    for n, (k, ref) in enumerate(delivery.cards.items()):
        path = f"#asks.{keys[k]}.#card"
        values[f":c{n}"] = wire(asdict(ref))
        sets.append(f"{path} = if_not_exists({path}, :c{n})")
    for n, (k, shown) in enumerate(delivery.shown.items()):
        values[f":s{n}"] = {"S": shown}
        sets.append(f"#asks.{keys[k]}.#shown = :s{n}")
    for n, (k, count) in enumerate(delivery.notified.items()):
        # Notices are posted in order, so a higher count includes the lower ones.
        values[f":n{n}"] = wire(count)
        sets.append(f"#asks.{keys[k]}.#notified = :n{n}")
    if sweep_at is not _UNSET:
        if sweep_at is None:
            removes += ["sweep_pk", "sweep_at"]
        else:
            values.update({":sweep_pk": {"S": SWEEP_PK}, ":sweep_at": wire(sweep_at)})
            sets += ["sweep_pk = :sweep_pk", "sweep_at = :sweep_at"]
    if seen_version is not None:
        values[":seen"] = wire(seen_version)
    expression = "SET " + ", ".join(sets) + (" REMOVE " + ", ".join(removes) if removes else "")
    return {"UpdateExpression": expression, "ExpressionAttributeNames": names, "ExpressionAttributeValues": values}


def state_ref_of(item: dict[str, Any]) -> dict[str, Any] | None:
    if "state_ref" not in item:
        return None
    ref: dict[str, Any] = plain({"r": item["state_ref"]})["r"]
    return ref


def run_projection() -> dict[str, Any]:
    """``ProjectionExpression`` arguments that read a run item without its snapshot.

    Every name goes through a placeholder: several Run fields (status, version, output,
    error...) are DynamoDB reserved words.
    """
    names = {f"#r{n}": name for n, name in enumerate(RUN_ATTRS)}
    return {"ProjectionExpression": ", ".join(names), "ExpressionAttributeNames": names}


def plain(item: dict[str, Any]) -> dict[str, Any]:
    """The item as Python values: Decimals become int or float, Binary becomes bytes."""
    return {name: _python(_deserializer.deserialize(value)) for name, value in item.items()}


def run_from_item(item: dict[str, Any], snapshot: bytes | None = None) -> Run:
    data = plain(item)
    for name in _STORE_ATTRS:
        data.pop(name, None)
    for ask in (data.get("asks") or {}).values():
        ask["reason"] = json.loads(ask["reason"])
        if "tool" in ask:
            ask["tool"] = json.loads(ask["tool"])
        decision = ask.get("decision")
        if decision and "edited_input" in decision:
            decision["edited_input"] = json.loads(decision["edited_input"])
    return Run.from_dict(data, snapshot=snapshot)


def item_size(item: dict[str, Any]) -> int:
    """An upper bound of DynamoDB's size of ``item`` (names plus values, in bytes).

    Follows the published rules (strings and binaries by length, maps and lists 3 bytes
    plus 1 per element) and rounds numbers up to their worst case so the estimate only
    errs on the large side.
    """
    return sum(len(name.encode()) + _value_size(value) for name, value in item.items())


def _value_size(value: dict[str, Any]) -> int:
    (kind, inner), *_ = value.items()
    if kind == "S":
        return len(str(inner).encode())
    if kind == "B":
        return len(inner)
    if kind == "N":
        return 21
    if kind == "M":
        return 3 + sum(len(n.encode()) + _value_size(v) + 1 for n, v in inner.items())
    if kind == "L":
        return 3 + sum(_value_size(v) + 1 for v in inner)
    return 1  # BOOL, NULL


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _decimals(value: Any) -> Any:
    if isinstance(value, float):
        return Decimal(repr(value))
    if isinstance(value, dict):
        return {k: _decimals(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decimals(v) for v in value]
    return value


def _python(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, Binary):
        return bytes(cast(Any, value))
    if isinstance(value, dict):
        return {k: _python(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_python(v) for v in value]
    return value
