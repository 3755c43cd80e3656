"""Data access for agent registrations and their counters (M4, M5).

A registration's allow-list is mirrored on the allowed connection items (identity table,
`acting_as`) in the same transaction as every change to it, so authentication's one read
of the connection says which names it may act as.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from agentworks import limits
from agentworks.dynamo import (
    TransactionCancelled,
    condition_failed,
    from_item,
    read_item,
    to_item,
    transact_write,
)
from agentworks.identity.connection_store import (
    ConnectionStore,
    connection_from_item,
    connection_key,
    grant_consent_item,
    revoke_consent_item,
    seen_consent_item,
)
from agentworks.identity.models import Connection, Consent
from agentworks.messaging import keys
from agentworks.messaging.models import Registration

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


class RegistrationExists(Exception):
    pass


class RegistrationChanged(Exception):
    """Someone changed (or removed) the registration since it was read: read again."""


class RegistrationLimit(Exception):
    def __init__(self, scope: str) -> None:
        super().__init__(scope)
        self.scope = scope  # "account" or "server"


class ConnectionMissing(Exception):
    """An allow-listed connection has no item to hold the consent."""

    def __init__(self, connection_id: str) -> None:
        super().__init__(connection_id)
        self.connection_id = connection_id


def registration_to_item(reg: Registration) -> dict[str, Any]:
    return {
        **keys.agent(reg.account_id, reg.name),
        "account_id": reg.account_id,
        "name": reg.name,
        "display_name": reg.display_name,
        "agent_id": reg.agent_id,
        "allowed_connection_ids": reg.allowed_connection_ids,
        "created_at": reg.created_at,
        "created_by": reg.created_by,
        "mailbox_seq": reg.mailbox_seq,
        "purpose": reg.purpose,
        "provider": reg.provider,
        "last_seen_at": reg.last_seen_at,
        "acl_version": reg.acl_version,
    }


def registration_from_item(data: dict[str, Any]) -> Registration:
    return Registration(
        account_id=data["account_id"],
        name=data["name"],
        display_name=data.get("display_name", data["name"]),
        agent_id=data["agent_id"],
        allowed_connection_ids=list(data.get("allowed_connection_ids", [])),
        created_at=int(data["created_at"]),
        created_by=data["created_by"],
        mailbox_seq=int(data.get("mailbox_seq", 0)),
        purpose=data.get("purpose"),
        provider=data.get("provider"),
        last_seen_at=data.get("last_seen_at"),
        acl_version=int(data.get("acl_version", 0)),
    )


def consent_of(reg: Registration) -> Consent:
    return Consent(agent_id=reg.agent_id, display_name=reg.display_name)


class AgentStore:
    def __init__(self, client: DynamoDBClient, table: str, identity_table: str) -> None:
        self._db = client
        self._table = table
        self._identity_table = identity_table

    def get(self, account_id: str, name: str) -> Registration | None:
        response = self._db.get_item(
            TableName=self._table, Key=to_item(keys.agent(account_id, name)), ConsistentRead=True
        )
        data = from_item(response.get("Item"))
        return registration_from_item(data) if data else None

    def connection(self, account_id: str, connection_id: str) -> Connection | None:
        """The connection as stored now (for re-checking authority after a read, M8)."""
        data = read_item(self._db, self._identity_table, connection_key(account_id, connection_id))
        return connection_from_item(data) if data else None

    def list_all(self, account_id: str) -> list[Registration]:
        """The account's names, each with `last_seen_at` = the latest read as it through any
        of its allowed connections (kept on the connection items, see `touch`)."""
        pk, prefix = keys.agent_prefix(account_id)
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
            "ExpressionAttributeValues": to_item({":pk": pk, ":prefix": prefix}),
        }
        result: list[Registration] = []
        while True:
            page = self._db.query(**kwargs)
            result.extend(registration_from_item(from_item(i) or {}) for i in page["Items"])
            if "LastEvaluatedKey" not in page:
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        if not result:
            return result
        seen: dict[tuple[str, str], int] = {}
        for connection in ConnectionStore(self._db, self._identity_table).list_connections(
            account_id
        ):
            for name, consent in connection.consents.items():
                if consent.seen_at is not None:
                    key = (name, consent.agent_id)
                    seen[key] = max(seen.get(key, 0), consent.seen_at)
        for reg in result:
            latest = seen.get((reg.name, reg.agent_id))
            if latest is not None:
                reg.last_seen_at = max(reg.last_seen_at or 0, latest)
        return result

    def create(self, reg: Registration) -> None:
        """Puts a new name, counts it against both limits and grants it to the allowed
        connections, atomically."""
        count = "SET agents = if_not_exists(agents, :zero) + :one"
        items: dict[str, dict[str, Any]] = {
            "registration": {
                "Put": {
                    "TableName": self._table,
                    "Item": to_item(registration_to_item(reg)),
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            },
            "account_count": {
                "Update": {
                    "TableName": self._table,
                    "Key": to_item(keys.account_counters(reg.account_id)),
                    "UpdateExpression": count,
                    "ConditionExpression": "attribute_not_exists(agents) OR agents < :max",
                    "ExpressionAttributeValues": to_item(
                        {":zero": 0, ":one": 1, ":max": limits.REGISTRATIONS_PER_ACCOUNT}
                    ),
                }
            },
            "server_count": {
                "Update": {
                    "TableName": self._table,
                    "Key": to_item(keys.server_counters()),
                    "UpdateExpression": count,
                    "ConditionExpression": "attribute_not_exists(agents) OR agents < :max",
                    "ExpressionAttributeValues": to_item(
                        {":zero": 0, ":one": 1, ":max": limits.REGISTRATIONS_PER_SERVER}
                    ),
                }
            },
            **self._grants(reg, list(reg.allowed_connection_ids)),
        }
        failed = self._transact(items)
        if failed is None:
            return
        if failed == "registration":
            raise RegistrationExists()
        if failed == "account_count":
            raise RegistrationLimit("account")
        if failed == "server_count":
            raise RegistrationLimit("server")
        raise ConnectionMissing(failed.split(":", 1)[1])

    def update_settings(
        self,
        reg: Registration,
        purpose: str | None,
        provider: str | None,
        allowed_connection_ids: list[str],
    ) -> None:
        """Re-registration: same identity, new purpose/provider/allow-list. Connections
        that joined the list are granted the name and those that left lose it, in the same
        transaction, under the allow-list version that was read."""
        values: dict[str, Any] = {
            ":allowed": allowed_connection_ids,
            ":id": reg.agent_id,
            ":next": reg.acl_version + 1,
        }
        sets = ["allowed_connection_ids = :allowed", "acl_version = :next"]
        removes = []
        for attribute, value in (("purpose", purpose), ("provider", provider)):
            if value is None:
                removes.append(attribute)
            else:
                sets.append(f"{attribute} = :{attribute}")
                values[f":{attribute}"] = value
        values[":seen"] = reg.acl_version
        condition = "agent_id = :id AND acl_version = :seen"
        if not reg.acl_version:  # written before allow-list versions existed
            condition = (
                "agent_id = :id AND (attribute_not_exists(acl_version) OR acl_version = :seen)"
            )
        expression = "SET " + ", ".join(sets) + (" REMOVE " + ", ".join(removes) if removes else "")
        added = [c for c in allowed_connection_ids if c not in reg.allowed_connection_ids]
        removed = [c for c in reg.allowed_connection_ids if c not in allowed_connection_ids]
        revokes = self._revokes(reg, removed)
        items: dict[str, dict[str, Any]] = {
            "registration": {
                "Update": {
                    "TableName": self._table,
                    "Key": to_item(keys.agent(reg.account_id, reg.name)),
                    "UpdateExpression": expression,
                    "ConditionExpression": condition,
                    "ExpressionAttributeValues": to_item(values),
                }
            },
            **self._grants(reg, added),
        }
        if len(items) + len(revokes) > limits.TRANSACTION_MAX_ITEMS:
            # Too many changes for one transaction (a full allow-list replaced by another):
            # the connections that leave lose the name first, under the same version check,
            # so a failure between the two leaves less authority, never more.
            self._revoke_first(reg, condition, values, revokes)
        else:
            items |= revokes
        failed = self._transact(items)
        if failed is None:
            return
        if failed == "registration":
            raise RegistrationChanged()
        raise ConnectionMissing(failed.split(":", 1)[1])

    def _revoke_first(
        self,
        reg: Registration,
        condition: str,
        values: dict[str, Any],
        revokes: dict[str, dict[str, Any]],
    ) -> None:
        check = {
            "ConditionCheck": {
                "TableName": self._table,
                "Key": to_item(keys.agent(reg.account_id, reg.name)),
                "ConditionExpression": condition,
                "ExpressionAttributeValues": to_item({k: values[k] for k in (":id", ":seen")}),
            }
        }
        failed = self._transact({"registration": check, **revokes})
        if failed == "registration":
            raise RegistrationChanged()
        if failed is not None:
            raise ConnectionMissing(failed.split(":", 1)[1])

    def delete(self, reg: Registration) -> bool:
        """Removes the name (only this identity of it), releases its counts and takes it
        from the allowed connections."""
        release = "SET agents = agents - :one"
        items: dict[str, dict[str, Any]] = {
            "registration": {
                "Delete": {
                    "TableName": self._table,
                    "Key": to_item(keys.agent(reg.account_id, reg.name)),
                    "ConditionExpression": "agent_id = :id",
                    "ExpressionAttributeValues": to_item({":id": reg.agent_id}),
                }
            },
            "account_count": {
                "Update": {
                    "TableName": self._table,
                    "Key": to_item(keys.account_counters(reg.account_id)),
                    "UpdateExpression": release,
                    "ExpressionAttributeValues": to_item({":one": 1}),
                }
            },
            "server_count": {
                "Update": {
                    "TableName": self._table,
                    "Key": to_item(keys.server_counters()),
                    "UpdateExpression": release,
                    "ExpressionAttributeValues": to_item({":one": 1}),
                }
            },
            **self._revokes(reg, reg.allowed_connection_ids),
        }
        return self._transact(items) is None

    def touch(
        self, account_id: str, name: str, consent: Consent, connection_id: str, now_ms: int
    ) -> None:
        """Marks the name as seen (online) through this connection — called at most once a
        minute per name and connection: the connection item holds when, and authentication
        reads it on every request, so the next refresh needs no read."""
        try:
            self._db.update_item(
                **seen_consent_item(
                    self._identity_table, account_id, connection_id, name, consent.agent_id, now_ms
                )["Update"]
            )
        except ClientError as error:
            if not condition_failed(error):
                raise

    # ---- helpers ----

    def _grants(self, reg: Registration, connection_ids: list[str]) -> dict[str, dict[str, Any]]:
        consent = consent_of(reg)
        return {
            f"grant:{c}": grant_consent_item(
                self._identity_table, reg.account_id, c, reg.name, consent
            )
            for c in connection_ids
        }

    def _revokes(self, reg: Registration, connection_ids: list[str]) -> dict[str, dict[str, Any]]:
        return {
            f"revoke:{c}": revoke_consent_item(self._identity_table, reg.account_id, c, reg.name)
            for c in connection_ids
        }

    def _transact(self, items: dict[str, dict[str, Any]]) -> str | None:
        """Runs the transaction; None when it committed, else the name of the first item
        whose condition failed (conflicts were retried: see `transact_write`)."""
        try:
            transact_write(self._db, items)
        except TransactionCancelled as cancelled:
            failed = next((name for name in items if cancelled.failed(name)), None)
            if failed is None:
                raise
            return failed
        return None
