"""Data access for what happens to messages in a Crew's conversations (M8–M10), in the work
table:

    CREWCONV#<conversation>   MSG#<seq:010d>     delivery record of message <seq> to the Crew:
                                                 state (pending_review, running, succeeded,
                                                 failed, interrupted, declined), run_id, error
    CREWCONV#<conversation>   WAKE#<ulid>        a wakeup (wakeup_store.py, whose methods
                                                 this class has)
    CREWCONV#<conversation>   ASKBACK#<seq:010d> a request the Crew's run <run_id> sent back
                                                 in this conversation and waits on (C3)
    ACCOUNT#<account>         SCHEDULER          the account's scheduler pause

Bodies are never stored here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from agentworks import limits
from agentworks.audit.audit_store import write_entry
from agentworks.audit.entries import Actor, AuditEntry, audit_put
from agentworks.conversations.delivery_audit import delivery_entry, sender_of
from agentworks.conversations.delivery_items import (
    Delivery,
    closed_updates,
    conversation_pk,
    deadline_index,
    delivery_from,
    delivery_item,
    delivery_key,
)
from agentworks.conversations.wakeup_queue_store import WakeupQueueStore
from agentworks.conversations.wakeup_store import Wakeup, WakeupRecords, wakeup_key
from agentworks.dynamo import (
    TTL_ATTRIBUTE,
    TransactionCancelled,
    condition_failed,
    from_item,
    live_item,
    read_item,
    to_item,
    transact_write,
)
from agentworks.ids import parse_wakeup_id

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = ["CrewInboxStore", "Delivery", "Wakeup", "parse_wakeup_id", "wakeup_key"]


class CrewInboxStore(WakeupRecords):
    def __init__(self, client: DynamoDBClient, table: str) -> None:
        self._db = client
        self._table = table
        # The wakeup queue (due index, per-account markers, the scheduler pause) shares
        # this table; its store is built once, here.
        self.queue = WakeupQueueStore(client, table)

    # ---- delivery records ----

    def open_delivery(self, delivery: Delivery, run_put: dict[str, Any] | None) -> bool:
        """Records a message to a Crew once (with its run's record, when it starts one, and
        the audit entry of the state it starts in, C6). False when this message was recorded
        before (a replayed send)."""
        entry = delivery_entry(delivery, delivery.state, sender_of(delivery))
        put = {
            "Put": {
                "TableName": self._table,
                "Item": to_item(delivery_item(delivery)),
                "ConditionExpression": "attribute_not_exists(pk)",
            }
        }
        try:
            if run_put is None:
                self._db.put_item(**put["Put"])  # type: ignore[arg-type]
                self.audit(entry, delivery.updated_at)
            else:
                audit = audit_put(self._table, entry, delivery.updated_at)
                transact_write(self._db, {"delivery": put, "run": run_put, "audit": audit})
        except ClientError as error:
            if condition_failed(error):
                return False
            raise
        except TransactionCancelled as cancelled:
            if cancelled.failed("delivery"):
                return False
            raise
        return True

    def get_delivery(self, conversation: str, seq: int) -> Delivery | None:
        data = read_item(self._db, self._table, delivery_key(conversation, seq))
        return delivery_from(data) if data else None

    def release(
        self,
        delivery: Delivery,
        run_id: str,
        run_put: dict[str, Any],
        now: int,
        from_state: str = "pending_review",
        actor: Actor | None = None,
    ) -> bool:
        """pending_review (or `from_state`: received, when a paused conversation resumes
        or the tick starts a request a Crew's run sent) → running, with the run's record
        and the audit entry (`actor` released it, or resumed the conversation; else the
        platform); False when it is not in that state. A request goes (back) under its
        deadline."""
        released = from_state == "pending_review" and actor is not None
        entry = delivery_entry(delivery, "running", actor, "released" if released else None)
        index = deadline_index(delivery) if delivery.is_request else {}
        update = "SET #state = :running, run_id = :run, updated_at = :now"
        values: dict[str, Any] = {
            ":running": "running",
            ":run": run_id,
            ":now": now,
            ":pending": from_state,
            ":crew": delivery.crew_id,
        }
        if index:
            update += ", open_store = :store, open_check = :check"
            values |= {":store": index["open_store"], ":check": index["open_check"]}
        elif from_state == "received":
            update += " REMOVE open_store, open_check"
        try:
            transact_write(
                self._db,
                {
                    "delivery": {
                        "Update": {
                            "TableName": self._table,
                            "Key": to_item(delivery_key(delivery.conversation, delivery.seq)),
                            "UpdateExpression": update,
                            "ConditionExpression": "#state = :pending AND crew_id = :crew",
                            "ExpressionAttributeNames": {"#state": "state"},
                            "ExpressionAttributeValues": to_item(values),
                        }
                    },
                    "run": run_put,
                    "audit": audit_put(self._table, entry, now),
                },
            )
        except TransactionCancelled as cancelled:
            if cancelled.failed("delivery"):
                return False
            raise
        return True

    def decline(
        self, delivery: Delivery, reason: str | None, now: int, actor: Actor | None = None
    ) -> bool:
        """pending_review → declined (and its audit entry: `actor` declined it); False
        when it is not pending."""
        detail = f"with a reason ({len(reason)} characters)" if reason else None
        entry = delivery_entry(delivery, "declined", actor, "declined", detail)
        return self._move(
            delivery_key(delivery.conversation, delivery.seq),
            f"SET #state = :declined, #error = :reason, updated_at = :now {closed_updates}",
            "#state = :pending AND crew_id = :crew",
            {
                ":declined": "declined",
                ":reason": reason or "declined by a person",
                ":now": now,
                ":pending": "pending_review",
                ":crew": delivery.crew_id,
            },
            audit=entry,
        )

    def set_delivery_outcome(
        self, conversation: str, seq: int, run_id: str, state: str, error: str | None, now: int
    ) -> None:
        """The run's state on the message's record (only the run it names may set it, and
        not over a request that expired or was cancelled meanwhile), audited as the run's
        doing (a repeated report of the same state writes no second entry)."""
        self._move(
            delivery_key(conversation, seq),
            f"SET #state = :state, #error = :error, updated_at = :now {closed_updates}",
            "run_id = :run AND NOT #state IN (:expired, :cancelled)",
            {
                ":state": state,
                ":error": error or "",
                ":now": now,
                ":run": run_id,
                ":expired": "expired",
                ":cancelled": "cancelled",
            },
            audit_outcome=(run_id, state),
        )

    def received(self, conversation: str) -> list[Delivery]:
        """Deliveries a paused conversation held back (C4), oldest first."""
        response = self._db.query(
            TableName=self._table,
            KeyConditionExpression="pk = :pk AND begins_with(sk, :msg)",
            FilterExpression="#state = :received",
            ExpressionAttributeNames={"#state": "state"},
            ExpressionAttributeValues=to_item(
                {":pk": conversation_pk(conversation), ":msg": "MSG#", ":received": "received"}
            ),
            ConsistentRead=True,
        )
        return [delivery_from(from_item(raw) or {}) for raw in response["Items"]]

    def hold_for_review(self, delivery: Delivery, now: int, actor: Actor | None = None) -> bool:
        """received → pending_review (a Crew that reviews first); a request goes (back)
        under its deadline."""
        index = deadline_index(delivery) if delivery.is_request else {}
        values: dict[str, Any] = {
            ":pending": "pending_review",
            ":now": now,
            ":received": "received",
        }
        update = "SET #state = :pending, updated_at = :now"
        if index:
            update += ", open_store = :store, open_check = :check"
            values |= {":store": index["open_store"], ":check": index["open_check"]}
        else:
            update += " REMOVE open_store, open_check"
        key = delivery_key(delivery.conversation, delivery.seq)
        entry = delivery_entry(delivery, "pending_review", actor)
        return self._move(key, update, "#state = :received", values, audit=entry)

    def recent_deliveries(self, conversation: str, limit: int, now_ms: int) -> list[Delivery]:
        """The newest delivery records still kept: one past its TTL is not, though
        DynamoDB may hold it up to two days more."""
        newest = self._newest(conversation, "MSG#", limit)
        return [delivery_from(d) for d in newest if live_item(d, now_ms)]

    # ---- the scheduler pause ----

    # ---- helpers ----

    # ---- C3: requests a run sent back in its own conversation ----

    def put_ask_back(
        self, conversation: str, seq: int, run_id: str, request_id: str, deadline_ms: int
    ) -> None:
        """Marks request `seq` as one the run `run_id` waits on; kept past its deadline."""
        self._db.put_item(
            TableName=self._table,
            Item=to_item(
                {
                    "pk": conversation_pk(conversation),
                    "sk": f"ASKBACK#{seq:010d}",
                    "run_id": run_id,
                    "request_id": request_id,
                    TTL_ATTRIBUTE: deadline_ms // 1000 + limits.DAY_SECONDS,
                }
            ),
        )

    def ask_back(self, conversation: str, seq: int) -> tuple[str, str] | None:
        """(run_id, request_id) of the run waiting on request `seq`, if one asked it."""
        data = read_item(
            self._db,
            self._table,
            {"pk": conversation_pk(conversation), "sk": f"ASKBACK#{seq:010d}"},
        )
        return (str(data["run_id"]), str(data["request_id"])) if data else None

    def audit(self, entry: AuditEntry, now: int) -> None:
        """An audit entry (C6) of a change that already succeeded."""
        write_entry(self._db, self._table, entry, now)

    def _move(
        self,
        key: dict[str, str],
        update: str,
        condition: str,
        values: dict[str, Any],
        audit: AuditEntry | None = None,
        audit_outcome: tuple[str, str] | None = None,
    ) -> bool:
        """One conditional update; then `audit` (or, for `audit_outcome` = (run, state),
        the entry built from the record as it was), right after it succeeded."""
        names = {n: n[1:] for n in ("#state", "#error") if n in update or n in condition}
        request: dict[str, Any] = {
            "TableName": self._table,
            "Key": to_item(key),
            "UpdateExpression": update,
            "ConditionExpression": condition,
            "ExpressionAttributeValues": to_item(values),
        }
        if names:
            request["ExpressionAttributeNames"] = names
        if audit_outcome is not None:
            request["ReturnValues"] = "ALL_OLD"
        try:
            response = self._db.update_item(**request)
        except ClientError as error:
            if condition_failed(error):
                return False
            raise
        now = int(values.get(":now", 0))
        if audit is not None:
            self.audit(audit, now)
        if audit_outcome is not None:
            old = from_item(response.get("Attributes"))
            run_id, state = audit_outcome
            if old and old.get("state") != state:
                before = delivery_from(old)
                by = Actor.run(run_id, before.connection_id)
                self.audit(delivery_entry(before, state, by), now)
        return True

    def _newest(self, conversation: str, prefix: str, limit: int) -> list[dict[str, Any]]:
        response = self._db.query(
            TableName=self._table,
            KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
            ExpressionAttributeValues=to_item(
                {":pk": conversation_pk(conversation), ":prefix": prefix}
            ),
            ScanIndexForward=False,
            Limit=limit,
            ConsistentRead=True,
        )
        return [from_item(i) or {} for i in response["Items"]]
