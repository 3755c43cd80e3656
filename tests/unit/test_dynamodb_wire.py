"""The compiled DynamoDB wire format is moto's own: the same requests with the fast path on and
off give identical parsed boto3 responses, identical errors and byte-identical bodies."""

from __future__ import annotations

import urllib.request
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from moto import mock_aws
from moto.core import serialize

from agentworks_cli.localstack import dynamodb_wire, moto_patches

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


def test_every_operation_answers_as_moto_does() -> None:
    with wire(enabled=False) as call:
        slow = scenario(call)
    with wire(enabled=True) as call:
        fast = scenario(call)
    assert [kind for kind, _, _ in fast].count("error") >= 8
    for number, (expected, actual) in enumerate(zip(slow, fast, strict=True)):
        assert actual[:2] == expected[:2], number
        assert actual[2] == expected[2], number  # the same bytes, key order included


def test_moto_server_answers_as_moto_does() -> None:
    """The same over loopback HTTP, as `agentworks dev` serves DynamoDB."""
    from moto.server import ThreadedMotoServer

    moto_patches.apply()
    answers = {}
    for enabled in (False, True):
        server = ThreadedMotoServer(port=0, verbose=False)
        server.start()
        dynamodb_wire.enabled = enabled
        try:
            host, port = server.get_host_and_port()
            # The in-process server shares moto's backends: start each run from nothing.
            reset = f"http://{host}:{port}/moto-api/reset"
            urllib.request.urlopen(reset, data=b"").close()
            client = boto3.client(
                "dynamodb",
                region_name="us-east-1",
                endpoint_url=f"http://{host}:{port}",
                aws_access_key_id="local",
                aws_secret_access_key="local",
            )
            create_tables(client)
            answers[enabled] = scenario(Recorder(client))
            urllib.request.urlopen(reset, data=b"").close()  # and leave nothing behind
        finally:
            dynamodb_wire.enabled = True
            server.stop()
    assert answers[True] == answers[False]


def test_an_empty_map_key_keeps_moto_answer() -> None:
    """moto writes a value held under an empty map key into the map itself, which boto3
    cannot parse; the fast path leaves that response to moto rather than answer otherwise."""
    item = {**key("a", "1"), "m": {"M": {"": S("v"), "k": N("1")}}}
    bodies = {}
    for enabled in (False, True):
        with wire(enabled=enabled) as call:
            seen: list[bytes] = []
            keep = seen.append
            call.client.meta.events.register(
                "before-parse.dynamodb",
                lambda response_dict, keep=keep, **_: keep(response_dict["body"]),
            )
            call.client.put_item(TableName=TABLE, Item=item)
            with pytest.raises(AttributeError):
                call.client.get_item(TableName=TABLE, Key=key("a", "1"))
            bodies[enabled] = seen[-1]
    assert bodies[True] == bodies[False]
    assert b'"S": "v"' in bodies[True] and b'""' not in bodies[True]


def test_the_fast_path_is_the_one_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison above compares two code paths, not moto's serializer with itself."""
    serialized: list[str] = []
    original = serialize.JSONSerializer.serialize

    def counted(self: Any, result: Any) -> Any:
        serialized.append(self.operation_name)
        return original(self, result)

    monkeypatch.setattr(serialize.JSONSerializer, "serialize", counted)
    with wire(enabled=True) as call:
        scenario(call)
    assert call.outcomes.count("ok") > 40
    outcomes = list(zip(call.names, call.outcomes, strict=True))
    assert {name for name, kind in outcomes if kind == "ok"} == dynamodb_wire.OPERATIONS
    # A successful data-plane answer never takes moto's serializer; only errors may.
    errors = Counter(name for name, kind in outcomes if kind == "error")
    for name, times in Counter(serialized).items():
        if name in dynamodb_wire.OPERATIONS:
            assert times <= errors[name], name
    assert serialized.count("CreateTable") == 2


