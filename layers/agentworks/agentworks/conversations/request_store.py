"""Data access for requests in a Crew's conversations (C1, C2): the delivery records with
kind `request` (delivery_items.py has their shape and their deadline index)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from agentworks.audit.audit_store import write_entry
from agentworks.audit.entries import Action, Actor
from agentworks.conversations.delivery_audit import delivery_entry
from agentworks.conversations.delivery_items import (
    DEADLINES,
    OPEN_STATES,
    STARTS,
    Delivery,
    closed_updates,
    conversation_pk,
    delivery_from,
    delivery_key,
    parse_deadline_key,
)
from agentworks.crews.open_call_store import OPEN_CALLS
from agentworks.dynamo import condition_failed, from_item, read_item, to_item

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


# Cancelled and expired are actions of their own; any other close (a person's answer) is
# audited as the state it reached.
_CLOSE_ACTIONS: dict[str, Action] = {
    "cancelled": "cancelled",
    "expired": "expired",
    "declined": "declined",
}


class RequestStore:
    def __init__(self, client: DynamoDBClient, table: str) -> None:
        self._db = client
        self._table = table

    def past_deadline(self, now: int, limit: int) -> list[tuple[str, int]]:
        """(conversation, seq) of open requests whose deadline is `now` or earlier, oldest
        deadline first."""
        response = self._db.query(
            TableName=self._table,
            IndexName=OPEN_CALLS,
            KeyConditionExpression="open_store = :due AND open_check <= :now",
            ExpressionAttributeValues=to_item({":due": DEADLINES, ":now": f"{now:013d}#~"}),
            Limit=limit,
        )
        keys = [from_item(raw) or {} for raw in response["Items"]]
        return [parse_deadline_key(str(k["open_check"])) for k in keys if "open_check" in k]

    def waiting_to_start(self, limit: int) -> list[tuple[str, int]]:
        """(conversation, seq) of requests Crews' runs sent, oldest first (C3)."""
        response = self._db.query(
            TableName=self._table,
            IndexName=OPEN_CALLS,
            KeyConditionExpression="open_store = :start",
            ExpressionAttributeValues=to_item({":start": STARTS}),
            Limit=limit,
        )
        keys = [from_item(raw) or {} for raw in response["Items"]]
        return [parse_deadline_key(str(k["open_check"])) for k in keys if "open_check" in k]

    def close(
        self,
        conversation: str,
        seq: int,
        state: str,
        reason: str,
        now: int,
        actor: Actor | None = None,
    ) -> Delivery | None:
        """An open request → `state` (expired or cancelled), once: the record as it was
        before, or None when it is not an open request any more. Its audit entry (C6: `actor`
        did it, else the platform) is written right after."""
        try:
            response = self._db.update_item(
                TableName=self._table,
                Key=to_item(delivery_key(conversation, seq)),
                UpdateExpression=f"SET #state = :state, #error = :reason, updated_at = :now "
                f"{closed_updates}",
                ConditionExpression="kind = :request AND #state IN (:s0, :s1, :s2)",
                ExpressionAttributeNames={"#state": "state", "#error": "error"},
                ExpressionAttributeValues=to_item(
                    {
                        ":state": state,
                        ":reason": reason,
                        ":now": now,
                        ":request": "request",
                        **{f":s{i}": s for i, s in enumerate(OPEN_STATES)},
                    }
                ),
                ReturnValues="ALL_OLD",
            )
        except ClientError as error:
            if condition_failed(error):
                return None
            raise
        data = from_item(response.get("Attributes"))
        if not data:
            return None
        before = delivery_from(data)
        entry = delivery_entry(before, state, actor, _CLOSE_ACTIONS.get(state))
        write_entry(self._db, self._table, entry, now)
        return before

    def of_conversation(self, conversation: str, limit: int) -> list[Delivery]:
        """The conversation's newest requests (its other delivery records left out)."""
        query: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :msg)",
            "FilterExpression": "kind = :request",
            "ExpressionAttributeValues": to_item(
                {":pk": conversation_pk(conversation), ":msg": "MSG#", ":request": "request"}
            ),
            "ScanIndexForward": False,
            "ConsistentRead": True,
        }
        found: list[Delivery] = []
        while len(found) < limit:
            page = self._db.query(**query)
            found += [delivery_from(from_item(raw) or {}) for raw in page["Items"]]
            if "LastEvaluatedKey" not in page:
                break
            query["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        return found[:limit]

    def of_message(self, conversation: str, seq: int) -> Delivery | None:
        data = read_item(self._db, self._table, delivery_key(conversation, seq))
        return delivery_from(data) if data else None
