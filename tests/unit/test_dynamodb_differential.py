"""The indexed local DynamoDB is the same DynamoDB: random sequences of writes, transactions
and queries give identical responses and identical errors on an indexed table and on one that
takes moto's original code (the same process, another region)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import boto3
from botocore.exceptions import ClientError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from moto import mock_aws
from moto.core import DEFAULT_ACCOUNT_ID
from moto.dynamodb.models import dynamodb_backends

from agentworks_local import dynamodb_index, dynamodb_query, moto_patches

INDEXED, ORIGINAL = "us-east-1", "eu-west-1"
TABLE = "t"

PKS = ["a", "b"]
SKS = ["x", "x1", "x2", "xa", "y", "ya", "z", "é"]
GS = ["g1", "g2"]
NUMS = ["1", "01", "1.5", "2", "10", "-3", "0"]
LS = ["l1", "l2", "m"]


def create_table(client: Any) -> None:
    client.create_table(
        TableName=TABLE,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": name, "AttributeType": kind}
            for name, kind in (("pk", "S"), ("sk", "S"), ("g", "S"), ("gs", "N"), ("ls", "S"))
        ],
        KeySchema=[
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "by_g",
                "KeySchema": [
                    {"AttributeName": "g", "KeyType": "HASH"},
                    {"AttributeName": "gs", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            },
            {
                "IndexName": "g_only",  # no range key: moto orders by the table's sort key
                "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
            },
        ],
        LocalSecondaryIndexes=[
            {
                "IndexName": "by_ls",
                "KeySchema": [
                    {"AttributeName": "pk", "KeyType": "HASH"},
                    {"AttributeName": "ls", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["n"]},
            }
        ],
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
    )


# -- operations: (client method, kwargs) ---------------------------------------------------

S = lambda v: {"S": v}  # noqa: E731
N = lambda v: {"N": v}  # noqa: E731


def key(pk: str, sk: str) -> dict[str, Any]:
    return {"pk": S(pk), "sk": S(sk)}


keys = st.builds(key, st.sampled_from(PKS), st.sampled_from(SKS))


@st.composite
def items(draw: st.DrawFn) -> dict[str, Any]:
    item = key(draw(st.sampled_from(PKS)), draw(st.sampled_from(SKS)))
    for name, values, kind in (("g", GS, S), ("gs", NUMS, N), ("ls", LS, S), ("n", NUMS, N)):
        if draw(st.integers(0, 3)):  # mostly present: indexes hold most items
            item[name] = kind(draw(st.sampled_from(values)))
    if draw(st.booleans()):
        item["blob"] = S("v" * draw(st.integers(0, 40)))
    return item


# A condition: (expression, names, values); None for none.
conditions = st.one_of(
    st.none(),
    st.just(("attribute_not_exists(pk)", {}, {})),
    st.just(("attribute_exists(pk)", {}, {})),
    st.builds(lambda v: ("#n < :c", {"#n": "n"}, {":c": N(v)}), st.sampled_from(NUMS)),
    st.builds(lambda v: ("g = :c", {}, {":c": S(v)}), st.sampled_from(GS)),
    st.builds(lambda v: ("gs >= :c", {}, {":c": N(v)}), st.sampled_from(NUMS)),
)


def with_condition(request: dict[str, Any], condition: Any) -> dict[str, Any]:
    if condition is not None:
        expression, names, values = condition
        request["ConditionExpression"] = expression
        if names:
            request["ExpressionAttributeNames"] = {**request.get("ExpressionAttributeNames", {})}
            request["ExpressionAttributeNames"].update(names)
        if values:
            request["ExpressionAttributeValues"] = {
                **request.get("ExpressionAttributeValues", {}),
                **values,
            }
    return request


updates = st.one_of(
    st.builds(lambda v: ("SET g = :u", {":u": S(v)}), st.sampled_from(GS)),
    st.builds(lambda v: ("SET gs = :u", {":u": N(v)}), st.sampled_from(NUMS)),
    st.builds(lambda v: ("ADD gs :u", {":u": N(v)}), st.sampled_from(NUMS)),
    st.builds(lambda v: ("SET ls = :u REMOVE g", {":u": S(v)}), st.sampled_from(LS)),
    st.just(("REMOVE gs, ls", {})),
    st.builds(
        lambda g, v: ("SET g = :u, gs = :w", {":u": S(g), ":w": N(v)}),
        st.sampled_from(GS),
        st.sampled_from(NUMS),
    ),
    st.builds(lambda v: ("SET n = :u", {":u": N(v)}), st.sampled_from(NUMS)),
)


def put_request(item: dict[str, Any], condition: Any) -> dict[str, Any]:
    return with_condition({"TableName": TABLE, "Item": item}, condition)


def update_request(k: dict[str, Any], update: Any, condition: Any) -> dict[str, Any]:
    expression, values = update
    request: dict[str, Any] = {"TableName": TABLE, "Key": k, "UpdateExpression": expression}
    if values:
        request["ExpressionAttributeValues"] = values
    return with_condition(request, condition)


def delete_request(k: dict[str, Any], condition: Any) -> dict[str, Any]:
    return with_condition({"TableName": TABLE, "Key": k}, condition)


puts = st.builds(lambda i, c: ("put_item", put_request(i, c)), items(), conditions)
update_ops = st.builds(
    lambda k, u, c, r: ("update_item", {**update_request(k, u, c), "ReturnValues": r}),
    keys,
    updates,
    conditions,
    st.sampled_from(["NONE", "ALL_NEW", "UPDATED_OLD"]),
)
deletes = st.builds(lambda k, c: ("delete_item", delete_request(k, c)), keys, conditions)

transact_parts = st.one_of(
    st.builds(lambda i, c: {"Put": put_request(i, c)}, items(), conditions),
    st.builds(lambda k, u, c: {"Update": update_request(k, u, c)}, keys, updates, conditions),
    st.builds(lambda k, c: {"Delete": delete_request(k, c)}, keys, conditions),
    st.builds(
        lambda k, c, r: {
            "ConditionCheck": {
                **delete_request(k, c or ("attribute_exists(pk)", {}, {})),
                "ReturnValuesOnConditionCheckFailure": r,
            }
        },
        keys,
        conditions,
        st.sampled_from(["NONE", "ALL_OLD"]),
    ),
)
transacts = st.builds(
    lambda parts: ("transact_write_items", {"TransactItems": parts}),
    st.lists(transact_parts, min_size=1, max_size=4),
)
# Cancelled for sure (the last part fails): what the others wrote must be undone.
cancelled = st.builds(
    lambda parts, r: (
        "transact_write_items",
        {
            "TransactItems": [
                *parts,
                {
                    "ConditionCheck": {
                        **delete_request(key("nobody", "x"), ("attribute_exists(pk)", {}, {})),
                        "ReturnValuesOnConditionCheckFailure": r,
                    }
                },
            ]
        },
    ),
    st.lists(transact_parts, min_size=1, max_size=3),
    st.sampled_from(["NONE", "ALL_OLD"]),
)
batches = st.builds(
    lambda parts: ("batch_write_item", {"RequestItems": {TABLE: parts}}),
    st.lists(
        st.one_of(
            st.builds(lambda i: {"PutRequest": {"Item": i}}, items()),
            st.builds(lambda k: {"DeleteRequest": {"Key": k}}, keys),
        ),
        min_size=1,
        max_size=5,
    ),
)


# A key condition on the range attribute: (expression fragment, values), {} for none.
def range_conditions(attr: str, values: list[str], kind: Any) -> st.SearchStrategy[Any]:
    value = st.sampled_from(values).map(kind)
    prefix = st.sampled_from(["x", "y", "x1", "é", "l", "z"]).map(S)
    options = [
        st.just(("", {})),
        *(
            st.builds(lambda v, op=op: (f" AND {attr} {op} :r1", {":r1": v}), value)
            for op in ("=", "<", "<=", ">", ">=")
        ),
        st.builds(
            lambda a, b: (f" AND {attr} BETWEEN :r1 AND :r2", {":r1": a, ":r2": b}), value, value
        ),
    ]
    if kind is S:
        options.append(st.builds(lambda p: (f" AND begins_with({attr}, :r1)", {":r1": p}), prefix))
    return st.one_of(*options)


filters: st.SearchStrategy[Any] = st.one_of(
    st.none(),
    st.just(("attribute_exists(n)", {})),
    st.builds(lambda v: ("n > :f", {":f": N(v)}), st.sampled_from(NUMS)),
)
projections = st.sampled_from([None, "pk, sk, g", "sk, n, gs"])


@st.composite
def queries(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    index = draw(st.sampled_from([None, "by_g", "g_only", "by_ls"]))
    if index in ("by_g", "g_only"):
        hash_attr, hash_value = "g", S(draw(st.sampled_from(GS)))
    else:
        hash_attr, hash_value = "pk", S(draw(st.sampled_from(PKS)))
    if index == "by_g":
        fragment, values = draw(range_conditions("gs", NUMS, N))
    elif index == "by_ls":
        fragment, values = draw(range_conditions("ls", LS, S))
    elif index is None:
        fragment, values = draw(range_conditions("sk", SKS, S))
    else:
        fragment, values = "", {}
    request: dict[str, Any] = {
        "TableName": TABLE,
        "KeyConditionExpression": f"{hash_attr} = :h{fragment}",
        "ExpressionAttributeValues": {":h": hash_value, **values},
        "ScanIndexForward": draw(st.booleans()),
    }
    if index:
        request["IndexName"] = index
    if draw(st.booleans()):
        request["Limit"] = draw(st.integers(1, 4))
    found = draw(filters)
    if found:
        request["FilterExpression"] = found[0]
        request["ExpressionAttributeValues"].update(found[1])
    projection = draw(projections)
    select = draw(st.sampled_from([None, None, "COUNT"]))
    if projection and select is None:
        request["ProjectionExpression"] = projection
    if select:
        request["Select"] = select
    if index == "by_ls" and draw(st.booleans()):
        request["ConsistentRead"] = True
    return "query", request


KEY_CONDITIONS = (
    "{} = :b",
    "{} < :b",
    "{} <= :b",
    "{} > :b",
    "{} >= :b",
    "{} BETWEEN :c AND :b",
    "begins_with({}, :b)",
)


def every_partition() -> Iterator[tuple[str, dict[str, Any]]]:
    """Each partition of the table and its indexes, read both ways: in pages of two; in pages
    of one up to a bound short of either end (a full last page before keys that do not match
    still carries a LastEvaluatedKey in moto); with each key condition operator."""
    for index, attr, values, sort in (
        (None, "pk", PKS, ("sk", S("xa"), S("x1"))),
        ("by_ls", "pk", PKS, ("ls", S("l2"), S("l1"))),
        ("by_g", "g", GS, ("gs", N("1.5"), N("0"))),
        ("g_only", "g", GS, None),
    ):
        for value, forward in ((v, f) for v in values for f in (True, False)):
            request = {
                "TableName": TABLE,
                "KeyConditionExpression": f"{attr} = :h",
                "ExpressionAttributeValues": {":h": S(value)},
                "ScanIndexForward": forward,
                "Limit": 2,
                **({"IndexName": index} if index else {}),
            }
            yield "query", request
            if sort is None:
                continue
            bounded = f"{attr} = :h AND {sort[0]} {'<' if forward else '>'} :b"
            values_of = {":h": S(value), ":b": sort[1]}
            yield (
                "query",
                {
                    **request,
                    "KeyConditionExpression": bounded,
                    "ExpressionAttributeValues": values_of,
                    "Limit": 1,
                },
            )
            if value != values[0]:
                continue
            for condition in KEY_CONDITIONS:  # every operator, on values items hold
                bound, lower = sort[1], sort[2]
                if "begins_with" in condition:
                    if "S" not in bound:
                        continue
                    bound = S(bound["S"][:1])
                conditioned: dict[str, Any] = {
                    **request,
                    "KeyConditionExpression": f"{attr} = :h AND " + condition.format(sort[0]),
                    "ExpressionAttributeValues": {":h": S(value), ":b": bound, ":c": lower},
                }
                if ":c" not in condition:
                    del conditioned["ExpressionAttributeValues"][":c"]
                del conditioned["Limit"]
                yield "query", conditioned


gets = st.builds(lambda k: ("get_item", {"TableName": TABLE, "Key": k}), keys)
scans = st.builds(lambda limit: ("scan", {"TableName": TABLE, "Limit": limit}), st.integers(1, 50))
operations = st.one_of(
    puts,
    puts,
    update_ops,
    update_ops,
    deletes,
    transacts,
    cancelled,
    batches,
    queries(),
    queries(),
    queries(),
    gets,
    scans,
)


# -- running ---------------------------------------------------------------------------------


def outcome(client: Any, method: str, request: dict[str, Any]) -> Any:
    """The response (every page, for query and scan) or the error, without request metadata."""
    pages = []
    request = dict(request)
    try:
        while True:
            response = getattr(client, method)(**request)
            response.pop("ResponseMetadata", None)
            pages.append(response)
            if method not in ("query", "scan") or "LastEvaluatedKey" not in response:
                return pages
            assert len(pages) < 100, "pagination does not end"
            request["ExclusiveStartKey"] = response["LastEvaluatedKey"]
    except ClientError as error:
        body = error.response
        return (
            pages,
            body["Error"].get("Code"),
            body["Error"].get("Message"),
            body.get("CancellationReasons"),
        )


@contextmanager
def two_tables() -> Iterator[tuple[Any, Any]]:
    moto_patches.apply()
    with mock_aws(), dynamodb_index.unindexed(DEFAULT_ACCOUNT_ID, ORIGINAL):
        indexed, original = (boto3.client("dynamodb", region_name=r) for r in (INDEXED, ORIGINAL))
        for client in (indexed, original):
            create_table(client)
        yield indexed, original


@contextmanager
def counting_moto_queries() -> Iterator[dict[str, int]]:
    """How many queries moto's own code answered, per region."""
    counts = {INDEXED: 0, ORIGINAL: 0}
    original = dynamodb_query._original[0]

    def counted(table: Any, *args: Any, **kwargs: Any) -> Any:
        counts[table.region_name] += 1
        return original(table, *args, **kwargs)

    dynamodb_query._original[0] = counted
    try:
        yield counts
    finally:
        dynamodb_query._original[0] = original


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    st.lists(items(), min_size=5, max_size=30),
    st.lists(operations, min_size=3, max_size=30),
)
def test_indexed_and_original_moto_answer_every_sequence_alike(
    seed: list[dict[str, Any]], sequence: list[tuple[str, dict[str, Any]]]
) -> None:
    with two_tables() as (indexed, original), counting_moto_queries() as moto_answered:
        for item in seed:  # partitions with several items, so pages and ties happen
            for client in (indexed, original):
                client.put_item(TableName=TABLE, Item=item)
        for method, request in sequence:
            expected = outcome(original, method, request)
            assert outcome(indexed, method, request) == expected, (method, request)
        for method, request in [("scan", {"TableName": TABLE}), *every_partition()]:
            assert outcome(indexed, method, request) == outcome(original, method, request)
        assert stream_of(INDEXED) == stream_of(ORIGINAL)  # cancelled writes left no record
    # The indexed side answered every query itself: the comparison was not moto against moto.
    assert moto_answered[INDEXED] == 0
    assert moto_answered[ORIGINAL] >= sum(1 for m, _ in sequence if m == "query") > 0 or (
        "query" not in {m for m, _ in sequence}
    )


def stream_of(region: str) -> list[Any]:
    """The table's stream records, less their ids, times and sizes (which count the time)."""
    shard = dynamodb_backends[DEFAULT_ACCOUNT_ID][region].get_table(TABLE).stream_shard
    assert shard is not None
    varying = {"ApproximateCreationDateTime", "SizeBytes"}
    return [
        (r.record["eventName"], {k: v for k, v in r.record["dynamodb"].items() if k not in varying})
        for r in shard.items
    ]