def test_requests_parse_as_moto_parses(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each request of the scenario, parsed by both parsers: the same parameters."""
    from moto.core.responses import BaseResponse
    from moto.dynamodb.responses import DynamoHandler

    compared: list[str] = []

    def both(self: Any, request: Any) -> None:
        BaseResponse.parse_parameters(self, request)
        expected = self.params
        del self.params
        dynamodb_wire._parse_parameters(self, request)
        assert self.params == expected
        assert repr(self.params) == repr(expected)  # key order and types too
        compared.append(self._get_action())

    with wire(enabled=True) as call:
        monkeypatch.setattr(DynamoHandler, "parse_parameters", both)
        scenario(call)
    assert set(compared) >= dynamodb_wire.OPERATIONS


def test_switching_off_restores_moto() -> None:
    moto_patches.apply()
    from moto.dynamodb.responses import DynamoHandler

    try:
        dynamodb_wire.uninstall()
        assert "serialized" not in vars(DynamoHandler)
        assert "parse_parameters" not in vars(DynamoHandler)
    finally:
        dynamodb_wire.install()
    assert vars(DynamoHandler)["serialized"] is dynamodb_wire._serialized


# -- random items --------------------------------------------------------------------------

text = st.text(st.characters(blacklist_categories=["Cs"]), max_size=12)
number = st.one_of(
    st.integers(-(10**38) + 1, 10**38 - 1).map(str),
    st.from_regex(r"-?[1-9][0-9]{0,20}\.[0-9]{1,15}", fullmatch=True),
)
blob = st.binary(min_size=1, max_size=12)
scalars = st.one_of(
    st.builds(S, text),
    st.builds(N, number),
    st.builds(lambda b: {"B": b}, blob),
    st.builds(lambda v: {"SS": v}, st.lists(text, min_size=1, max_size=4, unique=True)),
    st.builds(lambda v: {"NS": v}, st.lists(number, min_size=1, max_size=4, unique=True)),
    st.builds(lambda v: {"BS": v}, st.lists(blob, min_size=1, max_size=4, unique=True)),
    st.builds(lambda v: {"BOOL": v}, st.booleans()),
    st.just({"NULL": True}),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.builds(lambda v: {"L": v}, st.lists(inner, max_size=4)),
        # No empty keys: moto mangles those (test_an_empty_map_key_keeps_moto_answer).
        st.builds(lambda v: {"M": v}, st.dictionaries(text.filter(bool), inner, max_size=4)),
    ),
    max_leaves=12,
)
attributes = st.dictionaries(
    st.text(min_size=1, max_size=8).filter(lambda name: name not in ("pk", "sk", "g", "ls")),
    values,
    max_size=6,
)


@pytest.fixture(scope="module")
def shared() -> Iterator[Recorder]:
    with wire(enabled=True) as call:
        yield call


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(attrs=attributes)
def test_random_items_cross_the_wire_as_moto_carries_them(
    shared: Recorder, attrs: dict[str, Any]
) -> None:
    call = shared
    item = {**key("h", "r"), **attrs}
    try:
        dynamodb_wire.enabled = True
        call("put_item", TableName=TABLE, Item=item)  # stored as the compiled parser reads it
        reads = {}
        for enabled in (True, False):
            dynamodb_wire.enabled = enabled
            reads[enabled] = [
                call("get_item", TableName=TABLE, Key=key("h", "r")),
                call(
                    "query",
                    TableName=TABLE,
                    KeyConditionExpression="pk = :h",
                    ExpressionAttributeValues={":h": S("h")},
                    ReturnConsumedCapacity="TOTAL",
                ),
            ]
        # moto's parser stores it again, answering with the first copy through moto's
        # serializer; then the compiled parser, answering with moto's copy, compiled.
        dynamodb_wire.enabled = False
        slow = call("put_item", TableName=TABLE, Item=item, ReturnValues="ALL_OLD")
        dynamodb_wire.enabled = True
        fast = call("put_item", TableName=TABLE, Item=item, ReturnValues="ALL_OLD")
    finally:
        dynamodb_wire.enabled = True
    assert reads[True] == reads[False]
    assert fast == slow
    if fast[0] == "ok":
        assert fast[1]["Attributes"] == item
        assert reads[True][0][1]["Item"] == item
