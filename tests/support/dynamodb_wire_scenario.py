"""A scripted run of every DynamoDB data-plane operation, recorded call by call, for the
tests that hold the local wire fast path (agentworks_local/dynamodb_wire.py) to moto's own."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import boto3
from botocore.exceptions import ClientError
from moto import mock_aws

from agentworks_local import dynamodb_wire, moto_patches

TABLE, BINARY = "t", "bin"

S = lambda v: {"S": v}  # noqa: E731
N = lambda v: {"N": v}  # noqa: E731


def key(pk: str, sk: str) -> dict[str, Any]:
    return {"pk": S(pk), "sk": S(sk)}


RICH: dict[str, Any] = {
    **key("a", "1"),
    "g": S("g1"),
    "ls": S("l1"),
    "s": S('héllo ✓ 𝄞 "quoted" \\ \n'),
    "empty": S(""),
    "big": N("12345678901234567890123456789012345678"),
    "neg": N("-98765.4321"),
    "tiny": N("0.000000000000000000000000000000000001"),
    "b": {"B": b"\xff\x00\x80\xfe binary"},
    "bs": {"BS": [b"\x00", b"\xc3\x28", b"\xff\xff"]},
    "ss": {"SS": ["x", "é", "𝄞"]},
    "ns": {"NS": ["1", "-2.5", "1E+3"]},
    "t": {"BOOL": True},
    "f": {"BOOL": False},
    "null": {"NULL": True},
    "l": {"L": [S("x"), N("2"), {"B": b"\x81"}, {"L": []}, {"M": {}}, {"NULL": True}]},
    "m": {"M": {"nested": {"M": {"deep": {"L": [{"BS": [b"\x01"]}, {"SS": ["y"]}]}}}, "e": S("")}},
    "emptyl": {"L": []},
    "emptym": {"M": {}},
}


def create_tables(client: Any) -> None:
    client.create_table(
        TableName=TABLE,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": name, "AttributeType": "S"} for name in ("pk", "sk", "g", "ls")
        ],
        KeySchema=[
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "by_g",
                "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
        LocalSecondaryIndexes=[
            {
                "IndexName": "by_ls",
                "KeySchema": [
                    {"AttributeName": "pk", "KeyType": "HASH"},
                    {"AttributeName": "ls", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
    )
    client.create_table(
        TableName=BINARY,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "B"}],
        KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
    )


class Recorder:
    """A boto3 client whose every call is kept as (parsed response or error, raw body)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.bodies: list[bytes] = []
        self.names: list[str] = []
        self.outcomes: list[str] = []
        client.meta.events.register("after-call.dynamodb", self._keep)

    def _keep(self, http_response: Any, **_: Any) -> None:
        self.bodies.append(http_response.content)

    def __call__(self, method: str, **kwargs: Any) -> tuple[str, dict[str, Any], bytes]:
        try:
            response = getattr(self.client, method)(**kwargs)
            kind = "ok"
        except ClientError as error:
            response, kind = dict(error.response), "error"
        response.pop("ResponseMetadata", None)
        self.names.append(self.client.meta.method_to_api_mapping[method])
        self.outcomes.append(kind)
        return kind, response, self.bodies[-1]


@contextmanager
def wire(enabled: bool) -> Iterator[Recorder]:
    moto_patches.apply()
    before = dynamodb_wire.enabled
    dynamodb_wire.enabled = enabled
    try:
        with mock_aws():
            client = boto3.client("dynamodb", region_name="us-east-1")
            create_tables(client)
            yield Recorder(client)
    finally:
        dynamodb_wire.enabled = before


