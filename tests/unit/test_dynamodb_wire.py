"""The compiled DynamoDB wire format is moto's own: the same requests with the fast path on and
off give identical parsed boto3 responses, identical errors and byte-identical bodies."""

from __future__ import annotations

import urllib.request
from collections import Counter
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from moto.core import serialize

from agentworks_local import dynamodb_wire, moto_patches
from tests.support.dynamodb_wire_scenario import (
    TABLE,
    N,
    Recorder,
    S,
    create_tables,
    key,
    scenario,
    wire,
)


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
