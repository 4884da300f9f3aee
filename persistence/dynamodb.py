"""The production store: one DynamoDB table, optionally an S3 bucket for run state.

Item layout (one table, ``pk``/``sk`` strings)::

    pk = "run#<run_id>", sk = "run"             the run record: small, rewritten often
        run_id, graph, task, started_by, channel, status, version (N), created_at (N),
        updated_at (N), thread (M), final (M), lease_owner, lease_until (N), output,
        error                                   Run fields; None fields are absent
        asks (M)       ask key -> {key, digest, verdicts (L of S), interrupt_id, name,
                       reason (S: JSON text), node_id, status, created_at (N),
                       decision (M), card (M), shown, closed, tool (S: JSON text)}
        state_ref (M)  {kind: "inline" | "chunks" | "s3", sha256, size, check, key,
                       count, expires_at}: where the graph state is
        state (B)      the encoded state, only while it is tiny (kind "inline")
        sweep_pk = "sweep", sweep_at (N)        only while Run.sweep_at is set (sparse GSI)
        expires_at (N) TTL, set once a run is terminal
        write_id       names the last write (a retried write recognises itself)
    pk = "run#<run_id>", sk = "state#<nonce>#<nnnn>"   state chunk: data (B), expires_at
    S3: runs/<run_id>/state-<nonce>                     state object

GSI ``sweep``: hash ``sweep_pk``, range ``sweep_at``, keys only.
GSI ``by_channel``: hash ``channel``, range ``created_at``, keys only (``recent``).
GSI ``by_starter``: hash ``started_by``, range ``created_at``, keys only (``started_by``).
Inbox entries, App Home viewers and each person's start limits are items of their own:
see ``dynamo_inbox.py``, ``dynamo_home.py`` and ``dynamo_starts.py``.

Why the state lives apart: a decision, a claim, a lease renewal and a delivery record
are written several times per approval, the state once. DynamoDB bills a write by the
larger of the item's size before and after, so a state inside the record would be paid
for on every one of them. Saves are UpdateItems that leave the state alone unless it
changed. Finished runs drop their state; chunks carry a TTL (deleting them would be
billed by their size, expiry is free) that the sweeper renews for runs still waiting.

Asks are a map inside the record so that a decision is a single conditional UpdateItem
on ``asks.<key>.status`` that also bumps ``version`` and, when nobody holds the run,
claims it. One approval costs: create, save, record cards, decide-and-claim, save,
record the final message.
"""

from __future__ import annotations

import contextlib
import secrets
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

from botocore.exceptions import ClientError

from engine.audit import MAX_EVENTS, AuditEvent
from engine.decision_rules import ALL_OF_LOOKED_UP, condition_for
from engine.records import (
    DELIVERY_GRACE_SECONDS,
    Ask,
    AskStatus,
    Decision,
    MessageRef,
    Run,
    RunStatus,
)
from engine.start_limits import StartBook
from engine.store import (
    RECENT_LIMIT,
    AskNotFound,
    Delivery,
    Lease,
    RunExists,
    RunNotFound,
    StoreBroken,
    StoreError,
    StoreUnavailable,
    VersionConflict,
)
from engine.store_rules import apply_delivery, counted_event, decided, known_to
from persistence import aws, snapshots
from persistence import dynamo_items as items
from persistence.dynamo_home import DynamoHome
from persistence.dynamo_inbox import DynamoInbox
from persistence.dynamo_offload import Offloader, SnapshotMoved
from persistence.dynamo_starts import DynamoStarts

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client

_DECIDE_ATTEMPTS = 4  # a vote, then the approval it turned out to be, with a race or two
INLINE_STATE_LIMIT = 2 * 1024  # encoded bytes kept in the record: less than a request's worth
_READ_ATTEMPTS = 3


