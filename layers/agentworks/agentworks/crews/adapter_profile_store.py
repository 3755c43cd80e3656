"""Data access for adapter profiles in the work table.

ACCOUNT#<account>   ADAPTER#<name>   settings (JSON), mcp_tools (JSON, issue 28), version,
                                     created_at, updated_at
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentworks.dynamo import applied, items_under, read_item, to_item

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

_PREFIX = "ADAPTER#"


@dataclass(frozen=True)
class AdapterProfile:
    account_id: str
    name: str  # lower case: the key
    settings: dict[str, Any]  # the adapter block: type and its options
    version: int
    created_at: int
    updated_at: int
    # Issue 28: the attached MCP servers' tools steps with this profile may call, as
    # declared ([{server, tools}]); absent on profiles saved before.
    mcp_tools: list[dict[str, Any]] = field(default_factory=list)


def profile_key(account_id: str, name: str) -> dict[str, str]:
    return {"pk": f"ACCOUNT#{account_id}", "sk": f"{_PREFIX}{name.lower()}"}


def _from_item(data: dict[str, Any]) -> AdapterProfile:
    return AdapterProfile(
        account_id=data["account_id"],
        name=data["sk"].removeprefix(_PREFIX),
        settings=json.loads(data["settings"]),
        version=int(data["version"]),
        created_at=int(data["created_at"]),
        updated_at=int(data["updated_at"]),
        mcp_tools=json.loads(data.get("mcp_tools") or "[]"),
    )


class ProfileExists(Exception):
    pass


class AdapterProfileStore:
    def __init__(self, client: DynamoDBClient, table: str) -> None:
        self._db = client
        self._table = table

    def get(self, account_id: str, name: str) -> AdapterProfile | None:
        data = read_item(self._db, self._table, profile_key(account_id, name))
        return _from_item(data) if data else None

    def list_all(self, account_id: str) -> list[AdapterProfile]:
        found = items_under(self._db, self._table, f"ACCOUNT#{account_id}", _PREFIX)
        return [_from_item(data) for data in found]

    def create(self, profile: AdapterProfile) -> None:
        item = {
            **profile_key(profile.account_id, profile.name),
            "account_id": profile.account_id,
            "settings": settings_json(profile.settings),
            "mcp_tools": settings_json(profile.mcp_tools),
            "version": profile.version,
            "created_at": profile.created_at,
            "updated_at": profile.updated_at,
        }
        if not applied(
            self._db.put_item,
            TableName=self._table,
            Item=to_item(item),
            ConditionExpression="attribute_not_exists(pk)",
        ):
            raise ProfileExists()

    def replace(
        self,
        profile: AdapterProfile,
        settings: dict[str, Any],
        now_ms: int,
        mcp_tools: list[dict[str, Any]] | None = None,
    ) -> bool:
        """New settings (and MCP tools) if the profile is still at the version that was
        read."""
        return applied(
            self._db.update_item,
            TableName=self._table,
            Key=to_item(profile_key(profile.account_id, profile.name)),
            UpdateExpression=(
                "SET settings = :s, mcp_tools = :m, version = :next, updated_at = :now"
            ),
            ConditionExpression="version = :v",
            ExpressionAttributeValues=to_item(
                {
                    ":s": settings_json(settings),
                    ":m": settings_json(mcp_tools or []),
                    ":next": profile.version + 1,
                    ":now": now_ms,
                    ":v": profile.version,
                }
            ),
        )

    def delete(self, profile: AdapterProfile) -> None:
        """Unconditional: gone is gone, also when a retried delete finds it gone already."""
        self._db.delete_item(
            TableName=self._table, Key=to_item(profile_key(profile.account_id, profile.name))
        )


def settings_json(settings: dict[str, Any] | list[Any]) -> str:
    return json.dumps(settings, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
