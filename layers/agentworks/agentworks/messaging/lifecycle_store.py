"""Data access for inbox lifetime (M11): live-conversation counters, the idle indexes and
retired conversations kept for `expired` lookups.

A live conversation item carries `idle_account`/`idle_store` + `idle_key`
(`<activity hour>#<conversation>`), so the IdleByAccount / IdleByStore indexes list live
conversations oldest-activity first. Retiring one moves it to the Retired index
(`retired_store` + `retired_key`) and releases its counts, in one transaction.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from agentworks import limits
from agentworks.dynamo import (
    TransactionCancelled,
    condition_failed,
    from_item,
    to_item,
    transact_write,
)
from agentworks.messaging import keys

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

STORE = "ALL"
IDLE_BY_ACCOUNT = "IdleByAccount"
IDLE_BY_STORE = "IdleByStore"
RETIRED = "Retired"


def idle_key(activity_hour: int, conversation: str) -> str:
    return f"{activity_hour:08d}#{conversation}"


def live_attributes(account_id: str, activity_hour: int, conversation: str) -> dict[str, str]:
    return {
        "idle_account": account_id,
        "idle_store": STORE,
        "idle_key": idle_key(activity_hour, conversation),
    }


def admission_items(table: str, account_id: str) -> list[dict[str, Any]]:
    """Counts a new conversation against both caps; fails (per item) when one is full."""
    admit = "SET inboxes = if_not_exists(inboxes, :zero) + :one"
    condition = "attribute_not_exists(inboxes) OR inboxes < :cap"
    return [
        {
            "Update": {
                "TableName": table,
                "Key": to_item(key),
                "UpdateExpression": admit,
                "ConditionExpression": condition,
                "ExpressionAttributeValues": to_item({":zero": 0, ":one": 1, ":cap": cap}),
            }
        }
        for key, cap in (
            (keys.account_counters(account_id), limits.INBOXES_PER_INITIATING_ACCOUNT),
            (keys.server_counters(), limits.INBOXES_PER_STORE),
        )
    ]


class LifecycleStore:
    def __init__(self, client: DynamoDBClient, table: str) -> None:
        self._db = client
        self._table = table

    def oldest_live(
        self, account_id: str | None, before_key: str | None = None, limit: int = 1
    ) -> list[tuple[str, str]]:
        """(conversation, account) pairs of the least recently active live conversations,
        of one account or (account_id None) of the whole store."""
        index, pk_name, pk = (
            (IDLE_BY_ACCOUNT, "idle_account", account_id)
            if account_id is not None
            else (IDLE_BY_STORE, "idle_store", STORE)
        )
        condition = f"{pk_name} = :pk" + (" AND idle_key < :before" if before_key else "")
        values: dict[str, Any] = {":pk": pk}
        if before_key:
            values[":before"] = before_key
        response = self._db.query(
            TableName=self._table,
            IndexName=index,
            KeyConditionExpression=condition,
            ExpressionAttributeValues=to_item(values),
            Limit=limit,
        )
        found = []
        for raw in response.get("Items", []):
            data = from_item(raw) or {}
            found.append((data["pk"].removeprefix("CONV#"), data["idle_account"]))
        return found

    def newest_activity(self, conversation: str) -> int | None:
        """created_at of the conversation's newest message (its exact last activity)."""
        response = self._db.query(
            TableName=self._table,
            KeyConditionExpression="pk = :pk AND begins_with(sk, :prefix)",
            ExpressionAttributeValues=to_item(
                {":pk": keys.conversation(conversation)["pk"], ":prefix": keys.MESSAGE_PREFIX}
            ),
            ProjectionExpression="created_at",
            ScanIndexForward=False,
            Limit=1,
            ConsistentRead=True,
        )
        items = response.get("Items", [])
        return int((from_item(items[0]) or {})["created_at"]) if items else None

    def move_activity(self, conversation: str, activity_ms: int) -> None:
        """Repairs a conversation whose hourly activity update was lost (the send that
        should have moved it stopped after storing its message)."""
        hour = activity_ms // 3_600_000
        try:
            self._db.update_item(
                TableName=self._table,
                Key=to_item(keys.conversation(conversation)),
                UpdateExpression="SET activity_hour = :hour, idle_key = :idle, last_activity = :at",
                ConditionExpression="attribute_exists(idle_store) AND activity_hour < :hour",
                ExpressionAttributeValues=to_item(
                    {":hour": hour, ":idle": idle_key(hour, conversation), ":at": activity_ms}
                ),
            )
        except ClientError as error:
            if not condition_failed(error):
                raise

    def retire(self, conversation: str, account_id: str, now_ms: int) -> bool:
        """Ends a live conversation: readable as `expired` for 7 more days, counts released.
        False when it was already retired."""
        set_retired = (
            "SET evicted_at = :now, retired_store = :store, retired_key = :rkey, "
            f"{keys.TTL_ATTRIBUTE} = :ttl REMOVE idle_account, idle_store, idle_key"
        )
        release = "SET inboxes = inboxes - :one"
        items: dict[str, dict[str, Any]] = {
            "conversation": {
                "Update": {
                    "TableName": self._table,
                    "Key": to_item(keys.conversation(conversation)),
                    "UpdateExpression": set_retired,
                    "ConditionExpression": "attribute_exists(idle_store)",
                    "ExpressionAttributeValues": to_item(
                        {
                            ":now": now_ms,
                            ":store": STORE,
                            ":rkey": f"{now_ms:013d}#{conversation}",
                            ":ttl": now_ms // 1000 + limits.EXPIRED_LOOKUP_SECONDS,
                        }
                    ),
                }
            },
            **{
                name: {
                    "Update": {
                        "TableName": self._table,
                        "Key": to_item(key),
                        "UpdateExpression": release,
                        "ConditionExpression": "inboxes > :zero",
                        "ExpressionAttributeValues": to_item({":one": 1, ":zero": 0}),
                    }
                }
                for name, key in (
                    ("account_count", keys.account_counters(account_id)),
                    ("store_count", keys.server_counters()),
                )
            },
        }
        try:
            transact_write(self._db, items)
        except TransactionCancelled:
            # Retired already (or a counter is at zero): conflicts were retried, not here.
            return False
        return True

    def retired_count(self) -> int:
        total, kwargs = 0, self._retired_query(select_count=True)
        while True:
            page = self._db.query(**kwargs)
            total += int(page.get("Count", 0))
            if "LastEvaluatedKey" not in page:
                return total
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def oldest_retired(self, limit: int) -> list[str]:
        response = self._db.query(**self._retired_query(select_count=False), Limit=limit)
        return [(from_item(i) or {})["pk"].removeprefix("CONV#") for i in response["Items"]]

    def forget(self, conversation: str) -> None:
        """Drops a retired conversation's metadata: lookups now answer `unavailable`."""
        self._db.delete_item(
            TableName=self._table,
            Key=to_item(keys.conversation(conversation)),
            ConditionExpression="attribute_exists(retired_store)",
        )

    def _retired_query(self, select_count: bool) -> dict[str, Any]:
        query: dict[str, Any] = {
            "TableName": self._table,
            "IndexName": RETIRED,
            "KeyConditionExpression": "retired_store = :store",
            "ExpressionAttributeValues": to_item({":store": STORE}),
        }
        if select_count:
            query["Select"] = "COUNT"
        return query
