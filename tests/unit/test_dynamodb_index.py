"""The indexed local DynamoDB keeps a request's cost independent of the table's size, and its
TTL index lists exactly the items a scan would find expired."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from decimal import Decimal
from typing import Any

import boto3
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from moto import mock_aws
from moto.core import DEFAULT_ACCOUNT_ID
from moto.dynamodb.models import dynamodb_backends
from moto.dynamodb.models.dynamo_type import Item
from moto.dynamodb.models.table import Table

from agentworks_local import dynamodb_index, moto_patches
from agentworks_local.scheduler import TtlSweeper, TtlTable

REGION = "us-east-1"
TABLE = "t"
HOT = 20  # items in the partition (and GSI partition) the requests read


@contextmanager
def table_of(filler: int) -> Iterator[tuple[Any, Table]]:
    """A table with a hot partition of HOT items and `filler` items in other partitions,
    loaded through moto's backend (as an in-process loader would)."""
    moto_patches.apply()
    with mock_aws():
        client = boto3.client("dynamodb", region_name=REGION)
        client.create_table(
            TableName=TABLE,
            BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[
                {"AttributeName": n, "AttributeType": "S"} for n in ("pk", "sk", "g", "gs")
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
                }
            ],
        )
        backend = dynamodb_backends[DEFAULT_ACCOUNT_ID][REGION]
        for i in range(HOT):
            item = {"pk": "hot", "sk": f"{i:05}", "g": "hot", "gs": f"{i:05}", "n": "0"}
            backend.put_item(TABLE, {k: {"S" if k != "n" else "N": v} for k, v in item.items()})
        for i in range(filler):
            item = {"pk": f"p{i % 500}", "sk": f"{i:06}", "g": f"g{i % 50}", "gs": f"{i:06}"}
            backend.put_item(TABLE, {k: {"S": v} for k, v in item.items()})
        yield client, backend.get_table(TABLE)


def query(client: Any, index: str | None) -> None:
    attr = "g" if index else "pk"
    response = client.query(
        TableName=TABLE,
        KeyConditionExpression=f"{attr} = :h",
        ExpressionAttributeValues={":h": {"S": "hot"}},
        Limit=10,
        **({"IndexName": index} if index else {}),
    )
    assert response["Count"] == 10


def transact(client: Any) -> None:
    client.transact_write_items(
        TransactItems=[
            {
                "Update": {
                    "TableName": TABLE,
                    "Key": {"pk": {"S": "hot"}, "sk": {"S": f"{i:05}"}},
                    "UpdateExpression": "ADD n :one",
                    "ExpressionAttributeValues": {":one": {"N": "1"}},
                }
            }
            for i in (1, 2)
        ]
    )


REQUESTS: dict[str, Callable[[Any], None]] = {
    "query": lambda client: query(client, None),
    "gsi query": lambda client: query(client, "by_g"),
    "transaction": transact,
}


