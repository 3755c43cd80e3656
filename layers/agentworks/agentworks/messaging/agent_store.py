"""Data access for agent registrations and their counters (M4, M5)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from agentworks import limits
from agentworks.dynamo import (
    cancellation_reasons,
    error_code,
    from_item,
    is_conditional_failure,
    to_item,
)
from agentworks.messaging import keys
from agentworks.messaging.models import Registration

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


class RegistrationExists(Exception):
    pass


class RegistrationLimit(Exception):
    def __init__(self, scope: str) -> None:
        super().__init__(scope)
        self.scope = scope  # "account" or "server"


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
    )


class AgentStore:
    def __init__(self, client: DynamoDBClient, table: str) -> None:
        self._db = client
        self._table = table

    def get(self, account_id: str, name: str) -> Registration | None:
        response = self._db.get_item(
            TableName=self._table, Key=to_item(keys.agent(account_id, name)), ConsistentRead=True
        )
        data = from_item(response.get("Item"))
        return registration_from_item(data) if data else None

    def list_all(self, account_id: str) -> list[Registration]:
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
                return result
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def create(self, reg: Registration) -> None:
        """Puts a new name and counts it against both limits, atomically."""
        count = "SET agents = if_not_exists(agents, :zero) + :one"
        items: list[dict[str, Any]] = [
            {
                "Put": {
                    "TableName": self._table,
                    "Item": to_item(registration_to_item(reg)),
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            },
            {
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
            {
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
        ]
        try:
            self._db.transact_write_items(TransactItems=items)  # type: ignore[arg-type]
        except ClientError as error:
            if error_code(error) != "TransactionCanceledException":
                raise
            reasons = cancellation_reasons(error)
            failed = [is_conditional_failure(r) for r in reasons] + [False] * 3
            if failed[0]:
                raise RegistrationExists() from None
            if failed[1]:
                raise RegistrationLimit("account") from None
            if failed[2]:
                raise RegistrationLimit("server") from None
            raise

    def update_settings(
        self,
        reg: Registration,
        purpose: str | None,
        provider: str | None,
        allowed_connection_ids: list[str],
    ) -> None:
        """Re-registration: same identity, new purpose/provider/allow-list."""
        values: dict[str, Any] = {":allowed": allowed_connection_ids, ":id": reg.agent_id}
        sets, removes = ["allowed_connection_ids = :allowed"], []
        for attribute, value in (("purpose", purpose), ("provider", provider)):
            if value is None:
                removes.append(attribute)
            else:
                sets.append(f"{attribute} = :{attribute}")
                values[f":{attribute}"] = value
        expression = "SET " + ", ".join(sets) + (" REMOVE " + ", ".join(removes) if removes else "")
        self._db.update_item(
            TableName=self._table,
            Key=to_item(keys.agent(reg.account_id, reg.name)),
            UpdateExpression=expression,
            ConditionExpression="agent_id = :id",
            ExpressionAttributeValues=to_item(values),
        )

    def delete(self, reg: Registration) -> bool:
        """Removes the name (only this identity of it) and releases its counts."""
        release = "SET agents = agents - :one"
        items: list[dict[str, Any]] = [
            {
                "Delete": {
                    "TableName": self._table,
                    "Key": to_item(keys.agent(reg.account_id, reg.name)),
                    "ConditionExpression": "agent_id = :id",
                    "ExpressionAttributeValues": to_item({":id": reg.agent_id}),
                }
            },
            {
                "Update": {
                    "TableName": self._table,
                    "Key": to_item(keys.account_counters(reg.account_id)),
                    "UpdateExpression": release,
                    "ExpressionAttributeValues": to_item({":one": 1}),
                }
            },
            {
                "Update": {
                    "TableName": self._table,
                    "Key": to_item(keys.server_counters()),
                    "UpdateExpression": release,
                    "ExpressionAttributeValues": to_item({":one": 1}),
                }
            },
        ]
        try:
            self._db.transact_write_items(TransactItems=items)  # type: ignore[arg-type]
        except ClientError as error:
            if error_code(error) == "TransactionCanceledException":
                return False
            raise
        return True

    def touch(self, reg: Registration, now_ms: int) -> None:
        """Marks the name as seen (online) — called at most once a minute per name."""
        self._db.update_item(
            TableName=self._table,
            Key=to_item(keys.agent(reg.account_id, reg.name)),
            UpdateExpression="SET last_seen_at = :now",
            ConditionExpression="agent_id = :id",
            ExpressionAttributeValues=to_item({":now": now_ms, ":id": reg.agent_id}),
        )
