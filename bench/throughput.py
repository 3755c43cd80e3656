"""Messages per second through the handlers, against raw boto3 on the same moto.

moto's DynamoDB slows down as a table grows (its Query sorts every item of the table),
so both sides run on tables holding the same number of items, each in its own table set
created from template.yaml, and both grow by one message per iteration.

- handlers: `ext` sends one 1 KB message into an existing inbox, then `bob` reads his
  inbox from his cursor (one API function invocation per request, token checked inside);
- raw: one `put_item` of a same-sized message item, then one `query` from the last key;
- raw, same requests: the DynamoDB requests the handlers make (authentication GetItem, the
  conversation head Query (META + newest message), conditional PutItem of the message;
  then GetItem, head Query, page Query, and the presence refresh of the reader's name —
  an UpdateItem of its connection, as sends are more than a minute apart), so the gap to
  it is the handlers' own Python.
"""

from __future__ import annotations

import time
from typing import Any

from agentworks_local.template import create_resources
from bench.request_costs import BODY, SEND_SPACING_S
from bench.stack import Stack, open_stack
from tests.support.clock import FakeClock

_BATCH = 25  # BatchWriteItem's maximum


def _count(oracle: Any, table: str) -> int:
    total, kwargs = 0, {"TableName": table, "Select": "COUNT"}
    while True:
        page = oracle.scan(**kwargs)
        total += page["Count"]
        if "LastEvaluatedKey" not in page:
            return total
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def _seed(client: Any, table: str, count: int, tag: str) -> None:
    """`count` message-sized items, each in its own conversation partition."""
    for start in range(0, count, _BATCH):
        requests = [
            {
                "PutRequest": {
                    "Item": {
                        "pk": {"S": f"CONV#SEED{tag}{i:08d}"},
                        "sk": {"S": "M#0000000001"},
                        "to_side": {"S": "b"},
                        "sender": {"S": "external"},
                        "body": {"S": BODY},
                        "created_at": {"N": "1812345678901"},
                    }
                }
            }
            for i in range(start, min(start + _BATCH, count))
        ]
        client.batch_write_item(RequestItems={table: requests})


def _handler_rate(stack: Stack, iterations: int, table_items: int) -> tuple[float, int]:
    """Messages/s of send + read through the handlers; returns the starting table size too."""
    admin = stack.admin_token
    ext = stack.call("POST", "/v1/connections", admin, {"name": "ext"}).body["token"]
    bob = stack.call("POST", "/v1/connections", admin, {"name": "bob-conn"}).body["token"]
    stack.call("POST", "/v1/agents", bob, {"agent_name": "bob"})
    first = stack.call("POST", "/v1/messages", ext, {"message": BODY, "target": "agent:bob"})
    inbox = first.body["inbox_id"]
    mailbox = stack.call("GET", "/v1/messages", bob, query={"agent_name": "bob"}).body
    bob_inbox = mailbox["messages"][0]["reply_address"]
    table = stack.settings.messages_table
    _seed(stack.client, table, table_items - _count(stack.oracle, table), "H")
    size = _count(stack.oracle, table)
    query = {"inbox_id": bob_inbox, "agent_name": "bob", "limit": 10}
    cursor = stack.call("GET", "/v1/messages", bob, query=query).body["next_cursor"]
    assert isinstance(stack.clock, FakeClock)
    started = time.perf_counter()
    for _ in range(iterations):
        stack.clock.advance(SEND_SPACING_S)
        stack.call("POST", "/v1/messages", ext, {"message": BODY, "inbox_id": inbox})
        page = stack.call("GET", "/v1/messages", bob, query={**query, "after": cursor}).body
        assert len(page["messages"]) == 1, page
        cursor = page["next_cursor"]
    return iterations / (time.perf_counter() - started), size


def message_item(pk: dict[str, str], seq: int) -> dict[str, Any]:
    return {
        "pk": pk,
        "sk": {"S": f"M#{seq:010d}"},
        "to_side": {"S": "b"},
        "sender": {"S": "external"},
        "body": {"S": BODY},
        "created_at": {"N": "1812345678901"},
        "receipt": {"S": "stored"},
        "expires_ttl": {"N": "1812950478"},
    }