def scenario(call: Recorder) -> list[tuple[str, dict[str, Any], bytes]]:
    """Every data-plane operation, with the return-value and capacity variants and errors."""
    out = []
    page = {"TableName": TABLE, "KeyConditionExpression": "pk = :p"}
    a = {":p": S("a")}
    out.append(call("put_item", TableName=TABLE, Item=RICH))
    out.append(call("put_item", TableName=TABLE, Item=RICH, ReturnValues="ALL_OLD"))
    for capacity in ("NONE", "TOTAL", "INDEXES"):
        item = {**RICH, **key("a", f"cap-{capacity}")}
        out.append(call("put_item", TableName=TABLE, Item=item, ReturnConsumedCapacity=capacity))
    for sk in ("2", "3", "4"):
        out.append(call("put_item", TableName=TABLE, Item={**key("a", sk), "n": N(sk)}))
    out.append(call("put_item", TableName=BINARY, Item={"k": {"B": b"\xff\xfe"}, "v": N("1")}))
    out.append(call("put_item", TableName=BINARY, Item={"k": {"B": b"\x00"}, "v": N("2")}))
    # GetItem: present, missing, projected, with capacity.
    out.append(call("get_item", TableName=TABLE, Key=key("a", "1")))
    out.append(call("get_item", TableName=TABLE, Key=key("a", "missing")))
    out.append(
        call(
            "get_item",
            TableName=TABLE,
            Key=key("a", "1"),
            ProjectionExpression="#s, big, m.nested, l[2], bs",
            ExpressionAttributeNames={"#s": "s"},
            ConsistentRead=True,
        )
    )
    for capacity in ("TOTAL", "INDEXES"):
        out.append(
            call("get_item", TableName=TABLE, Key=key("a", "1"), ReturnConsumedCapacity=capacity)
        )
        out.append(
            call("get_item", TableName=TABLE, Key=key("z", "1"), ReturnConsumedCapacity=capacity)
        )
    out.append(call("get_item", TableName=BINARY, Key={"k": {"B": b"\xff\xfe"}}))
    # Query: pages with LastEvaluatedKey, counts, projections, indexes, capacity.
    first = call("query", **page, ExpressionAttributeValues=a, Limit=2)
    out.append(first)
    out.append(
        call(
            "query",
            **page,
            ExpressionAttributeValues=a,
            Limit=2,
            ExclusiveStartKey=first[1]["LastEvaluatedKey"],
        )
    )
    out.append(call("query", **page, ExpressionAttributeValues=a, Select="COUNT"))
    out.append(call("query", **page, ExpressionAttributeValues=a, ScanIndexForward=False))
    out.append(
        call("query", **page, ExpressionAttributeValues=a, ProjectionExpression="sk, n, b, m")
    )
    out.append(
        call(
            "query",
            **page,
            ExpressionAttributeValues={**a, ":n": N("2")},
            FilterExpression="n > :n",
            ReturnConsumedCapacity="TOTAL",
        )
    )
    out.append(
        call(
            "query",
            TableName=TABLE,
            IndexName="by_g",
            KeyConditionExpression="g = :g",
            ExpressionAttributeValues={":g": S("g1")},
            ReturnConsumedCapacity="INDEXES",
            Limit=1,
        )
    )
    out.append(
        call(
            "query",
            TableName=TABLE,
            IndexName="by_ls",
            KeyConditionExpression="pk = :p AND ls = :l",
            ExpressionAttributeValues={**a, ":l": S("l1")},
            ReturnConsumedCapacity="INDEXES",
        )
    )
    out.append(
        call(
            "query",
            **page,
            ExpressionAttributeValues={":p": S("nobody")},
            ReturnConsumedCapacity="TOTAL",
        )
    )
    # Scan: pages, counts, a binary-keyed table.
    out.append(call("scan", TableName=TABLE, Limit=3))
    out.append(call("scan", TableName=TABLE, Select="COUNT"))
    out.append(call("scan", TableName=BINARY, Limit=1, ReturnConsumedCapacity="INDEXES"))
    out.append(call("scan", TableName=BINARY))
    # UpdateItem: every ReturnValues, on present and absent items.
    for returns in ("NONE", "ALL_OLD", "ALL_NEW", "UPDATED_OLD", "UPDATED_NEW"):
        out.append(
            call(
                "update_item",
                TableName=TABLE,
                Key=key("a", "1"),
                UpdateExpression="SET n = if_not_exists(n, :z) + :one, m.nested.x = :b "
                "ADD ss :ss REMOVE f",
                ExpressionAttributeValues={
                    ":z": N("0"),
                    ":one": N("1"),
                    ":b": {"B": b"\x9f"},
                    ":ss": {"SS": [returns]},
                },
                ReturnValues=returns,
                ReturnConsumedCapacity="TOTAL",
            )
        )
        out.append(
            call(
                "update_item",
                TableName=TABLE,
                Key=key("new", returns),
                UpdateExpression="SET v = :v",
                ExpressionAttributeValues={":v": {"L": [{"B": b"\xee"}, S("")]}},
                ReturnValues=returns,
            )
        )
    # DeleteItem: old values, none, missing.
    out.append(call("delete_item", TableName=TABLE, Key=key("a", "2"), ReturnValues="ALL_OLD"))
    out.append(call("delete_item", TableName=TABLE, Key=key("a", "3")))
    out.append(
        call(
            "delete_item",
            TableName=TABLE,
            Key=key("a", "missing"),
            ReturnValues="ALL_OLD",
            ReturnConsumedCapacity="TOTAL",
        )
    )
    # Batches.
    out.append(
        call(
            "batch_write_item",
            RequestItems={
                TABLE: [
                    {"PutRequest": {"Item": {**RICH, **key("batch", "1")}}},
                    {"PutRequest": {"Item": key("batch", "2")}},
                    {"DeleteRequest": {"Key": key("a", "4")}},
                ],
                BINARY: [{"DeleteRequest": {"Key": {"k": {"B": b"\x00"}}}}],
            },
            ReturnConsumedCapacity="TOTAL",
        )
    )
    out.append(
        call(
            "batch_get_item",
            RequestItems={
                TABLE: {"Keys": [key("batch", "1"), key("batch", "missing"), key("a", "1")]},
                BINARY: {"Keys": [{"k": {"B": b"\xff\xfe"}}]},
            },
            ReturnConsumedCapacity="TOTAL",
        )
    )
    out.append(
        call(
            "batch_get_item",
            RequestItems={
                TABLE: {
                    "Keys": [key("batch", "1")],
                    "ProjectionExpression": "#b, pk",
                    "ExpressionAttributeNames": {"#b": "b"},
                }
            },
        )
    )
    # Transactions.
    for capacity in ("NONE", "TOTAL", "INDEXES"):
        out.append(
            call(
                "transact_get_items",
                TransactItems=[
                    {"Get": {"TableName": TABLE, "Key": key("a", "1")}},
                    {"Get": {"TableName": TABLE, "Key": key("a", "missing")}},
                    {"Get": {"TableName": BINARY, "Key": {"k": {"B": b"\xff\xfe"}}}},
                ],
                ReturnConsumedCapacity=capacity,
            )
        )
    out.append(
        call(
            "transact_write_items",
            TransactItems=[
                {"Put": {"TableName": TABLE, "Item": {**RICH, **key("tx", "1")}}},
                {
                    "Update": {
                        "TableName": TABLE,
                        "Key": key("a", "1"),
                        "UpdateExpression": "SET tx = :t",
                        "ExpressionAttributeValues": {":t": {"BS": [b"\xaa"]}},
                    }
                },
                {"Delete": {"TableName": TABLE, "Key": key("batch", "2")}},
            ],
            ReturnConsumedCapacity="TOTAL",
        )
    )
    # Errors, including those that carry items back.
    out.append(
        call(
            "transact_write_items",
            TransactItems=[
                {
                    "ConditionCheck": {
                        "TableName": TABLE,
                        "Key": key("a", "1"),
                        "ConditionExpression": "attribute_not_exists(pk)",
                        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                    }
                },
                {"Put": {"TableName": TABLE, "Item": key("tx", "2")}},
            ],
        )
    )
    out.append(
        call(
            "put_item",
            TableName=TABLE,
            Item=RICH,
            ConditionExpression="attribute_not_exists(pk)",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
    )
    out.append(call("get_item", TableName="absent", Key=key("a", "1")))
    out.append(call("get_item", TableName=TABLE, Key={"pk": S("a")}))
    out.append(call("query", **page, ExpressionAttributeValues=a, Select="NOT_A_SELECT"))
    out.append(call("put_item", TableName=TABLE, Item=RICH, ReturnValues="ALL_NEW"))
    out.append(call("update_item", TableName=TABLE, Key=key("a", "1"), UpdateExpression="SET"))
    out.append(call("scan", TableName=TABLE, Segment=1))
    return out
