"""Data access for conversation webhooks (C6), in the work table:

    WEBHOOK#<account>               COUNT                 n: how many subscriptions
    WEBHOOK#<account>               SUB#<webhook_id>      url, events, created_at, created_by
    WEBHOOK#<account>#<webhook_id>  DLV#<audit sort key>  event, conversation, message_id,
                                                          state, attempts, expires_ttl

A delivery item is claimed (put if absent) before its first attempt, so a stream batch that
Lambda retries sends an event once per subscription. Deliveries expire after
`limits.CONVERSATION_WEBHOOK_DELIVERY_SECONDS`.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentworks import limits
from agentworks.dynamo import (
    CLAIM_ATTRIBUTE,
    TTL_ATTRIBUTE,
    TransactionCancelled,
    from_item,
    live_item,
    put_claim,
    read_item,
    to_item,
    transact_write,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

PREFIX = "WEBHOOK#"


@dataclass
class Subscription:
    account_id: str
    webhook_id: str
    url: str
    events: list[str]
    created_at: int
    created_by: str


@dataclass
class Attempt:
    at: int
    status_code: int | None
    error: str | None


@dataclass
class DeliveryRecord:
    account_id: str
    webhook_id: str
    entry_key: str  # the audit entry's sort key
    event: str
    conversation: str
    message_id: str | None
    state: str  # sending, delivered, failed
    created_at: int
    attempts: list[Attempt] = field(default_factory=list)


def _account_pk(account_id: str) -> str:
    return f"{PREFIX}{account_id}"


def _deliveries_pk(account_id: str, webhook_id: str) -> str:
    return f"{PREFIX}{account_id}#{webhook_id}"


def _subscription_from(data: dict[str, Any]) -> Subscription:
    return Subscription(
        account_id=str(data["pk"]).removeprefix(PREFIX),
        webhook_id=str(data["sk"]).removeprefix("SUB#"),
        url=str(data["url"]),
        events=[str(e) for e in data.get("events") or []],
        created_at=int(data["created_at"]),
        created_by=str(data.get("created_by", "")),
    )


def _delivery_from(account_id: str, webhook_id: str, data: dict[str, Any]) -> DeliveryRecord:
    return DeliveryRecord(
        account_id=account_id,
        webhook_id=webhook_id,
        entry_key=str(data["sk"]).removeprefix("DLV#"),
        event=str(data["event"]),
        conversation=str(data["conversation"]),
        message_id=data.get("message_id"),
        state=str(data["state"]),
        created_at=int(data["created_at"]),
        attempts=[
            Attempt(int(a["at"]), a.get("status_code"), a.get("error"))
            for a in data.get("attempts") or []
        ],
    )


class SubscriptionStore:
    def __init__(self, client: DynamoDBClient, table: str) -> None:
        self._db = client
        self._table = table

    def create(self, sub: Subscription) -> bool:
        """Stores the subscription with the account's count; False at the bound."""
        try:
            transact_write(
                self._db,
                {
                    "count": {
                        "Update": {
                            "TableName": self._table,
                            "Key": to_item({"pk": _account_pk(sub.account_id), "sk": "COUNT"}),
                            "UpdateExpression": "ADD n :one",
                            "ConditionExpression": "attribute_not_exists(n) OR n < :max",
                            "ExpressionAttributeValues": to_item(
                                {":one": 1, ":max": limits.CONVERSATION_WEBHOOKS_MAX}
                            ),
                        }
                    },
                    "subscription": {
                        "Put": {
                            "TableName": self._table,
                            "Item": to_item(
                                {
                                    "pk": _account_pk(sub.account_id),
                                    "sk": f"SUB#{sub.webhook_id}",
                                    "url": sub.url,
                                    "events": sub.events,
                                    "created_at": sub.created_at,
                                    "created_by": sub.created_by,
                                }
                            ),
                            "ConditionExpression": "attribute_not_exists(pk)",
                        }
                    },
                },
            )
        except TransactionCancelled as cancelled:
            if cancelled.failed("count"):
                return False
            raise
        return True

    def of_account(self, account_id: str) -> list[Subscription]:
        response = self._db.query(
            TableName=self._table,
            KeyConditionExpression="pk = :pk AND begins_with(sk, :sub)",
            ExpressionAttributeValues=to_item({":pk": _account_pk(account_id), ":sub": "SUB#"}),
            Limit=limits.CONVERSATION_WEBHOOKS_MAX,
        )
        return [_subscription_from(from_item(raw) or {}) for raw in response["Items"]]

    def get(self, account_id: str, webhook_id: str) -> Subscription | None:
        data = read_item(
            self._db, self._table, {"pk": _account_pk(account_id), "sk": f"SUB#{webhook_id}"}
        )
        return _subscription_from(data) if data else None

    def delete(self, account_id: str, webhook_id: str) -> bool:
        """Removes it (and frees its place in the count); False when there was none."""
        try:
            transact_write(
                self._db,
                {
                    "subscription": {
                        "Delete": {
                            "TableName": self._table,
                            "Key": to_item(
                                {"pk": _account_pk(account_id), "sk": f"SUB#{webhook_id}"}
                            ),
                            "ConditionExpression": "attribute_exists(pk)",
                        }
                    },
                    "count": {
                        "Update": {
                            "TableName": self._table,
                            "Key": to_item({"pk": _account_pk(account_id), "sk": "COUNT"}),
                            "UpdateExpression": "ADD n :minus",
                            "ExpressionAttributeValues": to_item({":minus": -1}),
                        }
                    },
                },
            )
        except TransactionCancelled as cancelled:
            if cancelled.failed("subscription"):
                return False
            raise
        return True

    # ---- deliveries ----

    def claim(self, record: DeliveryRecord) -> bool:
        """The delivery's item, before its first attempt; False when another claim stored it
        (a retried stream batch: this event went to this subscription already)."""
        claimed, _ = put_claim(
            self._db,
            self._table,
            {
                CLAIM_ATTRIBUTE: uuid.uuid4().hex,
                "pk": _deliveries_pk(record.account_id, record.webhook_id),
                "sk": f"DLV#{record.entry_key}",
                "event": record.event,
                "conversation": record.conversation,
                "message_id": record.message_id,
                "state": "sending",
                "attempts": [],
                "created_at": record.created_at,
                TTL_ATTRIBUTE: record.created_at // 1000
                + limits.CONVERSATION_WEBHOOK_DELIVERY_SECONDS,
            },
            "attribute_not_exists(pk)",
        )
        return claimed

    def add_attempt(self, record: DeliveryRecord, attempt: Attempt, state: str) -> None:
        """One attempt (status or error, and when), and where the delivery stands now."""
        self._db.update_item(
            TableName=self._table,
            Key=to_item(
                {
                    "pk": _deliveries_pk(record.account_id, record.webhook_id),
                    "sk": f"DLV#{record.entry_key}",
                }
            ),
            UpdateExpression="SET attempts = list_append(attempts, :a), #state = :s",
            ExpressionAttributeNames={"#state": "state"},
            ExpressionAttributeValues=to_item(
                {
                    ":a": [
                        {
                            "at": attempt.at,
                            "status_code": attempt.status_code,
                            "error": attempt.error,
                        }
                    ],
                    ":s": state,
                }
            ),
        )

    def deliveries(
        self, account_id: str, webhook_id: str, limit: int, now_ms: int
    ) -> list[DeliveryRecord]:
        """The subscription's newest deliveries that have not expired: DynamoDB deletes an
        expired item up to two days after its TTL, and until then it is no longer kept."""
        response = self._db.query(
            TableName=self._table,
            KeyConditionExpression="pk = :pk AND begins_with(sk, :dlv)",
            ExpressionAttributeValues=to_item(
                {":pk": _deliveries_pk(account_id, webhook_id), ":dlv": "DLV#"}
            ),
            ScanIndexForward=False,
            Limit=limit,
        )
        found = (from_item(raw) or {} for raw in response["Items"])
        return [
            _delivery_from(account_id, webhook_id, data)
            for data in found
            if live_item(data, now_ms)
        ]