def _read_one(client: Any, table: str, pk: dict[str, str], seq: int) -> None:
    found = client.query(
        TableName=table,
        KeyConditionExpression="pk = :pk AND sk BETWEEN :first AND :last",
        FilterExpression="to_side = :side",
        ExpressionAttributeValues={
            ":pk": pk,
            ":first": {"S": f"M#{seq:010d}"},
            ":last": {"S": "M#9999999999"},
            ":side": {"S": "b"},
        },
        Limit=1,
        ConsistentRead=True,
    )["Items"]
    assert found[0]["sk"]["S"] == f"M#{seq:010d}"


def _head(client: Any, table: str, pk: dict[str, str]) -> None:
    client.query(
        TableName=table,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": pk},
        ScanIndexForward=False,
        Limit=2,
        ConsistentRead=True,
    )


def _raw_tables(session: Any, prefix: str, table_items: int) -> tuple[Any, str, str, int]:
    tables = create_resources(session, prefix=prefix).tables
    client = session.client("dynamodb")
    messages = tables["MessagesTable"]
    _seed(client, messages, table_items, "R")
    return client, messages, tables["IdentityTable"], _count(client, messages)


def _raw_rate(session: Any, iterations: int, table_items: int) -> tuple[float, int]:
    """Messages/s of put_item + query with plain boto3 on a table of the same size."""
    client, table, _, size = _raw_tables(session, "bench-raw", table_items)
    pk = {"S": "CONV#RAW"}
    started = time.perf_counter()
    for seq in range(1, iterations + 1):
        client.put_item(TableName=table, Item=message_item(pk, seq))
        _read_one(client, table, pk, seq)
    return iterations / (time.perf_counter() - started), size


def _same_requests_rate(session: Any, iterations: int, table_items: int) -> tuple[float, int]:
    """Messages/s of the handlers' own DynamoDB requests, issued with plain boto3."""
    client, table, identity, size = _raw_tables(session, "bench-same", table_items - 1)
    token_key = {"pk": {"S": "ACCOUNT#a"}, "sk": {"S": "CONN#c"}}
    consent = {"M": {"bob": {"M": {"id": {"S": "agt_b"}}}}}
    client.put_item(
        TableName=identity,
        Item={**token_key, "scopes": {"SS": ["messages:send"]}, "acting_as": consent},
    )
    pk = {"S": "CONV#RAW"}
    meta = {"pk": pk, "sk": {"S": "META"}}
    client.put_item(TableName=table, Item={**meta, "account_id": {"S": "a"}})
    size += 1
    started = time.perf_counter()
    for seq in range(1, iterations + 1):
        client.get_item(TableName=identity, Key=token_key, ConsistentRead=True)
        _head(client, table, pk)
        client.put_item(
            TableName=table,
            Item=message_item(pk, seq),
            ConditionExpression="attribute_not_exists(pk)",
        )
        client.get_item(TableName=identity, Key=token_key, ConsistentRead=True)
        _head(client, table, pk)
        _read_one(client, table, pk, seq)
        # Sends are SEND_SPACING_S apart, so every read as bob refreshes his presence.
        _touch(client, identity, token_key, seq)
    return iterations / (time.perf_counter() - started), size


def _touch(client: Any, identity: str, token_key: dict[str, Any], at: int) -> None:
    client.update_item(
        TableName=identity,
        Key=token_key,
        UpdateExpression="SET acting_as.#n.seen = :now",
        ConditionExpression="acting_as.#n.id = :id",
        ExpressionAttributeNames={"#n": "bob"},
        ExpressionAttributeValues={":now": {"N": str(at)}, ":id": {"S": "agt_b"}},
    )


def measure(iterations: int = 60, table_items: int = 1_000) -> dict[str, float]:
    """Call inside mock_aws(); opens its own tables."""
    stack = open_stack("bench-tp", FakeClock())
    handler_rate, handler_size = _handler_rate(stack, iterations, table_items)
    raw_rate, raw_size = _raw_rate(stack.session, iterations, handler_size)
    same_rate, same_size = _same_requests_rate(stack.session, iterations, handler_size)
    assert raw_size == handler_size == same_size
    return {
        "throughput_handlers_msgs_per_s": handler_rate,
        "throughput_boto3_msgs_per_s": raw_rate,
        "throughput_ratio_vs_boto3": handler_rate / raw_rate,
        "throughput_boto3_same_requests_msgs_per_s": same_rate,
        "throughput_ratio_vs_boto3_same_requests": handler_rate / same_rate,
        "throughput_table_items": float(handler_size),
    }
