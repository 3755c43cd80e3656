"""Data access for accounts and connections in the identity table.

Keys:  pk = ACCOUNT#<account_id>
       sk = ACCOUNT            the account itself; `live_connections` counts the connections
                               not yet revoked (expired ones count until revoked), changed
                               only in the transaction that creates or revokes one, so the
                               account limit holds under concurrent creates
       sk = CONN#<connection_id>   one connection (hash of its secret, scopes, bounds, and
                                   `acting_as`: the names whose allow-list holds it)
All reads of a connection are strongly consistent so a revocation counts at once (A3).

`acting_as` is a map {name: {id, display, seen}}: entries are added and removed only by the
transactions that change a name's allow-list (messaging/agent_store.py builds them with
the helpers below), so authentication's one read answers "may this connection act as
NAME" (M5); `seen` is the connection's last presence refresh as that name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from agentworks.dynamo import (
    TransactionCancelled,
    condition_failed,
    from_item,
    read_item,
    to_item,
    transact_write,
)
from agentworks.identity.models import Connection, Consent

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def _account_pk(account_id: str) -> str:
    return f"ACCOUNT#{account_id}"


def _account_key(account_id: str) -> dict[str, str]:
    return {"pk": _account_pk(account_id), "sk": "ACCOUNT"}


class ConnectionLimit(Exception):
    """The account holds its maximum of live connections."""


class ConnectionGone(Exception):
    """No such connection in this account."""


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
        ends_with_parent=bool(data.get("ends_with_parent", False)),
        bound_to=_bound_to(data),
        generation=int(data.get("generation", 1 if data.get("created_by") else 0)),
    )


def _bound_to(data: dict[str, Any]) -> tuple[str, ...]:
    if not data.get("ends_with_parent"):
        return ()
    if data.get("bound_to"):
        return tuple(data["bound_to"])
    # A child from before lineages were kept ends with its creator alone.
    return (str(data["created_by"]),) if data.get("created_by") else ()


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
                    "live_connections": 0,
                }
            ),
            ConditionExpression="attribute_not_exists(pk)",
        )

    def put_connection(self, connection: Connection, max_live: int) -> None:
        """Stores a new connection and counts it, in one transaction: `ConnectionLimit` when
        the account already holds `max_live` live connections."""
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
            "ends_with_parent": connection.ends_with_parent or None,
            "bound_to": list(connection.bound_to) or None,
            "generation": connection.generation,
            # Filled by registrations that allow this connection (M5); must exist so their
            # transactions can set one entry.
            "acting_as": {},
        }
        items = {
            "count": {
                "Update": {
                    "TableName": self._table,
                    "Key": to_item(_account_key(connection.account_id)),
                    "UpdateExpression": "ADD live_connections :one",
                    "ConditionExpression": "attribute_exists(pk) AND live_connections < :max",
                    "ExpressionAttributeValues": to_item({":one": 1, ":max": max_live}),
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                }
            },
            "connection": {
                "Put": {
                    "TableName": self._table,
                    "Item": to_item(item),
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            },
        }
        for _attempt in range(2):
            try:
                transact_write(self._db, items)
                return
            except TransactionCancelled as cancelled:
                if not cancelled.failed("count"):
                    raise
                account = cancelled.old.get("count")
                if account is None or "live_connections" in account:
                    raise ConnectionLimit() from None
                # An account from before the count: count its live connections once.
                self._start_count(connection.account_id)
        raise ConnectionLimit()

    def _start_count(self, account_id: str) -> None:
        live = sum(1 for c in self.list_connections(account_id) if c.revoked_at is None)
        try:
            self._db.update_item(
                TableName=self._table,
                Key=to_item(_account_key(account_id)),
                UpdateExpression="SET live_connections = :n",
                ConditionExpression=(
                    "attribute_exists(pk) AND attribute_not_exists(live_connections)"
                ),
                ExpressionAttributeValues=to_item({":n": live}),
            )
        except ClientError as error:
            if not condition_failed(error):
                raise  # another request started the count meanwhile: that one stands

    def get_connection(self, account_id: str, connection_id: str) -> Connection | None:
        data = read_item(self._db, self._table, connection_key(account_id, connection_id))
        return connection_from_item(data) if data else None

    def get_connections(self, account_id: str, connection_ids: list[str]) -> list[Connection]:
        """Several connections of one account in one strongly consistent BatchGetItem (the
        ancestors a connection ends with); unknown ids are left out."""
        keys = [to_item(connection_key(account_id, c)) for c in dict.fromkeys(connection_ids)]
        found: list[Connection] = []
        request: dict[str, Any] = {self._table: {"Keys": keys, "ConsistentRead": True}}
        while request:  # what DynamoDB did not get to comes back unprocessed
            response = self._db.batch_get_item(RequestItems=request)
            for raw in response["Responses"].get(self._table, []):
                found.append(connection_from_item(from_item(raw) or {}))
            request = dict(response.get("UnprocessedKeys") or {})
        return found

    def get_live_connection(
        self, account_id: str, connection_id: str, now: float
    ) -> Connection | None:
        """The connection while it authenticates: live itself, and every ancestor it ends
        with live too (one GetItem, and one BatchGetItem for a child that ends with its
        parent). Every check of "is this caller's connection still good" goes here."""
        connection = self.get_connection(account_id, connection_id)
        if connection is None or not connection.is_live(now):
            return None
        if connection.bound_to:
            ancestors = self.get_connections(account_id, list(connection.bound_to))
            live = {a.connection_id for a in ancestors if a.is_live(now)}
            if any(a not in live for a in connection.bound_to):
                return None
        return connection

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

    def revoke(self, account_id: str, connection_id: str, at: int) -> None:
        """Marks a connection revoked and frees its place in the account's count, in one
        transaction. Revoking a revoked connection changes nothing; `ConnectionGone` when it
        does not exist in this account."""
        items = {
            "connection": {
                "Update": {
                    "TableName": self._table,
                    "Key": to_item(connection_key(account_id, connection_id)),
                    "UpdateExpression": "SET revoked_at = :at",
                    "ConditionExpression": (
                        "attribute_exists(pk) AND attribute_not_exists(revoked_at)"
                    ),
                    "ExpressionAttributeValues": to_item({":at": at}),
                }
            },
            "count": {
                "Update": {
                    "TableName": self._table,
                    "Key": to_item(_account_key(account_id)),
                    "UpdateExpression": "ADD live_connections :minus_one",
                    "ConditionExpression": "live_connections > :zero",
                    "ExpressionAttributeValues": to_item({":minus_one": -1, ":zero": 0}),
                }
            },
        }
        try:
            transact_write(self._db, items)
        except TransactionCancelled as cancelled:
            if cancelled.failed("count") and not cancelled.failed("connection"):
                # No count to free (an account from before it): a revocation never waits
                # on the count, so revoke alone.
                self._revoke_uncounted(account_id, connection_id, at)
                return
            if not cancelled.failed("connection"):
                raise
            existing = self.get_connection(account_id, connection_id)
            if existing is None:
                raise ConnectionGone() from None
            # Already revoked: nothing to change, and its place was freed then.

    def _revoke_uncounted(self, account_id: str, connection_id: str, at: int) -> None:
        try:
            self._db.update_item(
                TableName=self._table,
                Key=to_item(connection_key(account_id, connection_id)),
                UpdateExpression="SET revoked_at = if_not_exists(revoked_at, :at)",
                ConditionExpression="attribute_exists(pk)",
                ExpressionAttributeValues=to_item({":at": at}),
            )
        except ClientError as error:
            if condition_failed(error):
                raise ConnectionGone() from None
            raise
