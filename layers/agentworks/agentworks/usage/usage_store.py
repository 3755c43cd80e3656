"""Data access for usage counters, in the work table.

    USAGE#<account_id>    <YYYY-MM-DD>#<shard>    one shard of one account-day's counters

Counters are only ever added to (`ADD`, which creates the item on its first write), so a
writer never reads first and two writers never refuse each other. An account-day is
`limits.USAGE_SHARDS` items: a Crew call's end adds inside its own transaction, and
transactions that meet on one item cancel each other, so writers spread by an id they hold.
A report reads every shard of the days asked for in one Query and sums them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from agentworks import limits
from agentworks.dynamo import from_item, to_item
from agentworks.usage.counts import COUNTERS, Counts, day_end, day_of, shard_of

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

PREFIX = "USAGE#"


def usage_key(account_id: str, day: str, shard: int) -> dict[str, str]:
    return {"pk": f"{PREFIX}{account_id}", "sk": f"{day}#{shard}"}


def update_request(
    table: str, account_id: str, day: str, shard: int, counts: Counts
) -> dict[str, Any]:
    """The UpdateItem (or transaction `Update`) that adds `counts` to one shard."""
    added = counts.nonzero()
    names = {f"#{n}": n for n in added}
    values: dict[str, Any] = {f":{n}": v for n, v in added.items()}
    values[":ttl"] = day_end(day) + limits.USAGE_RETENTION_SECONDS
    return {
        "TableName": table,
        "Key": to_item(usage_key(account_id, day, shard)),
        "UpdateExpression": "ADD "
        + ", ".join(f"#{n} :{n}" for n in added)
        + " SET expires_ttl = if_not_exists(expires_ttl, :ttl)",
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": to_item(values),
    }


class UsageStore:
    def __init__(self, client: DynamoDBClient, table: str) -> None:
        self._db = client
        self._table = table

    def transaction_item(
        self, account_id: str, day: str, shard: int, counts: Counts
    ) -> dict[str, Any]:
        """An `Update` to put in a transaction that already happens (no request of its own)."""
        return {"Update": update_request(self._table, account_id, day, shard, counts)}

    def write_counted(
        self,
        kind: Literal["Put", "Update"],
        request: dict[str, Any],
        account_id: str,
        at_ms: int,
        spread_by: str,
        usage: Counts | None,
    ) -> bool:
        """One conditional write (PutItem or UpdateItem `request`) of a run's end, and what it
        adds to its account's counters in one transaction with it, so a repeated end never
        counts twice; False when the write's condition failed (nothing was written)."""
        from agentworks.dynamo import (
            TransactionCancelled,
            applied,
            transact_write,
        )

        if not usage:
            write = self._db.put_item if kind == "Put" else self._db.update_item
            return applied(write, **request)
        counted = self.transaction_item(
            account_id, day_of(at_ms / 1000), shard_of(spread_by), usage
        )
        try:
            transact_write(self._db, {"write": {kind: request}, "usage": counted})
        except TransactionCancelled as cancelled:
            if cancelled.failed("write"):
                return False
            raise
        return True

    def add(self, account_id: str, day: str, shard: int, counts: Counts) -> None:
        if counts:
            self._db.update_item(**update_request(self._table, account_id, day, shard, counts))

    def days(self, account_id: str, first: str, last: str, now: float) -> dict[str, Counts]:
        """Each day from `first` to `last` (inclusive) that has counters, its shards summed;
        items past their TTL that DynamoDB has not deleted yet are left out."""
        query: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "pk = :pk AND sk BETWEEN :first AND :last",
            "ExpressionAttributeValues": to_item(
                # '#' < '~': every shard of `last` sorts before "<last>#~".
                {":pk": f"{PREFIX}{account_id}", ":first": f"{first}#", ":last": f"{last}#~"}
            ),
        }
        found: dict[str, Counts] = {}
        while True:
            page = self._db.query(**query)
            for raw in page.get("Items", []):
                data = from_item(raw) or {}
                if int(data.get("expires_ttl", 0)) <= now:
                    continue
                day = str(data["sk"]).split("#", 1)[0]
                shard = Counts(**{n: int(data.get(n, 0)) for n in COUNTERS})
                found[day] = found.get(day, Counts()) + shard
            if "LastEvaluatedKey" not in page:
                return found
            query["ExclusiveStartKey"] = page["LastEvaluatedKey"]
