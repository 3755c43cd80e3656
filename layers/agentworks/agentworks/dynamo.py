"""Small helpers over the low-level DynamoDB client: item (de)serialization, transactions
whose cancellation reasons are read by item name, and which failures are transient. Stores
own their keys; this module owns no schema."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from decimal import Decimal
from functools import cache
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
    from botocore.exceptions import ClientError
    from mypy_boto3_dynamodb import DynamoDBClient

    from agentworks.errors import AgentWorksError

# The attribute every table's time to live is set on (template.yaml).
TTL_ATTRIBUTE = "expires_ttl"


@cache
def _serializer() -> TypeSerializer:
    # boto3 loads on first use, not at import: handlers' cold start stays small.
    from boto3.dynamodb.types import TypeSerializer

    return TypeSerializer()


@cache
def _deserializer() -> TypeDeserializer:
    from boto3.dynamodb.types import TypeDeserializer

    return TypeDeserializer()


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, set):
        return {_plain(v) for v in value}
    return value


def to_item(data: dict[str, Any]) -> dict[str, Any]:
    """Python values → AttributeValue map. None values are left out."""
    return {k: _serializer().serialize(v) for k, v in data.items() if v is not None}


def to_value(value: Any) -> dict[str, Any]:
    return dict(_serializer().serialize(value))


def from_item(item: dict[str, Any] | None) -> dict[str, Any] | None:
    if not item:
        return None
    return {k: _plain(_deserializer().deserialize(v)) for k, v in item.items()}


def live_item(data: dict[str, Any] | None, now_ms: int) -> dict[str, Any] | None:
    """Hides an item whose TTL has passed: DynamoDB deletes it up to two days later, and
    until then reads and queries still return it."""
    if data is None:
        return None
    ttl = data.get(TTL_ATTRIBUTE)
    return None if ttl is not None and int(ttl) <= now_ms // 1000 else data


def read_item(client: DynamoDBClient, table: str, key: dict[str, Any]) -> dict[str, Any] | None:
    """The item at `key`, read consistently (a write just made is seen), as plain values;
    None when there is none."""
    response = client.get_item(TableName=table, Key=to_item(key), ConsistentRead=True)
    return from_item(response.get("Item"))


def query_items(client: DynamoDBClient, request: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every item a Query answers, as plain values, page after page (boto3's paginator
    follows LastEvaluatedKey)."""
    for page in client.get_paginator("query").paginate(**request):
        for raw in page["Items"]:
            yield from_item(raw) or {}


def items_under(
    client: DynamoDBClient, table: str, pk: str, prefix: str, consistent: bool = False
) -> Iterator[dict[str, Any]]:
    """Every item of partition `pk` whose sort key starts with `prefix` (an account's
    named resources of one kind), as plain values, page after page."""
    yield from query_items(
        client,
        {
            "TableName": table,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
            "ExpressionAttributeValues": to_item({":pk": pk, ":prefix": prefix}),
            "ConsistentRead": consistent,
        },
    )


def applied(write: Callable[..., Any], **request: Any) -> bool:
    """Runs one conditional write (put_item, update_item, delete_item with `request`); False
    when its condition was false, so the caller says what that means."""
    from botocore.exceptions import ClientError

    try:
        write(**request)
    except ClientError as error:
        if condition_failed(error):
            return False
        raise
    return True


# The attribute a `put_claim` item carries its writer's token in.
CLAIM_ATTRIBUTE = "claim"


def put_claim(
    client: DynamoDBClient, table: str, item: dict[str, Any], condition: str, **request: Any
) -> tuple[bool, dict[str, Any] | None]:
    """Puts `item`, which carries a token new to its writer in `CLAIM_ATTRIBUTE`, under
    `condition`, which admits one writer. (True, None) when the stored item is this one;
    (False, the stored item) when it is another writer's; (False, None) when refused with
    no item named. botocore sends a put again when its answer is lost (a 500, a dropped
    connection), and the condition then refuses the very item the first attempt stored:
    its token, returned with the refusal, tells that apart from another writer's."""
    from botocore.exceptions import ClientError

    try:
        client.put_item(
            TableName=table,
            Item=to_item(item),
            ConditionExpression=condition,
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
            **request,
        )
    except ClientError as error:
        if not condition_failed(error):
            raise
        old = from_item(cast(dict[str, Any], error.response).get("Item"))
        if old is not None and old.get(CLAIM_ATTRIBUTE) == item[CLAIM_ATTRIBUTE]:
            return True, None
        return False, old
    return True, None


def condition_failed(error: ClientError) -> bool:
    """A single write refused by its condition (not throttling, not a server error)."""
    return error_code(error) == "ConditionalCheckFailedException"


def _only_transient(codes: set[str]) -> bool:
    """No condition failed; only a conflict or throttling cancelled the transaction."""
    return "ConditionalCheckFailed" not in codes and bool(codes & TRANSIENT_REASONS)


def error_code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


