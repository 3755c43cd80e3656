"""Data access for a Crew's wakeups (M9), in the work table:

    CREWCONV#<conversation>   WAKE#<ulid>        a wakeup: due_at, state (scheduled, firing,
                                                 fired, cancelled, interrupted), run_id

A scheduled wakeup is in its account's partition of the sparse DueWakeups index, oldest
first; a claimed one moves to the FIRING partition until it is recorded fired or
interrupted, when it leaves the index (wakeup_queue_store.py has the index and the pause).
`WakeupRecords` is the wakeup half of `CrewInboxStore` (crew_inbox_store.py), whose table,
client and conditional-update helper these methods use.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from botocore.exceptions import ClientError

from agentworks import limits
from agentworks.audit.entries import AuditEntry
from agentworks.conversations.delivery_items import conversation_pk
from agentworks.conversations.wakeup_queue_store import (
    FIRING,
    account_store,
    due_key,
    marker_touch,
)
from agentworks.dynamo import (
    TTL_ATTRIBUTE,
    TransactionCancelled,
    condition_failed,
    from_item,
    retry_later,
    to_item,
    transact_write,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def wakeup_key(conversation: str, wake: str) -> dict[str, str]:
    return {"pk": conversation_pk(conversation), "sk": f"WAKE#{wake}"}


@dataclass
class Wakeup:
    wakeup_id: str
    conversation: str
    wake: str  # the ulid part of the id (the sort key)
    account_id: str
    crew_id: str
    crew_name: str
    inbox_id: str  # the side that scheduled it
    crew_inbox_id: str  # the Crew's side, where the run's answer goes out from
    agent_name: str | None
    connection_id: str
    due_at: int  # ms
    state: str
    created_at: int
    updated_at: int
    run_id: str | None = None
    run_state: str | None = None
    error: str | None = None
    expires_at: int | None = None  # s; DynamoDB may keep the item up to ~48 h past it

    def is_expired(self, now_ms: int) -> bool:
        """Past its TTL: absent, whether or not DynamoDB has deleted it yet."""
        return self.expires_at is not None and self.expires_at <= now_ms // 1000


def _wakeup_ttl(due_ms: int) -> int:
    # Kept a week past its due time, so its state still answers after it fired.
    return due_ms // 1000 + limits.WAKEUP_MAX_SECONDS


def _wakeup_item(w: Wakeup) -> dict[str, Any]:
    item = {
        **wakeup_key(w.conversation, w.wake),
        "wakeup_id": w.wakeup_id,
        "account_id": w.account_id,
        "crew_id": w.crew_id,
        "crew_name": w.crew_name,
        "inbox_id": w.inbox_id,
        "crew_inbox_id": w.crew_inbox_id,
        "agent_name": w.agent_name,
        "connection_id": w.connection_id,
        "due_at": w.due_at,
        "state": w.state,
        "created_at": w.created_at,
        "updated_at": w.updated_at,
        "run_id": w.run_id,
        "run_state": w.run_state,
        "error": w.error,
        TTL_ATTRIBUTE: _wakeup_ttl(w.due_at),
    }
    if w.state == "scheduled":
        item |= {
            "wake_store": account_store(w.account_id),
            "wake_due": due_key(w.due_at, w.wakeup_id),
        }
    return item


def _wakeup_from(data: dict[str, Any]) -> Wakeup:
    return Wakeup(
        wakeup_id=data["wakeup_id"],
        conversation=data["pk"].removeprefix("CREWCONV#"),
        wake=data["sk"].removeprefix("WAKE#"),
        account_id=data["account_id"],
        crew_id=data["crew_id"],
        crew_name=data["crew_name"],
        inbox_id=data["inbox_id"],
        crew_inbox_id=data["crew_inbox_id"],
        agent_name=data.get("agent_name"),
        connection_id=data["connection_id"],
        due_at=int(data["due_at"]),
        state=data["state"],
        created_at=int(data["created_at"]),
        updated_at=int(data["updated_at"]),
        run_id=data.get("run_id") or None,
        run_state=data.get("run_state") or None,
        error=data.get("error") or None,
        expires_at=int(data[TTL_ATTRIBUTE]) if TTL_ATTRIBUTE in data else None,
    )


class WakeupRecords:
    """The wakeup methods of `CrewInboxStore`."""

    _db: DynamoDBClient
    _table: str

    def _move(
        self,
        key: dict[str, str],
        update: str,
        condition: str,
        values: dict[str, Any],
        audit: AuditEntry | None = None,
        audit_outcome: tuple[str, str] | None = None,
    ) -> bool:
        raise NotImplementedError  # CrewInboxStore's

    def _newest(self, conversation: str, prefix: str, limit: int) -> list[dict[str, Any]]:
        raise NotImplementedError  # CrewInboxStore's

    def put_wakeup(self, wakeup: Wakeup) -> None:
        """Stores a scheduled wakeup and, in the same transaction, tells the tick to look at
        its account (so no wakeup is ever in the index unseen)."""
        transact_write(
            self._db,
            {
                "wakeup": {
                    "Put": {
                        "TableName": self._table,
                        "Item": to_item(_wakeup_item(wakeup)),
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                },
                "marker": marker_touch(self._table, wakeup.account_id, wakeup.created_at),
            },
        )

    def get_wakeup(self, conversation: str, wake: str) -> Wakeup | None:
        response = self._db.get_item(
            TableName=self._table, Key=to_item(wakeup_key(conversation, wake)), ConsistentRead=True
        )
        data = from_item(response.get("Item"))
        return _wakeup_from(data) if data else None

    def reschedule(self, wakeup: Wakeup, due_at: int, now: int) -> bool:
        """Moves a scheduled wakeup (maybe earlier: the tick looks at its account again, in
        the same transaction); False when it is no longer scheduled."""
        move = {
            "Update": {
                "TableName": self._table,
                "Key": to_item(wakeup_key(wakeup.conversation, wakeup.wake)),
                "UpdateExpression": "SET due_at = :due, wake_due = :key, updated_at = :now, "
                f"{TTL_ATTRIBUTE} = :ttl",
                "ConditionExpression": "#state = :scheduled",
                "ExpressionAttributeNames": {"#state": "state"},
                "ExpressionAttributeValues": to_item(
                    {
                        ":due": due_at,
                        ":key": due_key(due_at, wakeup.wakeup_id),
                        ":now": now,
                        ":ttl": _wakeup_ttl(due_at),
                        ":scheduled": "scheduled",
                    }
                ),
            }
        }
        try:
            transact_write(
                self._db,
                {"wakeup": move, "marker": marker_touch(self._table, wakeup.account_id, now)},
            )
        except TransactionCancelled as cancelled:
            if cancelled.failed("wakeup"):
                return False
            raise
        return True

    def cancel(self, wakeup: Wakeup, now: int) -> bool:
        """scheduled → cancelled (out of the due index); False when not scheduled."""
        return self._move(
            wakeup_key(wakeup.conversation, wakeup.wake),
            "SET #state = :cancelled, updated_at = :now REMOVE wake_store, wake_due",
            "#state = :scheduled",
            {":cancelled": "cancelled", ":now": now, ":scheduled": "scheduled"},
        )

    def claim(self, conversation: str, wake: str, now: int, run_id: str) -> Wakeup | None:
        """scheduled and due → firing, naming the run it is about to start (at most one tick
        wins); None when another tick got it, or it was cancelled or rescheduled meanwhile.

        A wakeup past its TTL is absent even while DynamoDB still holds it: it never fires,
        and leaves the due index. Throttling that outlasts the retries is `TryAgain`."""
        key = wakeup_key(conversation, wake)
        try:
            response = self._db.update_item(
                TableName=self._table,
                Key=to_item(key),
                UpdateExpression="SET #state = :firing, wake_store = :firing_store, "
                "wake_due = :claimed, run_id = :run, updated_at = :now",
                ConditionExpression="#state = :scheduled AND due_at <= :now "
                f"AND (attribute_not_exists({TTL_ATTRIBUTE}) OR {TTL_ATTRIBUTE} > :now_s)",
                ExpressionAttributeNames={"#state": "state"},
                ExpressionAttributeValues=to_item(
                    {
                        ":firing": "firing",
                        ":firing_store": FIRING,
                        ":claimed": due_key(now, f"wku_{conversation}{wake}"),
                        ":run": run_id,
                        ":now": now,
                        ":now_s": now // 1000,
                        ":scheduled": "scheduled",
                    }
                ),
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as error:
            transient = retry_later(error)
            if transient is not None:
                raise transient from None
            if not condition_failed(error):
                raise
            old = from_item(cast(dict[str, Any], error.response).get("Item"))
            if old and old.get("state") == "firing" and old.get("run_id") == run_id:
                # This very claim committed and its answer was lost (botocore sent it
                # again): it is ours, so the wakeup still fires.
                return _wakeup_from(old)
            if old and old.get("state") == "scheduled" and _wakeup_from(old).is_expired(now):
                self._move(
                    key,
                    "SET #state = :expired, updated_at = :now REMOVE wake_store, wake_due",
                    "#state = :scheduled",
                    {":expired": "expired", ":now": now, ":scheduled": "scheduled"},
                )
            return None
        return _wakeup_from(from_item(response.get("Attributes")) or {})

    def settle(
        self, wakeup: Wakeup, state: str, run_id: str | None, error: str | None, now: int
    ) -> bool:
        """firing → fired (with its run) or interrupted; the wakeup leaves the index. False
        when it was settled already."""
        return self._move(
            wakeup_key(wakeup.conversation, wakeup.wake),
            "SET #state = :state, run_id = :run, #error = :error, updated_at = :now "
            "REMOVE wake_store, wake_due",
            "#state = :firing",
            {
                ":state": state,
                ":run": run_id or "",
                ":error": error or "",
                ":now": now,
                ":firing": "firing",
            },
        )

    def set_wakeup_run_state(
        self, conversation: str, wake: str, run_id: str, state: str, error: str | None, now: int
    ) -> None:
        self._move(
            wakeup_key(conversation, wake),
            "SET run_state = :state, #error = :error, updated_at = :now",
            "run_id = :run",
            {":state": state, ":error": error or "", ":now": now, ":run": run_id},
        )

    def recent_wakeups(self, conversation: str, limit: int) -> list[Wakeup]:
        return [_wakeup_from(d) for d in self._newest(conversation, "WAKE#", limit)]
