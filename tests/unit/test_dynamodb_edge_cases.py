"""Cases the random sequences of test_dynamodb_differential.py reach rarely: cancelled
transactions and their stream records, GSIs added and removed, pages ended by the 1 MB limit,
tables without a sort key. Each compares the indexed table with moto's original code."""

from __future__ import annotations

import random
from typing import Any

import pytest

from tests.unit.test_dynamodb_differential import (
    GS,
    INDEXED,
    NUMS,
    ORIGINAL,
    SKS,
    TABLE,
    N,
    S,
    counting_moto_queries,
    delete_request,
    key,
    outcome,
    put_request,
    stream_of,
    two_tables,
    update_request,
)


def test_a_cancelled_transaction_leaves_items_indexes_and_stream_as_before() -> None:
    with two_tables() as clients:
        for client in clients:
            client.put_item(TableName=TABLE, Item={**key("a", "x"), "g": S("g1"), "gs": N("1")})
        cancel = {
            "TransactItems": [
                {"Update": update_request(key("a", "x"), ("SET g = :u", {":u": S("g2")}), None)},
                {"Put": put_request({**key("a", "y"), "g": S("g2"), "gs": N("2")}, None)},
                {"Delete": delete_request(key("a", "z"), ("attribute_exists(pk)", {}, {}))},
            ]
        }
        results = [outcome(c, "transact_write_items", cancel) for c in clients]
        assert results[0] == results[1]
        assert results[0][1] == "TransactionCanceledException"
        by_g2 = (
            "query",
            {
                "TableName": TABLE,
                "IndexName": "by_g",
                "KeyConditionExpression": "g = :g",
                "ExpressionAttributeValues": {":g": S("g2")},
            },
        )
        assert [outcome(c, *by_g2) for c in clients] == [
            [{"Count": 0, "ScannedCount": 0, "Items": []}]
        ] * 2
        streams = [stream_of(region) for region in (INDEXED, ORIGINAL)]
        assert streams[0] == streams[1]
        assert [name for name, _ in streams[0]] == ["INSERT"]


def _gsi(name: str, hash_attr: str, range_attr: str) -> dict[str, Any]:
    return {
        "IndexName": name,
        "KeySchema": [
            {"AttributeName": hash_attr, "KeyType": "HASH"},
            {"AttributeName": range_attr, "KeyType": "RANGE"},
        ],
        "Projection": {"ProjectionType": "ALL"},
    }


GSI_CHANGES: dict[str, tuple[list[dict[str, Any]], str, str]] = {
    # change: (GlobalSecondaryIndexUpdates, index queried, its hash attribute)
    "add": ([{"Create": _gsi("by_h", "h", "gs")}], "by_h", "h"),
    "delete": ([{"Delete": {"IndexName": "by_g"}}], "by_g", "g"),
    # The same name and hash key, another range key: the order must follow the new one.
    "replace": (
        [{"Delete": {"IndexName": "by_g"}}, {"Create": _gsi("by_g", "g", "n")}],
        "by_g",
        "g",
    ),
}


@pytest.mark.parametrize("change", list(GSI_CHANGES))
def test_indexes_follow_a_table_whose_gsis_change(change: str) -> None:
    updates, index, hash_attr = GSI_CHANGES[change]
    with two_tables() as clients:
        for client in clients:
            for i, sk in enumerate(SKS):
                item = {**key("a", sk), "g": S("g1"), "h": S("g1"), "gs": N(str(i))}
                client.put_item(TableName=TABLE, Item={**item, "n": N(str(-i))})
            client.update_table(
                TableName=TABLE,
                AttributeDefinitions=[
                    {"AttributeName": name, "AttributeType": kind}
                    for name, kind in (("g", "S"), ("h", "S"), ("gs", "N"), ("n", "N"))
                ],
                GlobalSecondaryIndexUpdates=updates,
            )
        query = {
            "TableName": TABLE,
            "IndexName": index,
            "KeyConditionExpression": f"{hash_attr} = :v",
            "ExpressionAttributeValues": {":v": S("g1")},
            "Limit": 3,
        }
        with counting_moto_queries() as moto_answered:
            results = [outcome(c, "query", query) for c in clients]
        assert results[0] == results[1]
        if change != "delete":
            assert sum(p["Count"] for p in results[0]) == len(SKS)
            assert moto_answered[INDEXED] == 0  # the new index was built and used