# Reason codes of a cancelled transaction that say nothing about the data: the same
# transaction may commit when sent again.
# The work table's sparse index of items the tick must look at, by when (`wake_store`,
# `wake_due`): wakeups, workflow schedules, runner jobs, waits on external agents' tasks.
DUE_WAKEUPS = "DueWakeups"


def due_key(due_ms: int, name: str) -> str:
    """An item's `wake_due`: when it is due, then its name (equal times in a fixed order)."""
    return f"{due_ms:013d}#{name}"


def due_items(
    client: DynamoDBClient, table: str, store: str, now_ms: int, limit: int
) -> list[dict[str, Any]]:
    """The items of the DueWakeups partition `store` due by `now_ms`, earliest first, as
    plain values. The index is eventually consistent: read each again before deciding."""
    page = client.query(
        TableName=table,
        IndexName=DUE_WAKEUPS,
        KeyConditionExpression="wake_store = :s AND wake_due <= :now",
        ExpressionAttributeValues=to_item({":s": store, ":now": due_key(now_ms, "~")}),
        Limit=limit,
    )
    return [from_item(raw) or {} for raw in page["Items"]]


TRANSIENT_REASONS = frozenset(
    {"TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded"}
)
# Error codes botocore's standard retry mode already retried (and gave up on).
TRANSIENT_ERRORS = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "RequestLimitExceeded",
        "InternalServerError",
        "ServiceUnavailable",
        "TransactionInProgressException",
    }
)
# A cancelled-only-for-conflict transaction is sent this many times in all.
TRANSACTION_ATTEMPTS = 4
_BACKOFF_S = 0.02


class TransactionCancelled(Exception):
    """A transaction refused by a condition: its reasons by item name, not by position."""

    def __init__(self, reasons: dict[str, str], old: dict[str, dict[str, Any] | None]) -> None:
        super().__init__(", ".join(f"{n}={c}" for n, c in reasons.items() if c != "None"))
        self.reasons = reasons
        self.old = old

    def failed(self, name: str) -> bool:
        """The condition on item `name` was false."""
        return self.reasons.get(name) == "ConditionalCheckFailed"

    @property
    def transient(self) -> bool:
        """No condition failed; only a conflict or throttling cancelled it."""
        return _only_transient(set(self.reasons.values()))


def named_cancellation(error: ClientError, names: list[str]) -> TransactionCancelled | None:
    """{item name: reason code} of a cancelled transaction whose items were sent in the order
    of `names`; None for any other error. `old` holds the items returned by
    ReturnValuesOnConditionCheckFailure."""
    if error_code(error) != "TransactionCanceledException":
        return None
    raw: list[dict[str, Any]] = [dict(r) for r in error.response.get("CancellationReasons") or []]
    reasons: dict[str, str] = {}
    old: dict[str, dict[str, Any] | None] = {}
    for name, reason in zip(names, raw, strict=False):
        reasons[name] = str(reason.get("Code") or "None")
        old[name] = from_item(reason.get("Item"))
    return TransactionCancelled(reasons, old)


def transact_write(
    client: DynamoDBClient,
    items: dict[str, dict[str, Any]],
    attempts: int = TRANSACTION_ATTEMPTS,
) -> None:
    """Runs the named items as one TransactWriteItems (at most 100 items).

    A cancellation that only names conflicts or throttling changed nothing, so the same
    transaction is sent again, a few times; if it still cannot commit, `TryAgain` (the
    caller's request may be retried as is). A failed condition raises `TransactionCancelled`
    with the reasons by item name."""
    from botocore.exceptions import ClientError

    from agentworks import limits
    from agentworks.errors import TryAgain

    if len(items) > limits.TRANSACTION_MAX_ITEMS:
        raise ValueError(
            f"a transaction holds at most {limits.TRANSACTION_MAX_ITEMS} items, not {len(items)}"
        )
    names = list(items)
    for attempt in range(attempts):
        try:
            client.transact_write_items(TransactItems=list(items.values()))  # type: ignore[arg-type]
            return
        except ClientError as error:
            cancelled = named_cancellation(error, names)
            if cancelled is None:
                raise
            if not cancelled.transient:
                raise cancelled from None
        if attempt + 1 < attempts:
            # Jittered: two transactions that conflicted must not meet again at once.
            time.sleep(random.uniform(0, _BACKOFF_S * 2**attempt))
    raise TryAgain("The store is busy with concurrent changes to the same items; retry shortly.")


def is_transient(error: ClientError) -> bool:
    """Throttling or a server error that outlasted botocore's retries, or a transaction
    cancelled only by conflicts: nothing to fix in the request, it may succeed later."""
    if error_code(error) in TRANSIENT_ERRORS:
        return True
    if error_code(error) != "TransactionCanceledException":
        return False
    raw = error.response.get("CancellationReasons") or []
    return _only_transient({str(r.get("Code") or "None") for r in raw})


def retry_later(error: ClientError) -> AgentWorksError | None:
    """The domain error a surface answers for a transient store failure, else None."""
    from agentworks.errors import TryAgain

    if not is_transient(error):
        return None
    return TryAgain("The store is busy (throttled or unavailable) right now; retry shortly.")
