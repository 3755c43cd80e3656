"""Data access for the MCP tool calls relay code made (issue 28), in the work table beside
their run, the large ones' content in the outputs bucket:

    RRUN#<run_id>    MCPCALL#<call_id>    one call (server, tool, step, outcome, sizes)
    s3://<outputs bucket>/relay-runs/<run_id>/mcp-calls/<call_id>.json
                                          {arguments, result} past the inline bound

A call is written once, when it ends, in one transaction with what it adds to its
account's usage (`relay_mcp_tool_calls`), so a record and its count never disagree.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from agentworks import limits
from agentworks.dynamo import from_item, to_item
from agentworks.relays.records import McpCall
from agentworks.usage.counts import Counts
from agentworks.usage.usage_store import UsageStore

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

PREFIX = "MCPCALL#"


def content_key(run_id: str, call_id: str) -> str:
    return f"relay-runs/{run_id}/mcp-calls/{call_id}.json"


class McpCallStore:
    def __init__(
        self, client: DynamoDBClient, table: str, s3: Callable[[], Any], bucket: str
    ) -> None:
        self._db = client
        self._table = table
        self._s3 = s3  # made on first use: most calls stay inline
        self._bucket = bucket

    def put(self, call: McpCall, account_id: str, usage: Counts | None) -> McpCall:
        """Writes the call (its content inline or, past the bound, to S3); returns it as
        stored."""
        stored = call
        inline = len((call.arguments_json or "").encode()) + len((call.result_json or "").encode())
        if inline > limits.RELAY_MCP_CALL_INLINE_MAX_BYTES:
            key = content_key(call.run_id, call.call_id)
            arguments, result = call.arguments_json or "null", call.result_json or "null"
            body = f'{{"arguments":{arguments},"result":{result}}}'
            self._s3().put_object(Bucket=self._bucket, Key=key, Body=body.encode())
            stored = McpCall(
                **{**asdict(call), "arguments_json": None, "result_json": None, "content_key": key}
            )
        item = {"pk": f"RRUN#{call.run_id}", "sk": PREFIX + call.call_id, **_present(stored)}
        UsageStore(self._db, self._table).write_counted(
            "Put",
            {"TableName": self._table, "Item": to_item(item)},
            account_id,
            call.started_at + call.duration_ms,
            call.call_id,
            usage,
        )
        return stored

    def calls(self, run_id: str, limit: int) -> tuple[list[McpCall], bool]:
        """The run's first `limit` calls, oldest first, and whether there are more."""
        response = self._db.query(
            TableName=self._table,
            KeyConditionExpression="pk = :pk AND begins_with(sk, :calls)",
            ExpressionAttributeValues=to_item({":pk": f"RRUN#{run_id}", ":calls": PREFIX}),
            ConsistentRead=True,
            Limit=limit + 1,
        )
        items = [from_item(raw) or {} for raw in response.get("Items", [])]
        found = [_call(data) for data in items[:limit]]
        return found, len(items) > limit


def _present(call: McpCall) -> dict[str, Any]:
    return {k: v for k, v in asdict(call).items() if v is not None}


def _call(data: dict[str, Any]) -> McpCall:
    return McpCall(
        call_id=str(data["call_id"]),
        run_id=str(data["run_id"]),
        attempt=int(data["attempt"]),
        step=data.get("step"),
        server=str(data["server"]),
        tool=str(data["tool"]),
        started_at=int(data["started_at"]),
        duration_ms=int(data["duration_ms"]),
        outcome=data["outcome"],
        result_bytes=int(data["result_bytes"]),
        error=data.get("error"),
        arguments_json=data.get("arguments_json"),
        result_json=data.get("result_json"),
        content_key=data.get("content_key"),
    )
