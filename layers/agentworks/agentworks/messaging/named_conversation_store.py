"""Data access for the account's conversations with a named agent (C5 the Messages view):
the sparse NamedByAccount index, newest first, keyed by the caller's account.

Its projection holds what the list shows (parties, times, status, TTL), so a page is one
Query of the index and no read of the conversations themselves.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentworks.dynamo import from_item, live_item, to_item
from agentworks.messaging.conversation_items import conversation_from_item
from agentworks.messaging.models import Conversation

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

NAMED_BY_ACCOUNT = "NamedByAccount"


class NamedConversationIndex:
    def __init__(self, client: DynamoDBClient, table: str) -> None:
        self._db = client
        self._table = table

    def page(
        self, account_id: str, before: str | None, limit: int, now_ms: int
    ) -> tuple[list[Conversation], str | None]:
        """The account's newest conversations with a named agent — those older than the
        conversation ulid `before` when given — and where the next page starts (None when
        nothing older is left). Conversations past their TTL that DynamoDB has not deleted
        yet are passed over, never shown."""
        values: dict[str, Any] = {":account": account_id}
        condition = "named_account = :account"
        if before is not None:
            condition += " AND named_sort < :before"
            values[":before"] = before
        response = self._db.query(
            TableName=self._table,
            IndexName=NAMED_BY_ACCOUNT,
            KeyConditionExpression=condition,
            ExpressionAttributeValues=to_item(values),
            ScanIndexForward=False,
            Limit=limit + 1,  # one more says whether older ones follow
        )
        looked_at = [from_item(raw) or {} for raw in response["Items"]][: limit + 1]
        more = len(looked_at) > limit
        looked_at = looked_at[:limit]
        found = [conversation_from_item(data) for data in looked_at if live_item(data, now_ms)]
        return found, str(looked_at[-1]["named_sort"]) if more else None
