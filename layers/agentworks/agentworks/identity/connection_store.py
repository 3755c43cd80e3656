"""Data access for accounts and connections in the identity table.

Keys:  pk = ACCOUNT#<account_id>
       sk = ACCOUNT            the account itself
       sk = CONN#<connection_id>   one connection (hash of its secret, scopes, bounds, and
                                   `acting_as`: the names whose allow-list holds it)
All reads of a connection are strongly consistent so a revocation counts at once (A3).

`acting_as` is a map {name: {id, display, seen}}: entries are added and removed only by the
transactions that change a name's allow-list (messaging/agent_store.py builds them with
the helpers below), so the authorizer's one read answers "may this connection act as
NAME" (M5); `seen` is the connection's last presence refresh as that name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from agentworks.dynamo import error_code, from_item, to_item
from agentworks.identity.models import Connection, Consent

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def _account_pk(account_id: str) -> str:
    return f"ACCOUNT#{account_id}"


def connection_key(account_id: str, connection_id: str) -> dict[str, str]:
    return {"pk": _account_pk(account_id), "sk": f"CONN#{connection_id}"}


def _consent_map(consent: Consent) -> dict[str, Any]:
    entry: dict[str, Any] = {"id": consent.agent_id, "display": consent.display_name}
    if consent.seen_at is not None:
        entry["seen"] = consent.seen_at
    return entry


def grant_consent_item(
    table: str, account_id: str, connection_id: str, name: str, consent: Consent
) -> dict[str, Any]:
    """A TransactWriteItems entry: `connection_id` may act as `name` (that identity)."""
    return {
        "Update": {
            "TableName": table,
            "Key": to_item(connection_key(account_id, connection_id)),
            "UpdateExpression": "SET acting_as.#name = :consent",
            "ConditionExpression": "attribute_exists(acting_as)",
            "ExpressionAttributeNames": {"#name": name},
            "ExpressionAttributeValues": to_item({":consent": _consent_map(consent)}),
        }
    }


def revoke_consent_item(
    table: str, account_id: str, connection_id: str, name: str
) -> dict[str, Any]:
    """A TransactWriteItems entry: `connection_id` no longer acts as `name`."""
    return {
        "Update": {
            "TableName": table,
            "Key": to_item(connection_key(account_id, connection_id)),
            "UpdateExpression": "REMOVE acting_as.#name",
            # Never create a stray item for a connection that does not exist.
            "ConditionExpression": "attribute_exists(acting_as)",
            "ExpressionAttributeNames": {"#name": name},
        }
    }


def seen_consent_item(
    table: str, account_id: str, connection_id: str, name: str, agent_id: str, now_ms: int
) -> dict[str, Any]:
    """An Update (entry or UpdateItem parameters): remembers when this connection last
    marked `name` present, so the next refresh waits a minute without any read."""
    return {
        "Update": {
            "TableName": table,
            "Key": to_item(connection_key(account_id, connection_id)),
            "UpdateExpression": "SET acting_as.#name.seen = :now",
            "ConditionExpression": "acting_as.#name.id = :id",
            "ExpressionAttributeNames": {"#name": name},
            "ExpressionAttributeValues": to_item({":now": now_ms, ":id": agent_id}),
        }
    }


def connection_from_item(data: dict[str, Any]) -> Connection:
    bounds = data.get("target_bounds")
    consents = {
        str(name): Consent.from_map(entry, str(name))
        for name, entry in (data.get("acting_as") or {}).items()
    }
    return Connection(
        account_id=data["account_id"],
        connection_id=data["connection_id"],
        name=data["name"],
        scopes=tuple(data.get("scopes", [])),
        secret_hash=data["secret_hash"],
        created_at=int(data["created_at"]),
        target_bounds=tuple(bounds) if bounds is not None else None,
        expires_at=data.get("expires_at"),
        revoked_at=data.get("revoked_at"),
        created_by=data.get("created_by"),
        consents=consents,
    )


class ConnectionStore:
    def __init__(self, client: DynamoDBClient, table: str) -> None:
        self._db = client
        self._table = table

    def put_account(self, account_id: str, name: str, created_at: int) -> None:
        self._db.put_item(
            TableName=self._table,
            Item=to_item(
                {
                    "pk": _account_pk(account_id),
                    "sk": "ACCOUNT",
                    "account_id": account_id,
                    "name": name,
                    "created_at": created_at,
                }
            ),
            ConditionExpression="attribute_not_exists(pk)",
        )

    def put_connection(self, connection: Connection) -> None:
        item = {
            "pk": _account_pk(connection.account_id),
            "sk": f"CONN#{connection.connection_id}",
            "account_id": connection.account_id,
            "connection_id": connection.connection_id,
            "name": connection.name,
            "scopes": list(connection.scopes),
            "secret_hash": connection.secret_hash,
            "created_at": connection.created_at,
            "target_bounds": list(connection.target_bounds)
            if connection.target_bounds is not None
            else None,
            "expires_at": connection.expires_at,
            "created_by": connection.created_by,
            # Filled by registrations that allow this connection (M5); must exist so their
            # transactions can set one entry.
            "acting_as": {},
        }
        self._db.put_item(
            TableName=self._table,
            Item=to_item(item),
            ConditionExpression="attribute_not_exists(pk)",
        )

    def get_connection(self, account_id: str, connection_id: str) -> Connection | None:
        response = self._db.get_item(
            TableName=self._table,
            Key=to_item(connection_key(account_id, connection_id)),
            ConsistentRead=True,
        )
        data = from_item(response.get("Item"))
        return connection_from_item(data) if data else None

    def list_connections(self, account_id: str) -> list[Connection]:
        connections: list[Connection] = []
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
            "ExpressionAttributeValues": to_item(
                {":pk": _account_pk(account_id), ":prefix": "CONN#"}
            ),
        }
        while True:
            page = self._db.query(**kwargs)
            connections.extend(
                connection_from_item(from_item(i) or {}) for i in page.get("Items", [])
            )
            if "LastEvaluatedKey" not in page:
                return connections
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def revoke(self, account_id: str, connection_id: str, at: int) -> bool:
        """Marks a connection revoked; False when it does not exist in this account."""
        try:
            self._db.update_item(
                TableName=self._table,
                Key=to_item(connection_key(account_id, connection_id)),
                UpdateExpression="SET revoked_at = if_not_exists(revoked_at, :at)",
                ConditionExpression="attribute_exists(pk)",
                ExpressionAttributeValues=to_item({":at": at}),
            )
        except ClientError as error:
            if error_code(error) == "ConditionalCheckFailedException":
                return False
            raise
        return True
