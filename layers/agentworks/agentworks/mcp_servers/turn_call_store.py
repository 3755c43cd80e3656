"""Data access for the MCP tool calls a `lambda` adapter's agent makes by call token (issue
28), in the work table until the turn that minted the token takes them onto its record:

    MCPTURN#<turn>   SLOTS         n: how many calls the turn has begun (at most its bound)
    MCPTURN#<turn>   CALL#<nnn>    the nnn-th call's record entry (call_records), once ended
    s3://<outputs bucket>/mcp-turns/<turn>/mcp-calls/<nnn>.json
                                   its arguments and result, past the record's inline bound

The items expire (TTL) a day after the turn's token does: the turn reads them as soon as
its agent answers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agentworks.dynamo import applied, from_item, to_item

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

_KEPT_SECONDS = 24 * 3600  # past the token's expiry, for a turn that reads late


def content_prefix(turn: str) -> str:
    return f"mcp-turns/{turn}/"


class TurnCallStore:
    def __init__(
        self, client: DynamoDBClient, table: str, s3: Callable[[], Any], bucket: str
    ) -> None:
        self._db = client
        self._table = table
        self._s3 = s3  # made on first use: most calls stay inline
        self._bucket = bucket

    def reserve(self, turn: str, most: int, expires_at: float) -> int | None:
        """The number (from 1) of the turn's next call, or None when it has begun `most`."""
        response: dict[str, Any] = {}

        def update(**request: Any) -> None:
            response.update(self._db.update_item(**request))

        taken = applied(
            update,
            TableName=self._table,
            Key=to_item({"pk": f"MCPTURN#{turn}", "sk": "SLOTS"}),
            UpdateExpression="ADD n :one SET expires_ttl = :ttl",
            ConditionExpression="attribute_not_exists(n) OR n < :most",
            ExpressionAttributeValues=to_item(
                {":one": 1, ":most": most, ":ttl": int(expires_at) + _KEPT_SECONDS}
            ),
            ReturnValues="UPDATED_NEW",
        )
        if not taken:
            return None
        return int((from_item(response["Attributes"]) or {})["n"])

    def keep(self, turn: str, name: str, content: bytes) -> str:
        """Content too large for the record, in S3; returns the key the record names."""
        key = content_prefix(turn) + name
        self._s3().put_object(Bucket=self._bucket, Key=key, Body=content)
        return key

    def put(self, turn: str, index: int, entry: dict[str, Any], expires_at: float) -> None:
        item = {
            "pk": f"MCPTURN#{turn}",
            "sk": f"CALL#{index:03d}",
            "entry": entry,
            "expires_ttl": int(expires_at) + _KEPT_SECONDS,
        }
        self._db.put_item(TableName=self._table, Item=to_item(item))

    def calls(self, turn: str) -> list[dict[str, Any]]:
        """The turn's ended calls' entries, in the order they were begun."""
        response = self._db.query(
            TableName=self._table,
            KeyConditionExpression="pk = :pk AND begins_with(sk, :calls)",
            ExpressionAttributeValues=to_item({":pk": f"MCPTURN#{turn}", ":calls": "CALL#"}),
            ConsistentRead=True,
        )
        return [dict((from_item(raw) or {})["entry"]) for raw in response.get("Items", [])]
