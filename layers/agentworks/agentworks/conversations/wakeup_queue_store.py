"""Data access for the tick's view of scheduled wakeups (M9): the DueWakeups index, split by
account so that one account's backlog or pause never hides another's.

The sparse DueWakeups index (`wake_store` HASH, `wake_due` RANGE) holds three kinds of
partition in the work table:

    wake_store = A#<account>   wake_due = <due ms:013d>#<id>    that account's scheduled
                                                                wakeups, oldest first
    wake_store = FIRING        wake_due = <claimed ms:013d>#<id> claimed, not yet recorded
    wake_store = ACCOUNTS      wake_due = <ms:013d>#<account>    the account's marker (its
                                                                SCHEDULER item): look here
                                                                from this time on

The marker's time is a lower bound of the account's earliest scheduled wakeup: scheduling
or rescheduling sets it to 0 (look at once) in the same transaction as the wakeup, and the
tick moves it forward to the earliest wakeup it still finds. A paused account's marker sits
in the PAUSED partition, which nobody reads, so its wakeups cost the tick nothing and are
never claimable; resuming puts it back at 0.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from agentworks import limits
from agentworks.dynamo import DUE_WAKEUPS, condition_failed, from_item, to_item

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

ACCOUNTS = "ACCOUNTS"
PAUSED = "PAUSED"
FIRING = "FIRING"


def account_store(account_id: str) -> str:
    return f"A#{account_id}"


def due_key(due_ms: int, wakeup_id: str) -> str:
    return f"{due_ms:013d}#{wakeup_id}"


def scheduler_key(account_id: str) -> dict[str, str]:
    return {"pk": f"ACCOUNT#{account_id}", "sk": "SCHEDULER"}


def _look_from(ms: int, account_id: str) -> str:
    return f"{ms:013d}#{account_id}"


def marker_touch(table: str, account_id: str, now: int) -> dict[str, Any]:
    """The transaction item that goes with every new or moved wakeup: the tick looks at the
    account from now on (unless it is paused: then the marker stays out of sight)."""
    return {
        "Update": {
            "TableName": table,
            "Key": to_item(scheduler_key(account_id)),
            "UpdateExpression": "SET wake_store = if_not_exists(wake_store, :accounts), "
            "wake_due = :now_key, wake_touched = :now, account_id = :account",
            "ExpressionAttributeValues": to_item(
                {
                    ":accounts": ACCOUNTS,
                    ":now_key": _look_from(0, account_id),
                    ":now": now,
                    ":account": account_id,
                }
            ),
        }
    }


class WakeupQueueStore:
    def __init__(self, client: DynamoDBClient, table: str) -> None:
        self._db = client
        self._table = table

    # ---- the scheduler pause ----

    def paused(self, account_id: str) -> bool:
        response = self._db.get_item(
            TableName=self._table, Key=to_item(scheduler_key(account_id)), ConsistentRead=True
        )
        return bool((from_item(response.get("Item")) or {}).get("paused", False))

    def set_paused(self, account_id: str, paused: bool, by: str, now: int) -> None:
        """Pausing moves the account's marker out of the tick's sight (O(1), whatever the
        number of wakeups); resuming brings it back, to be looked at on the next tick."""
        self._db.update_item(
            TableName=self._table,
            Key=to_item(scheduler_key(account_id)),
            UpdateExpression="SET paused = :paused, updated_by = :by, updated_at = :now, "
            "wake_store = :store, wake_due = :now_key, wake_touched = :now, "
            "account_id = :account",
            ExpressionAttributeValues=to_item(
                {
                    ":account": account_id,
                    ":paused": paused,
                    ":by": by,
                    ":now": now,
                    ":store": PAUSED if paused else ACCOUNTS,
                    ":now_key": _look_from(0, account_id),
                }
            ),
        )

    # ---- what the tick reads ----

    def due_accounts(self, now: int, limit: int) -> list[str]:
        """Accounts (not paused) that may have a wakeup due by `now`, longest waiting first."""
        items, _ = self._range(ACCOUNTS, "0", _look_from(now, "~"), limit, None)
        return [str(data["account_id"]) for data in items]

    def account_due(
        self, account_id: str, now: int, limit: int, start: dict[str, Any] | None
    ) -> tuple[list[tuple[str, str]], dict[str, Any] | None]:
        """(conversation, wake) of the account's wakeups due by `now`, oldest first, one page;
        and where the next page starts (None: no more)."""
        items, more = self._range(account_store(account_id), "0", due_key(now, "~"), limit, start)
        return [_wakeup_ref(data) for data in items], more

    def stale_firing(self, claimed_before: int, limit: int) -> list[tuple[str, str]]:
        """Wakeups claimed before `claimed_before` and never recorded fired."""
        items, _ = self._range(FIRING, "0", f"{claimed_before:013d}#~", limit, None)
        return [_wakeup_ref(data) for data in items]

    def settle_account(self, account_id: str, now: int) -> None:
        """After the tick served the account: its marker moves to its earliest remaining
        wakeup, or out of the index when it has none. The index is eventually consistent, so
        a marker touched within the settle margin is left where it is (a wakeup scheduled
        just now may not show yet): it is looked at again on the next tick."""
        items, _ = self._range(account_store(account_id), "0", "~", 1, None)
        condition = (
            "wake_store = :accounts AND "
            "(attribute_not_exists(wake_touched) OR wake_touched < :settled)"
        )
        values: dict[str, Any] = {
            ":accounts": ACCOUNTS,
            ":settled": now - limits.WAKEUP_INDEX_SETTLE_SECONDS * 1000,
        }
        if items:
            update = "SET wake_due = :next"
            values[":next"] = _look_from(int(str(items[0]["wake_due"]).split("#")[0]), account_id)
        else:
            update = "REMOVE wake_store, wake_due"
        try:
            self._db.update_item(
                TableName=self._table,
                Key=to_item(scheduler_key(account_id)),
                UpdateExpression=update,
                ConditionExpression=condition,
                ExpressionAttributeValues=to_item(values),
            )
        except ClientError as error:
            if not condition_failed(error):
                raise
            # Touched meanwhile, or paused: the marker already says what is true.

    def _range(
        self, store: str, low: str, high: str, limit: int, start: dict[str, Any] | None
    ) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
        query: dict[str, Any] = {
            "TableName": self._table,
            "IndexName": DUE_WAKEUPS,
            "KeyConditionExpression": "wake_store = :store AND wake_due BETWEEN :low AND :high",
            "ExpressionAttributeValues": to_item({":store": store, ":low": low, ":high": high}),
            "Limit": limit,
        }
        if start:
            query["ExclusiveStartKey"] = start
        response = self._db.query(**query)
        items = [from_item(raw) or {} for raw in response["Items"]]
        return items, response.get("LastEvaluatedKey")


def _wakeup_ref(data: dict[str, Any]) -> tuple[str, str]:
    return data["pk"].removeprefix("CREWCONV#"), data["sk"].removeprefix("WAKE#")
