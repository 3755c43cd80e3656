"""Data access for attached MCP servers in the work table.

ACCOUNT#<account>   MCPSERVER#<name>   url, header_names, secret_id, version, created_at,
                                       updated_at

The headers' values are never in the item: they live in the secret `secret_id` names
(secret_store). Listing is one Query of the account's partition with `begins_with`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentworks.dynamo import applied, items_under, read_item, to_item

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

_PREFIX = "MCPSERVER#"


@dataclass(frozen=True)
class McpServer:
    account_id: str
    name: str  # lower case: the key
    url: str
    header_names: tuple[str, ...]  # what is sent, never the values
    secret_id: str  # the Secrets Manager secret holding the headers
    version: int
    created_at: int
    updated_at: int


class ServerExists(Exception):
    pass


def server_key(account_id: str, name: str) -> dict[str, str]:
    return {"pk": f"ACCOUNT#{account_id}", "sk": f"{_PREFIX}{name.lower()}"}


def _from_item(data: dict[str, Any]) -> McpServer:
    return McpServer(
        account_id=data["account_id"],
        name=data["sk"].removeprefix(_PREFIX),
        url=data["url"],
        header_names=tuple(data.get("header_names") or ()),
        secret_id=data["secret_id"],
        version=int(data["version"]),
        created_at=int(data["created_at"]),
        updated_at=int(data["updated_at"]),
    )


class McpServerStore:
    def __init__(self, client: DynamoDBClient, table: str) -> None:
        self._db = client
        self._table = table

    def get(self, account_id: str, name: str) -> McpServer | None:
        data = read_item(self._db, self._table, server_key(account_id, name))
        return _from_item(data) if data else None

    def list_all(self, account_id: str) -> list[McpServer]:
        found = items_under(self._db, self._table, f"ACCOUNT#{account_id}", _PREFIX)
        return [_from_item(data) for data in found]

    def create(self, server: McpServer) -> None:
        item = {
            **server_key(server.account_id, server.name),
            "account_id": server.account_id,
            "url": server.url,
            "header_names": list(server.header_names),
            "secret_id": server.secret_id,
            "version": server.version,
            "created_at": server.created_at,
            "updated_at": server.updated_at,
        }
        if not applied(
            self._db.put_item,
            TableName=self._table,
            Item=to_item(item),
            ConditionExpression="attribute_not_exists(pk)",
        ):
            raise ServerExists()

    def replace(
        self, server: McpServer, url: str, header_names: tuple[str, ...], now_ms: int
    ) -> bool:
        """A new URL and header names if the server is still at the version that was read."""
        return applied(
            self._db.update_item,
            TableName=self._table,
            Key=to_item(server_key(server.account_id, server.name)),
            UpdateExpression=(
                "SET #url = :url, header_names = :h, version = :next, updated_at = :now"
            ),
            ConditionExpression="version = :v",
            ExpressionAttributeNames={"#url": "url"},
            ExpressionAttributeValues=to_item(
                {
                    ":url": url,
                    ":h": list(header_names),
                    ":next": server.version + 1,
                    ":now": now_ms,
                    ":v": server.version,
                }
            ),
        )

    def delete(self, server: McpServer) -> None:
        """Unconditional: gone is gone, also when a retried delete finds it gone already."""
        self._db.delete_item(
            TableName=self._table, Key=to_item(server_key(server.account_id, server.name))
        )