class DynamoRunStore:
    def __init__(
        self,
        table: str,
        *,
        bucket: str | None = None,
        client: DynamoDBClient | None = None,
        s3_client: S3Client | None = None,
        retention_days: float | None = 30.0,
    ) -> None:
        self._table = table
        self._ddb = client or aws.dynamodb_client()
        s3 = s3_client or (aws.s3_client() if bucket else None)
        self._offload = Offloader(self._ddb, table, s3, bucket)
        self._retention = retention_days * 86400 if retention_days else 30 * 86400.0
        self._finished_ttl = retention_days is not None
        self._inbox = DynamoInbox(self._ddb, table, retention=self._retention)
        self._home = DynamoHome(self._ddb, table)
        self._starts = DynamoStarts(self._ddb, table, retention=self._retention)

    # -- RunStore ------------------------------------------------------------------

    @aws.mapped
    def create(self, run: Run) -> None:
        stored, inline, new_ref, _ = self._place_state(run.evolve(state_ref=None))
        item = items.run_item(stored, expires_at=None)
        item["write_id"] = {"S": secrets.token_hex(8)}  # a retried put recognises itself by it
        if inline is not None:
            item["state"] = {"B": inline}
        try:
            self._ddb.put_item(
                TableName=self._table,
                Item=item,
                ConditionExpression="attribute_not_exists(pk)",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if _condition_failed(exc):
                old = _stored_item(exc)
                if old is not None and old.get("write_id") == item["write_id"]:
                    return  # our own put, retried after a lost response
                if new_ref is not None:
                    self._offload.drop(run.run_id, new_ref, chunks_too=True)
                raise RunExists(run.run_id) from None
            raise

    def _place_state(self, run: Run) -> tuple[Run, bytes | None, dict[str, Any] | None, bool]:
        """``run`` as the record will hold it, the inline state if any, the new offloaded ref,
        and whether the state the record held is kept.

        A changed state that does not fit inline is written here, under fresh keys, before
        the record that will point at it (see the timeline in ``save``).
        """
        step = snapshots.plan(run.snapshot, run.state_ref)
        stored = run.evolve(snapshot=None)
        if step.action == "keep":
            return stored, None, None, True
        if step.action == "drop":
            return stored.evolve(state_ref=None), None, None, False
        assert step.raw is not None and step.sha256 is not None
        blob = snapshots.encode(step.raw)
        if len(blob) <= INLINE_STATE_LIMIT:
            inline_ref = {"kind": "inline", "sha256": step.sha256, "size": len(blob)}
            return stored.evolve(state_ref=inline_ref), blob, None, False
        expires = time.time() + self._retention
        ref = self._offload.put(run.run_id, blob, expires_at=expires)
        ref.update(sha256=step.sha256, expires_at=int(expires))
        return stored.evolve(state_ref=ref), None, ref, False

    @aws.mapped
    def load(self, run_id: str, *, snapshot: bool = True) -> Run | None:
        if not snapshot:
            got = self._ddb.get_item(
                TableName=self._table, Key=items.key(run_id), ConsistentRead=True, **items.run_projection()
            )
            return items.run_from_item(got["Item"]) if "Item" in got else None
        for _ in range(_READ_ATTEMPTS):
            got = self._ddb.get_item(TableName=self._table, Key=items.key(run_id), ConsistentRead=True)
            if "Item" not in got:
                return None
            try:
                return self._with_state(got["Item"])
            except SnapshotMoved:
                continue
        raise StoreUnavailable(f"run {run_id}: its state kept changing while being read")

    @aws.mapped
    def fetch_state(self, run: Run) -> bytes | None:
        if run.snapshot is not None or run.state_ref is None:
            return run.snapshot
        if run.state_ref.get("kind") == "inline":
            got = self._ddb.get_item(
                TableName=self._table,
                Key=items.key(run.run_id),
                ConsistentRead=True,
                ProjectionExpression="#s",
                ExpressionAttributeNames={"#s": "state"},
            )
            blob = got.get("Item", {}).get("state", {}).get("B")
            return snapshots.decode(bytes(blob)) if blob is not None else None
        try:
            return snapshots.decode(self._offload.fetch(run.run_id, run.state_ref))
        except SnapshotMoved:
            fresh = self.load(run.run_id)
            return fresh.snapshot if fresh is not None else None

    @aws.mapped
    def decide(
        self,
        run_id: str,
        ask_key: str,
        decision: Decision,
        *,
        now: float,
        claim: Lease | None = None,
        card: MessageRef | None = None,
        member_of: frozenset[str] = frozenset(),
        event: AuditEvent | None = None,
        known: Run | None = None,
    ) -> Run:
        # One conditional UpdateItem in the plain case. Its condition is the engine's
        # declaration of the rules (``engine.decision_rules``) rendered for DynamoDB; when
        # it fails, the item as stored (ALL_OLD) is judged by the same declaration in Python
        # (``store_rules.decided``, no extra read), which either names the refusal or says how to
        # write instead: as a vote (under a quorum, approvals are still missing), or
        # without the claim (someone holds the run; its holder's save then fails its
        # version check and adopts this decision). Whatever lands in between makes the
        # next attempt fail and be judged again.
        vote, claiming = False, claim
        # Only the rules count an approval toward an all_of entry (the first write, blind,
        # claims none: it can only succeed where none is missing).
        decision = replace(decision, counts_for=None)
        earlier: tuple[str, ...] = ()  # all_of entries the write checks are filled (see _filled_before)
        if known is not None:
            # The item as the caller last saw it (the refusal it looked the person up after,
            # or an earlier click on this ask): the first write is shaped by it (a vote, the
            # all_of entry it fills) instead of written blind and refused. Timeline: t0 the
            # item is read (ALL_OLD, ALL_NEW); t1 the caller looks the person up (cached Slack
            # calls); t2 this write, shaped by the t0 item. Its condition is that of a write
            # shaped by a fresh ALL_OLD: the rules and the shape's own (``short``, ``gaps``,
            # the entry still missing), not the version, so a vote or decision landing
            # between t0 and t2 makes it fail and be judged again below; a save that only
            # bumps the version does not change what it may do. The claim stays as asked
            # (its condition says whether the run is free at t2), and a hint never refuses:
            # judged refused on the t0 item, the write is made as without one.
            with contextlib.suppress(StoreError):
                shaped = self._shaped(known, run_id, ask_key, decision, now, claiming, card, member_of, event)
                if shaped is not None:
                    vote, decision = shaped[0], shaped[2]
                    earlier = _filled_before(known, ask_key, decision, member_of)
        for _ in range(_DECIDE_ATTEMPTS):
            try:
                return self._decide(
                    run_id,
                    ask_key,
                    decision,
                    now=now,
                    claim=claiming,
                    card=card,
                    member_of=member_of,
                    event=event,
                    vote=vote,
                    earlier=earlier,
                )
            except _Rejudge as failed:
                # raises the refusal, if that is what it was
                shaped = self._shaped(failed.run, run_id, ask_key, decision, now, claiming, card, member_of, event)
                if shaped is None:
                    return self._inline(failed.item)  # already recorded (a retry after a lost response)
                if shaped[:2] == (vote, claiming) and shaped[2].counts_for == decision.counts_for:
                    # Allowed as parsed, yet refused: the condition and the rules disagree
                    # about this item. Refuse rather than guess.
                    raise StoreBroken(f"ask {ask_key} of run {run_id}: decision refused for no known reason") from None
                vote, claiming, decision = shaped
                earlier = _filled_before(failed.run, ask_key, decision, member_of)
        raise StoreUnavailable(f"ask {ask_key} of run {run_id}: the record kept changing; try again")

    @staticmethod
    def _shaped(
        run: Run,
        run_id: str,
        ask_key: str,
        decision: Decision,
        now: float,
        claiming: Lease | None,
        card: MessageRef | None,
        member_of: frozenset[str],
        event: AuditEvent | None,
    ) -> tuple[bool, Lease | None, Decision] | None:
        """How ``decision`` is to be written on ``run`` as stored: as a vote or not, with
        the claim or not (someone holds the run), and with the ``all_of`` entry it fills;
        None when ``run`` already records it. Raises the refusal the rules give."""
        expected = decided(
            run, run_id, ask_key, decision, now=now, claim=claiming, card=card, member_of=member_of, event=event
        )
        if expected is run:
            return None
        vote = expected.asks[ask_key].status is AskStatus.PENDING
        recounted = items.as_recorded(expected.asks[ask_key], decision)  # with the all_of entry it fills
        held = claiming is not None and not vote and expected.lease_owner != claiming.owner
        return vote, (None if held else claiming), recounted

    def _decide(
        self,
        run_id: str,
        ask_key: str,
        decision: Decision,
        *,
        now: float,
        claim: Lease | None,
        card: MessageRef | None,
        member_of: frozenset[str],
        event: AuditEvent | None,
        vote: bool,
        earlier: tuple[str, ...] = (),
    ) -> Run:
        names = {"#k": ask_key, "#version": "version"}
        values: dict[str, Any] = {
            ":d": items.decision_value(decision),
            ":one": {"N": "1"},
            ":now": items.wire(now),
            ":sweep": {"S": items.SWEEP_PK},
        }
        if event is not None:
            names["#audit"] = "audit"
            values[":empty"] = {"L": []}
            told = counted_event(replace(event, kind="voted") if vote else event, decision)
            values[":ev"] = items.wire([told.to_dict()])
        sets = ["#version = #version + :one", "updated_at = :now", "sweep_pk = :sweep"]
        if event is not None:
            sets.append("#audit = list_append(if_not_exists(#audit, :empty), :ev)")
        # The rules, as the engine declares them; what follows only shapes the write.
        rules = condition_for(ask_key, decision, member_of=member_of, now=now)
        conditions = [items.render(rules, names, values)]
        for i, entry in enumerate(earlier):
            # The entry this approval fills is the first missing one the person is in only
            # if those before it that they are in are filled: a record that said so (the
            # caller's hint, or an older ALL_OLD) may not be the one stored now.
            names.update({"#filled": "filled", f"#e{i}": entry})
            conditions.append(f"attribute_exists(asks.#k.#filled.#e{i})")
        if card is not None:
            sets.append("asks.#k.#card = if_not_exists(asks.#k.#card, :card)")
            names["#card"] = "card"
            values[":card"] = items.wire({"channel": card.channel, "ts": card.ts})
        if vote:
            # One approval of several: the ask stays pending and its card shows the count;
            # the run is due for a card update should this process die before making it.
            names.update({"#u": decision.user, "#votes": "votes", "#short": "short"})
            values[":due"] = items.wire(now + DELIVERY_GRACE_SECONDS)
            sets += ["asks.#k.#votes.#u = :d", "asks.#k.#short = asks.#k.#short - :one"]
            sets.append("sweep_at = if_not_exists(lease_until, :due)")
            more, still_short = items.all_of_vote(decision, names, values)
            sets += more
            conditions.append(f"(asks.#k.#short > :one OR {still_short})")
        else:
            names["#st"] = "status"
            values[":decided"] = {"S": AskStatus.DECIDED.value}
            sets += ["asks.#k.#st = :decided", "asks.#k.decision = :d"]
            if items.counts_as_approval(decision):
                names["#short"] = "short"
                conditions.append("(attribute_not_exists(asks.#k.#short) OR asks.#k.#short <= :one)")
                conditions.append(items.all_of_complete(decision, names, values))
            if claim is None:
                # Due at once on a waiting run (its decision needs picking up); at its lease's
                # end on a held one (its holder picks the decision up when it saves).
                sets.append("sweep_at = if_not_exists(lease_until, :now)")
            else:
                sets += ["#st = :resuming", "lease_owner = :owner", "lease_until = :until", "sweep_at = :until"]
                sets.append("asks.#k.handed = :owner")  # handed to the pass this claim starts
                conditions.append("#st = :waiting AND (attribute_not_exists(lease_owner) OR lease_until < :now)")
                values.update(
                    {
                        ":resuming": {"S": RunStatus.RESUMING.value},
                        ":waiting": {"S": RunStatus.WAITING.value},
                        ":owner": {"S": claim.owner},
                        ":until": items.wire(claim.until),
                    }
                )
        try:
            got = self._ddb.update_item(
                TableName=self._table,
                Key=items.key(run_id),
                UpdateExpression="SET " + ", ".join(sets),
                ConditionExpression=" AND ".join(conditions),
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if not _condition_failed(exc):
                self._explain_invalid_path(exc, run_id, ask_key)
                raise
            old = _stored_item(exc)
            if old is None:
                raise RunNotFound(run_id) from None
            raise _Rejudge(old, items.run_from_item(old)) from None
        return self._inline(got["Attributes"])

    @aws.mapped
    def note(self, run_id: str, event: AuditEvent) -> None:
        try:
            self._ddb.update_item(
                TableName=self._table,
                Key=items.key(run_id),
                UpdateExpression="SET #audit = list_append(if_not_exists(#audit, :empty), :ev),"
                " #version = #version + :one",
                ConditionExpression="attribute_exists(pk) AND (attribute_not_exists(#audit) OR size(#audit) < :max)",
                ExpressionAttributeNames={"#audit": "audit", "#version": "version"},
                ExpressionAttributeValues={
                    ":empty": {"L": []},
                    ":ev": items.wire([event.to_dict()]),
                    ":one": {"N": "1"},
                    ":max": {"N": str(MAX_EVENTS)},
                },
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if not _condition_failed(exc):
                raise
            if _stored_item(exc) is None:
                raise RunNotFound(run_id) from None
            # The trail is full: the event is only logged.

    @aws.mapped
    def claim(
        self,
        run_id: str,
        *,
        expected_version: int,
        status: RunStatus,
        owner: str,
        lease_until: float,
        now: float,
        handing: Sequence[str] = (),
        takeovers: int | None = None,
    ) -> int:
        if not status.leased:
            raise ValueError(f"claim takes a lease: status must be running or resuming, not {status}")
        names = {"#st": "status", "#version": "version"}
        values: dict[str, Any] = {
            ":status": {"S": status.value},
            ":owner": {"S": owner},
            ":until": items.wire(lease_until),
            ":now": items.wire(now),
            ":one": {"N": "1"},
            ":expected": items.wire(expected_version),
            ":sweep": {"S": items.SWEEP_PK},
        }
        sets = [
            "#st = :status, lease_owner = :owner, lease_until = :until, updated_at = :now",
            "#version = #version + :one, sweep_pk = :sweep, sweep_at = :until",
        ]
        # The answers this pass will send are marked as handed to it in the same write
        # (``engine.takeover``): no write is added to know what reached a pass.
        for n, ask_key in enumerate(dict.fromkeys(handing)):
            names[f"#h{n}"] = ask_key
            sets.append(f"asks.#h{n}.handed = :owner")
        if takeovers is not None:
            values[":takeovers"] = items.wire(takeovers)
            sets.append("takeovers = :takeovers")
        try:
            self._ddb.update_item(
                TableName=self._table,
                Key=items.key(run_id),
                UpdateExpression="SET " + ", ".join(sets),
                # ``store_rules.lease_free`` as a condition: a renewal does not bump the
                # version, so the version alone would let a stale reader take a live lease.
                ConditionExpression="#version = :expected"
                " AND (attribute_not_exists(lease_owner) OR attribute_not_exists(lease_until) OR lease_until < :now)",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if not _condition_failed(exc):
                raise
            old = _stored_item(exc)
            stored = items.run_from_item(old) if old is not None else None
            # Timeline of a lost response: claim lands (v -> v+1), the response is lost, a
            # click lands (v+2), botocore retries and fails on the version. The token names
            # this claim alone, so finding it stored means the claim is ours, whatever the version.
            if stored is not None and stored.lease_owner == owner:
                # The version the claim made, not the one stored now: the caller's copy of
                # the asks is from before the click, so its save must conflict and merge.
                return expected_version + 1
            raise VersionConflict(f"{run_id}: expected version {expected_version}") from None
        return expected_version + 1

    @aws.mapped
    def renew(self, run_id: str, *, owner: str, lease_until: float, now: float | None = None) -> bool:
        condition = "lease_owner = :owner AND #st IN (:running, :resuming)"
        values: dict[str, Any] = {
            ":until": items.wire(lease_until),
            ":owner": {"S": owner},
            ":sweep": {"S": items.SWEEP_PK},
            ":running": {"S": RunStatus.RUNNING.value},
            ":resuming": {"S": RunStatus.RESUMING.value},
        }
        if now is not None:  # not a lease that ran out: another process may be claiming it
            condition += " AND lease_until >= :now"
            values[":now"] = items.wire(now)
        try:
            self._ddb.update_item(
                TableName=self._table,
                Key=items.key(run_id),
                UpdateExpression="SET lease_until = :until, sweep_pk = :sweep, sweep_at = :until",
                ConditionExpression=condition,
                ExpressionAttributeNames={"#st": "status"},
                ExpressionAttributeValues=values,
            )
        except ClientError as exc:
            if _condition_failed(exc):
                return False
            raise
        return True

    @aws.mapped
    def save(self, run: Run, *, expected_version: int, write_id: str | None = None) -> Run:
        # Timeline of a save whose state changed and does not fit inline:
        #   1. write the state under keys nobody else uses (a random nonce);
        #   2. conditional UpdateItem of the record pointing at it;
        #   3a. it landed: delete the S3 object the old record pointed at (chunks expire);
        #   3b. its condition failed: delete what step 1 wrote; the stored run is untouched.
        # Readers only follow the pointer of a committed record, so none sees half a state.
        # A crash between 1 and 2 leaves an orphan that expires (chunk TTL, bucket rule).
        stored, inline, new_ref, kept = self._place_state(run.evolve(version=expected_version + 1))
        # The inline state goes when the state is dropped or moves out (never when kept).
        drop_inline = inline is None and not kept
        write_id = write_id or secrets.token_hex(8)
        expires_at = stored.updated_at + self._retention if stored.status.terminal and self._finished_ttl else None
        try:
            got = self._ddb.update_item(
                TableName=self._table,
                Key=items.key(run.run_id),
                ConditionExpression="#version = :expected",
                ReturnValues="ALL_OLD",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
                **items.save_expression(
                    stored,
                    expires_at=expires_at,
                    write_id=write_id,
                    inline_state=inline,
                    drop_inline=drop_inline,
                    expected_version=expected_version,
                ),
            )
        except ClientError as exc:
            if not _condition_failed(exc):
                raise  # the write may have happened: keep what step 1 wrote
            current = _stored_item(exc)
            if current is not None and current.get("write_id", {}).get("S") == write_id:
                # Our own write, landed earlier (its response lost): the record points at
                # that attempt's state, so this attempt's copy is garbage.
                landed = items.state_ref_of(current)
                if new_ref is not None and new_ref != landed:
                    self._offload.drop(run.run_id, new_ref, chunks_too=True)
                if run.state_ref is not None and run.state_ref != landed:
                    self._offload.drop(run.run_id, run.state_ref)  # what the landed write replaced
                return stored.evolve(state_ref=landed, snapshot=run.snapshot if landed is not None else None)
            if new_ref is not None:
                self._offload.drop(run.run_id, new_ref, chunks_too=True)
            raise VersionConflict(f"{run.run_id}: expected version {expected_version}") from None
        old_ref = items.state_ref_of(got.get("Attributes") or {})
        if old_ref is not None and old_ref != stored.state_ref:
            self._offload.drop(run.run_id, old_ref)
        return stored.evolve(snapshot=run.snapshot if stored.state_ref is not None else None)

    @aws.mapped
    def record_delivery(self, seen: Run, delivery: Delivery) -> Run:
        # Fast path: conditional on the version the caller saw, so the sweep index is set
        # from the record as it will be, in the same write. If anything landed since (a
        # click, a save), the same attributes are written without that condition, for the
        # asks still on the record, and the index is then brought in line separately.
        delivery = known_to(delivery, seen)
        target = apply_delivery(seen, delivery)
        try:
            got = self._ddb.update_item(
                TableName=self._table,
                Key=items.key(seen.run_id),
                ConditionExpression="#version = :seen",
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
                **items.delivery_expression(delivery, sweep_at=target.sweep_at, seen_version=seen.version),
            )
            return items.run_from_item(got["Attributes"])
        except ClientError as exc:
            if not _condition_failed(exc):
                raise
            old = _stored_item(exc)
        if old is None:
            raise RunNotFound(seen.run_id)
        try:
            got = self._ddb.update_item(
                TableName=self._table,
                Key=items.key(seen.run_id),
                ConditionExpression="attribute_exists(pk)",
                ReturnValues="ALL_NEW",
                **items.delivery_expression(known_to(delivery, items.run_from_item(old))),
            )
        except ClientError as exc:
            if _condition_failed(exc):
                raise RunNotFound(seen.run_id) from None
            raise
        stored = items.run_from_item(got["Attributes"])
        indexed = got["Attributes"].get("sweep_at")
        if stored.sweep_at != (items.plain({"at": indexed})["at"] if indexed is not None else None):
            self._set_sweep_at(stored)
        return stored

    def _set_sweep_at(self, run: Run) -> None:
        """Bring the sweep index in line with a record a delivery changed (the rare path).

        Conditional on the version just read: a write that lands in between set the
        index itself, from a record that already holds this delivery. Losing that race is
        fine, and so is failing: the sweeper re-reads every run it is pointed at.
        """
        sweep_at = run.sweep_at
        update = "SET sweep_pk = :sweep, sweep_at = :at" if sweep_at is not None else "REMOVE sweep_pk, sweep_at"
        values: dict[str, Any] = {":v": items.wire(run.version)}
        if sweep_at is not None:
            values.update({":sweep": {"S": items.SWEEP_PK}, ":at": items.wire(sweep_at)})
        with contextlib.suppress(ClientError):
            self._ddb.update_item(
                TableName=self._table,
                Key=items.key(run.run_id),
                UpdateExpression=update,
                ConditionExpression="#version = :v",
                ExpressionAttributeNames={"#version": "version"},
                ExpressionAttributeValues=values,
            )

    @aws.mapped
    def recent(self, *, channel: str, limit: int = 20, since: float | None = None) -> list[Run]:
        limit = max(1, min(limit, RECENT_LIMIT))
        # A query of the keys-only channel index (paged only past its 1 MB a page, some
        # thousands of keys), then BatchGetItem of those run records without their state,
        # 100 to a request: ``1 + ceil(n / 100)`` requests, whatever the size of the table.
        condition = "#channel = :channel"
        values: dict[str, Any] = {":channel": {"S": channel}}
        if since is not None:
            condition += " AND created_at >= :since"
            values[":since"] = items.wire(since)
        keys: list[dict[str, Any]] = []
        page: dict[str, Any] = {}
        while len(keys) < limit:
            got = self._ddb.query(
                TableName=self._table,
                IndexName=aws.CHANNEL_INDEX,
                KeyConditionExpression=condition,
                ExpressionAttributeNames={"#channel": "channel"},
                ExpressionAttributeValues=values,
                ScanIndexForward=False,
                Limit=limit - len(keys),
                **page,
            )
            keys += [{"pk": item["pk"], "sk": item["sk"]} for item in got.get("Items", [])]
            if "LastEvaluatedKey" not in got:
                break
            page = {"ExclusiveStartKey": got["LastEvaluatedKey"]}
        runs = self._inbox.read_runs(keys, consistent=False, what=f"listing {channel}")
        return sorted(runs, key=lambda r: r.created_at, reverse=True)

    @aws.mapped
    def started_by(self, user: str, *, limit: int = 20) -> list[Run]:
        return self._inbox.started_by(user, limit=limit)

    @aws.mapped
    def take_start(self, user: str, *, run_id: str, at: float, per_minute: int, open_limit: int) -> StartBook:
        return self._starts.take(user, run_id=run_id, at=at, per_minute=per_minute, open_limit=open_limit)

    @aws.mapped
    def forget_starts(self, user: str, *, run_ids: Sequence[str]) -> None:
        self._starts.forget(user, run_ids=run_ids)

    @aws.mapped
    def run_statuses(self, run_ids: Sequence[str]) -> dict[str, RunStatus]:
        return self._starts.statuses(run_ids)

    @aws.mapped
    def index_asks(self, run: Run) -> None:
        self._inbox.index(run)

    @aws.mapped
    def pending_for(self, principals: Sequence[str], *, limit: int = 50) -> list[tuple[Run, Ask]]:
        return self._inbox.pending(principals, limit=limit)

    @aws.mapped
    def saw_home(self, user: str, *, at: float) -> None:
        self._home.saw_home(user, at=at)

    @aws.mapped
    def home_viewers(self, *, since: float) -> dict[str, float]:
        return self._home.home_viewers(since=since)

    @aws.mapped
    def stuck(self, *, now: float, limit: int = 25) -> list[str]:
        # The GSI is eventually consistent: a sweeper may see a run late or already
        # handled; the engine re-reads and claims conditionally, so either is harmless.
        got = self._ddb.query(
            TableName=self._table,
            IndexName=aws.SWEEP_INDEX,
            KeyConditionExpression="sweep_pk = :sweep AND sweep_at <= :now",
            ExpressionAttributeValues={":sweep": {"S": items.SWEEP_PK}, ":now": items.wire(now)},
            ScanIndexForward=True,
            Limit=limit,
        )
        return [item["pk"]["S"].removeprefix("run#") for item in got.get("Items", [])]

    def _explain_invalid_path(self, exc: ClientError, run_id: str, ask_key: str) -> None:
        """Should DynamoDB check the update's path before its condition, name what is missing."""
        if "document path" not in str(exc):
            return
        stored = self.load(run_id, snapshot=False)
        if stored is None:
            raise RunNotFound(run_id) from exc
        if ask_key not in stored.asks:
            raise AskNotFound(f"{run_id}/{ask_key}") from exc

    # -- reads ---------------------------------------------------------------------

    def _inline(self, item: dict[str, Any]) -> Run:
        """The run in ``item`` with its state when the item holds it (no extra request)."""
        blob = item.get("state", {}).get("B")
        return items.run_from_item(item, snapshots.decode(bytes(blob)) if blob is not None else None)

    def _with_state(self, item: dict[str, Any]) -> Run:
        run = self._inline(item)
        ref = run.state_ref
        if run.snapshot is not None or ref is None or ref.get("kind") == "inline":
            return run
        return run.evolve(snapshot=snapshots.decode(self._offload.fetch(run.run_id, ref)))


class _Rejudge(Exception):
    """The decision's condition failed; carries the item as stored to judge it by the rules."""

    def __init__(self, item: dict[str, Any], run: Run) -> None:
        super().__init__("condition failed")
        self.item = item
        self.run = run


def _stored_item(exc: ClientError) -> dict[str, Any] | None:
    """The item as stored when a condition failed (``ReturnValuesOnConditionCheckFailure``)."""
    item = exc.response.get("Item")  # type: ignore[typeddict-item]
    return cast("dict[str, Any] | None", item)


def _condition_failed(exc: ClientError) -> bool:
    return exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException"


def _filled_before(run: Run, ask_key: str, decision: Decision, member_of: frozenset[str]) -> tuple[str, ...]:
    """The ``all_of`` entries before the one ``decision`` fills that the person is in: the
    rules count an approval for the first missing entry the person is in, so on ``run``
    (where ``decision`` was shaped) these are filled, and the write checks they still are."""
    ask = run.asks.get(ask_key)
    slot = decision.counts_for
    if ask is None or slot is None or slot not in ask.rules.all_of:
        return ()
    facts = {decision.user} | (member_of - {ALL_OF_LOOKED_UP})
    order = list(ask.rules.all_of)
    return tuple(entry for entry in order[: order.index(slot)] if entry in facts)