@pytest.mark.parametrize("forward", [True, False])
@pytest.mark.parametrize("index", [None, "by_g"])
def test_pages_end_at_the_1mb_limit_alike(index: str | None, forward: bool) -> None:
    """moto ends a page before the item that would take it past 1 MB, even an item that does
    not match the key condition."""
    with two_tables() as clients:
        for client in clients:
            for i, sk in enumerate(SKS):
                blob = S("v" * (150_000 + 35_000 * i))
                item = {**key("a", sk), "g": S("g1"), "gs": N(str(i)), "blob": blob}
                client.put_item(TableName=TABLE, Item=item)
        attr, value, bound = ("g", "g1", ("gs", N("5"))) if index else ("pk", "a", ("sk", S("y")))
        for condition in ("", f" AND {bound[0]} {'<' if forward else '>'} :b"):
            request: dict[str, Any] = {
                "TableName": TABLE,
                "KeyConditionExpression": f"{attr} = :h{condition}",
                "ExpressionAttributeValues": {
                    ":h": S(value),
                    **({":b": bound[1]} if condition else {}),
                },
                "ScanIndexForward": forward,
                "ProjectionExpression": "pk, sk",
                **({"IndexName": index} if index else {}),
            }
            pages = [outcome(c, "query", request) for c in clients]
            assert pages[0] == pages[1]
            assert len(pages[0]) > 1  # the size limit did end pages


def test_a_page_near_1mb_ends_where_moto_ends_it() -> None:
    """Past the matching keys a page still ends before any key that would take it past 1 MB:
    here the second key after the matching ones, not the first."""
    sizes = {"x": 350_000, "x1": 350_000, "x2": 10_000, "xa": 390_000, "y": 10}
    with two_tables() as clients:
        for client in clients:
            for sk, size in sizes.items():
                client.put_item(TableName=TABLE, Item={**key("a", sk), "blob": S("v" * size)})
        request = {
            "TableName": TABLE,
            "KeyConditionExpression": "pk = :h AND sk < :b",
            "ExpressionAttributeValues": {":h": S("a"), ":b": S("x2")},
            "ProjectionExpression": "sk",
        }
        pages = [outcome(c, "query", request) for c in clients]
        assert pages[0] == pages[1]
        assert [p["Count"] for p in pages[0]] == [2, 0]


def test_a_table_with_a_hash_key_only_is_read_alike() -> None:
    """No sort key: moto orders an index's ties by the table's hash key (twice, for an index
    without a range key)."""
    chance = random.Random(7)
    with two_tables() as clients:
        requests: list[tuple[str, dict[str, Any]]] = []
        for client in clients:
            client.create_table(
                TableName="h",
                BillingMode="PAY_PER_REQUEST",
                AttributeDefinitions=[
                    {"AttributeName": n, "AttributeType": k}
                    for n, k in (("pk", "S"), ("g", "S"), ("gs", "N"))
                ],
                KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
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
                        "IndexName": "g_only",
                        "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                        "Projection": {"ProjectionType": "ALL"},
                    },
                ],
            )
        for i in range(40):
            item = {"pk": S(f"p{i % 25}"), "g": S(chance.choice(GS))}
            if chance.random() < 0.8:
                item["gs"] = N(chance.choice(NUMS))
            requests.append(("put_item", {"TableName": "h", "Item": item}))
        for i in range(0, 25, 4):
            update = {
                "UpdateExpression": "SET g = :g",
                "ExpressionAttributeValues": {":g": S("g2")},
            }
            requests.append(
                ("update_item", {"TableName": "h", "Key": {"pk": S(f"p{i}")}, **update})
            )
            requests.append(("delete_item", {"TableName": "h", "Key": {"pk": S(f"p{i + 1}")}}))
        for index, condition in (("by_g", " AND gs > :n"), ("by_g", ""), ("g_only", "")):
            for value, forward in ((g, f) for g in GS for f in (True, False)):
                query = {
                    "TableName": "h",
                    "IndexName": index,
                    "KeyConditionExpression": f"g = :g{condition}",
                    "ExpressionAttributeValues": {
                        ":g": S(value),
                        **({":n": N("1")} if condition else {}),
                    },
                    "ScanIndexForward": forward,
                    "Limit": 2,
                }
                requests.append(("query", query))
        for i in range(25):
            base = {
                "KeyConditionExpression": "pk = :p",
                "ExpressionAttributeValues": {":p": S(f"p{i}")},
            }
            requests.append(("query", {"TableName": "h", **base}))
        with counting_moto_queries() as moto_answered:
            for method, request in requests:
                assert outcome(clients[0], method, request) == outcome(clients[1], method, request)
        assert moto_answered[INDEXED] == 0
