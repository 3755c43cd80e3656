"""Data access for the audit log (audit/entries.py has the key design): a change's sibling
write, and pages of one account's entries, oldest first."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from agentworks import limits
from agentworks.audit.entries import AuditEntry, audit_pk, audit_put, entry_from
from agentworks.dynamo import condition_failed, from_item, to_item
from agentworks.observability import count

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

logger = logging.getLogger(__name__)


def write_entry(client: DynamoDBClient, table: str, entry: AuditEntry, now_ms: int) -> None:
    """The entry of a change that already succeeded (its conditional write's sibling, right
    after it). A write that fails is logged and counted (`AuditWritesFailed`), never raised:
    the change stands, and its caller must not be told it failed."""
    put = audit_put(table, entry, now_ms)["Put"]
    try:
        client.put_item(**put)
    except ClientError as error:
        if condition_failed(error):
            return  # the same entry (a stable id) was written before: once
        logger.exception("audit entry not written", extra={"action": entry.action})
        count("AuditWritesFailed")


class AuditStore:
    def __init__(self, client: DynamoDBClient, table: str) -> None:
        self._db = client
        self._table = table

    def put(self, entry: AuditEntry, now_ms: int) -> None:
        write_entry(self._db, self._table, entry, now_ms)

    def page(
        self, account_id: str, conversation: str | None, after_sk: str | None, limit: int
    ) -> tuple[list[AuditEntry], str | None]:
        """Up to `limit` entries after `after_sk`, oldest first, and the sort key to go on
        from (None at the end). With `conversation`, that conversation's only: a filter on
        the account's partition, read at most `limits.AUDIT_FILTER_PAGES` pages per call
        (the cursor goes on from the last item examined)."""
        query: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "pk = :pk AND sk > :after",
            "ExpressionAttributeValues": {":pk": audit_pk(account_id), ":after": after_sk or "0"},
            "Limit": limit,
        }
        if conversation is not None:
            query["FilterExpression"] = "conversation = :c"
            query["ExpressionAttributeValues"][":c"] = conversation
        query["ExpressionAttributeValues"] = to_item(query["ExpressionAttributeValues"])
        found: list[AuditEntry] = []
        last: str | None = None
        for _page in range(limits.AUDIT_FILTER_PAGES):
            page = self._db.query(**query)
            for raw in page["Items"]:
                data = from_item(raw) or {}
                found.append(entry_from(data))
                last = str(data["sk"])
                if len(found) == limit:
                    break
            evaluated = page.get("LastEvaluatedKey")
            if len(found) == limit:
                return found, last
            if evaluated is None:
                return found, None
            last = str((from_item(evaluated) or {})["sk"])
            query["ExclusiveStartKey"] = evaluated
            query["Limit"] = limit - len(found)
        return found, last