@contextmanager
def counting(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    """Items moto looks at or copies: whole-table sorts, item sizes, item deep copies."""
    counts = {"all_items": 0, "size": 0, "deepcopy": 0}
    for owner, name in ((Table, "all_items"), (Item, "size"), (Item, "__deepcopy__")):
        original = getattr(owner, name)

        def counted(*args: Any, _original: Any = original, _name: str = name) -> Any:
            counts[_name.strip("_")] += 1
            return _original(*args)

        monkeypatch.setattr(owner, name, counted)
    yield counts
    monkeypatch.undo()


def test_a_request_costs_the_same_on_10_000_items_as_on_100(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The work each request does, counted (not timed: latency belongs in `make bench`).
    work: dict[str, list[dict[str, int]]] = {name: [] for name in REQUESTS}
    for filler in (100 - HOT, 10_000 - HOT):
        with table_of(filler) as (client, _):
            for name, request in REQUESTS.items():
                request(client)  # warm
                with counting(monkeypatch) as counts:
                    request(client)
                work[name].append(counts)
    for name in REQUESTS:
        small, large = work[name]
        assert small == large, (name, work)  # the same items looked at and copied
        assert large["all_items"] == 0, name  # no whole-table sort


# -- TTL -------------------------------------------------------------------------------------

NOW = 1_800_000_000
TTL = TtlTable(TABLE, "expires_ttl", ("pk", "sk"))


def test_the_sweeper_deletes_from_the_ttl_index_what_dynamodb_would() -> None:
    ttl_values = {
        "due": {"N": str(NOW)},
        "past": {"N": str(NOW - 3600)},
        "future": {"N": str(NOW + 1)},
        "text": {"S": str(NOW - 3600)},
        "ancient": {"N": str(NOW - 6 * 365 * 24 * 3600)},  # over five years: DynamoDB skips
    }
    with table_of(0) as (client, _table):
        for name, value in ttl_values.items():
            client.put_item(
                TableName=TABLE, Item={"pk": {"S": name}, "sk": {"S": "x"}, "expires_ttl": value}
            )
        client.put_item(TableName=TABLE, Item={"pk": {"S": "none"}, "sk": {"S": "x"}})
        candidates = dynamodb_index.ttl_candidates(DEFAULT_ACCOUNT_ID, REGION)
        scans: list[int] = []
        original_scan = Table.scan
        Table.scan = lambda *a, **k: scans.append(1) or original_scan(*a, **k)  # type: ignore
        try:
            sweeper = TtlSweeper(client, [TTL], lambda: NOW, candidates=candidates)
            assert sweeper.sweep_once() == 2
            assert scans == []  # the sweep read the index, not the table
        finally:
            Table.scan = original_scan  # type: ignore[method-assign]
        left = {
            i["pk"]["S"] for i in client.scan(TableName=TABLE)["Items"] if i["pk"]["S"] != "hot"
        }
        assert left == {"future", "text", "ancient", "none"}
        assert TtlSweeper(client, [TTL], lambda: NOW + 1, candidates=candidates).sweep_once() == 1


ttl_values = st.one_of(
    st.integers(NOW - 5, NOW + 5).map(lambda v: {"N": str(v)}),
    st.just({"N": f"{NOW}.5"}),
    st.just({"S": str(NOW)}),
)
ttl_keys = st.sampled_from(["a", "b", "c", "d"]).map(lambda pk: {"pk": {"S": pk}, "sk": {"S": "x"}})
ttl_ops = st.one_of(
    st.builds(lambda k, v: ("put_item", {"Item": {**k, "expires_ttl": v}}), ttl_keys, ttl_values),
    st.builds(
        lambda k, v: (
            "update_item",
            {
                "Key": k,
                "UpdateExpression": "SET expires_ttl = :v",
                "ExpressionAttributeValues": {":v": v},
            },
        ),
        ttl_keys,
        ttl_values,
    ),
    st.builds(
        lambda k: ("update_item", {"Key": k, "UpdateExpression": "REMOVE expires_ttl"}), ttl_keys
    ),
    st.builds(lambda k: ("delete_item", {"Key": k}), ttl_keys),
    st.builds(  # cancelled: the second part fails, the first is rolled back
        lambda k, v: (
            "transact_write_items",
            {
                "TransactItems": [
                    {"Put": {"TableName": TABLE, "Item": {**k, "expires_ttl": v}}},
                    {
                        "ConditionCheck": {
                            "TableName": TABLE,
                            "Key": {"pk": {"S": "nobody"}, "sk": {"S": "x"}},
                            "ConditionExpression": "attribute_exists(pk)",
                        }
                    },
                ]
            },
        ),
        ttl_keys,
        ttl_values,
    ),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(ttl_ops, max_size=25), st.integers(NOW - 6, NOW + 6))
def test_the_ttl_index_lists_what_a_scan_finds_expired(
    sequence: list[tuple[str, dict[str, Any]]], latest: int
) -> None:
    def indexed() -> set[tuple[str, str]]:
        found = dynamodb_index.expiring(table, "expires_ttl", NOW - 100, latest)
        return {(i.attrs["pk"].value, i.attrs["expires_ttl"].value) for i in found}

    def scanned() -> set[tuple[str, str]]:
        return {
            (i["pk"]["S"], i["expires_ttl"]["N"])
            for i in client.scan(TableName=TABLE)["Items"]
            if "N" in i.get("expires_ttl", {}) and Decimal(i["expires_ttl"]["N"]) <= latest
        }

    with table_of(0) as (client, table):
        assert indexed() == set()  # the TTL index exists before the writes it must follow
        for method, request in sequence:
            request = request if "TransactItems" in request else {"TableName": TABLE, **request}
            with suppress(client.exceptions.TransactionCanceledException):
                getattr(client, method)(**request)
            assert indexed() == scanned(), (method, request)
