"""Listeners of the push channel in the listeners table.

Two items per WebSocket connection: `SUB#<partition>` / `<ws_id>` (what the notifier
queries: every listener of a name, or of an unnamed inbox, in one partition) and
`WS#<ws_id>` / `WS` (what `$disconnect`, which knows only the connection id, finds).
Plain puts, not a transaction (half the write units): the WS item is written first and
removed last, so a crash between the two leaves at most a SUB item the notifier drops on
its first gone answer, or a WS item TTL removes. Both expire with the connection (API
Gateway closes it after 2 hours); reads treat an expired item as absent, since TTL
deletes up to two days late.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentworks import limits
from agentworks.dynamo import from_item, to_item
from agentworks.push.subjects import Follow

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


@dataclass(frozen=True)
class Listener:
    ws_id: str  # API Gateway's connectionId
    follow: Follow
    account_id: str
    connection_id: str  # the platform connection whose token opened it
    expires_at: int  # epoch seconds
    # When it connected (epoch seconds); None for one stored before it was kept: its expiry
    # less the lifetime a listener is given.
    opened_at: int | None = None

    def is_live(self, now: float) -> bool:
        return now < self.expires_at

    def connected_seconds(self, now: float) -> int:
        """How long its WebSocket was open (usage)."""
        lifetime = limits.PUSH_CONNECTION_SECONDS + limits.PUSH_LISTENER_TTL_MARGIN_SECONDS
        opened = self.opened_at if self.opened_at is not None else self.expires_at - lifetime
        return max(0, min(int(now - opened), limits.PUSH_CONNECTION_SECONDS))


def _subscription_key(partition: str, ws_id: str) -> dict[str, str]:
    return {"pk": f"SUB#{partition}", "sk": ws_id}


def _socket_key(ws_id: str) -> dict[str, str]:
    return {"pk": f"WS#{ws_id}", "sk": "WS"}


def _fields(listener: Listener) -> dict[str, Any]:
    return {
        "partition": listener.follow.partition,
        "scope": listener.follow.scope,
        "ws_id": listener.ws_id,
        "account_id": listener.account_id,
        "connection_id": listener.connection_id,
        "expires_ttl": listener.expires_at,
        "opened_at": listener.opened_at,
    }


def _listener(data: dict[str, Any]) -> Listener:
    return Listener(
        ws_id=str(data["ws_id"]),
        follow=Follow(str(data["partition"]), str(data["scope"])),
        account_id=str(data["account_id"]),
        connection_id=str(data["connection_id"]),
        expires_at=int(data["expires_ttl"]),
        opened_at=int(data["opened_at"]) if data.get("opened_at") is not None else None,
    )


class ListenerStore:
    def __init__(self, client: DynamoDBClient, table: str) -> None:
        self._db = client
        self._table = table

    def add(self, listener: Listener) -> None:
        subscription = _subscription_key(listener.follow.partition, listener.ws_id)
        for key in (_socket_key(listener.ws_id), subscription):
            self._db.put_item(TableName=self._table, Item=to_item(key | _fields(listener)))

    def remove(self, listener: Listener) -> bool:
        """Deletes both items; True for the one caller that deleted the WS item (a
        `$disconnect` and the notifier may both remove it: only one counts its minutes)."""
        subscription = _subscription_key(listener.follow.partition, listener.ws_id)
        self._db.delete_item(TableName=self._table, Key=to_item(subscription))
        removed = self._db.delete_item(
            TableName=self._table, Key=to_item(_socket_key(listener.ws_id)), ReturnValues="ALL_OLD"
        )
        return bool(removed.get("Attributes"))

    def get(self, ws_id: str, now: float) -> Listener | None:
        response = self._db.get_item(
            TableName=self._table, Key=to_item(_socket_key(ws_id)), ConsistentRead=True
        )
        data = from_item(response.get("Item"))
        if data is None:
            return None
        listener = _listener(data)
        return listener if listener.is_live(now) else None

    def of_partition(self, partition: str, now: float, limit: int) -> list[Listener]:
        """Up to `limit` live listeners of one partition (strongly consistent: one that
        finished connecting before a message was stored is never missed)."""
        query: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "pk = :pk",
            "FilterExpression": "expires_ttl > :now",
            "ExpressionAttributeValues": to_item({":pk": f"SUB#{partition}", ":now": int(now)}),
            "ConsistentRead": True,
        }
        found: list[Listener] = []
        while len(found) < limit:
            response = self._db.query(**query)
            found += [_listener(from_item(i) or {}) for i in response.get("Items", [])]
            if "LastEvaluatedKey" not in response:
                break
            query["ExclusiveStartKey"] = response["LastEvaluatedKey"]
        return found[:limit]
