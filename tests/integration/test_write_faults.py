"""Every write path under the faults real DynamoDB produces and moto does not: throttling and
server errors (retried by botocore's standard mode: 4 retries), and transactions cancelled
for `TransactionConflict` (retried by `transact_write`). Each path either succeeds as if
nothing happened or answers `503 unavailable_retry` with a retry hint; afterwards the tables
hold no leaked slot, no half-written item and no duplicate, and the same request sent again
succeeds exactly once (M1, M2, M4, A2, A3, F2, F4, F5, F7, M9).

The injected faults are counted by `faults.injected`; every test asserts that its faults
really fired, so none can pass by missing its target.
"""

from __future__ import annotations

from typing import Any

import pytest

from agentworks import limits
from agentworks.dynamo import TRANSACTION_ATTEMPTS, from_item
from tests.support.faults import touches

THROTTLES = ["ProvisionedThroughputExceededException", "ThrottlingException", "InternalServerError"]
CONFLICT = ["None", "TransactionConflict"]
TERMINAL = {"succeeded", "failed", "interrupted", "cancelled"}


def items(stack: Any, table: str, pk: str = "", sk: str = "") -> list[dict[str, Any]]:
    """Every item of a table whose keys start so (read without faults: a plain scan)."""
    found: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"TableName": table}
    while True:
        page = stack.client.scan(**kwargs)
        for raw in page["Items"]:
            data = from_item(raw) or {}
            if str(data.get("pk", "")).startswith(pk) and str(data.get("sk", "")).startswith(sk):
                found.append(data)
        if "LastEvaluatedKey" not in page:
            return found
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def snapshot(stack: Any) -> dict[str, list[dict[str, Any]]]:
    tables = (stack.settings.identity_table, stack.settings.messages_table)
    return {t: sorted(items(stack, t), key=lambda d: (d["pk"], d["sk"])) for t in tables}


def retry_later(reply: Any) -> None:
    assert reply.status == 503, reply.body
    assert reply.body["error"]["code"] == "unavailable_retry", reply.body
    assert reply.body["error"]["retry_after"] >= 1
    assert reply.headers.get("Retry-After") == str(reply.body["error"]["retry_after"])


# ---- messages: send, first contact, register -------------------------------------------


def _pair(api: Any, agents: Any) -> tuple[str, str, str]:
    worker, reviewer = agents.named("worker"), agents.named("reviewer")
    sent = api("POST", "/v1/messages", worker, {"target": "agent:reviewer", "message": "start"})
    assert sent.status == 201, sent.body
    return worker, reviewer, sent.body["inbox_id"]


def _messages(stack: Any) -> list[dict[str, Any]]:
    return items(stack, stack.settings.messages_table, pk="CONV#", sk="M#")


@pytest.mark.parametrize("error", THROTTLES)
def test_m1_a_send_throttled_once_is_retried_by_the_client(api, stack, agents, faults, error):
    worker, _, inbox = _pair(api, agents)
    fault = faults.fail("PutItem", error, where=touches(pk="CONV#", sk="M#"))
    sent = api("POST", "/v1/messages", worker, {"inbox_id": inbox, "message": "two"})
    assert sent.status == 201, sent.body
    assert fault.injected == 1 and faults.backoff  # botocore backed off, then it went in
    assert [m["body"] for m in _messages(stack)] == ["start", "two"]


@pytest.mark.parametrize("error", THROTTLES)
def test_m2_a_send_throttled_past_the_retries_is_503_and_its_retry_stores_once(
    api, stack, agents, faults, error
):
    worker, _, inbox = _pair(api, agents)
    fault = faults.exhaust("PutItem", error, where=touches(pk="CONV#", sk="M#"))
    request = {"inbox_id": inbox, "message": "two", "submission_id": "s-1"}
    retry_later(api("POST", "/v1/messages", worker, request))
    assert fault.injected == faults.max_attempts == 5  # the first try and 4 retries
    assert [m["body"] for m in _messages(stack)] == ["start"]  # nothing half-written
    # The submission id was given back, so the same request goes in now, once.
    assert items(stack, stack.settings.messages_table, pk="SUB#") == []
    sent = api("POST", "/v1/messages", worker, request)
    assert sent.status == 201 and not sent.body.get("replayed"), sent.body
    again = api("POST", "/v1/messages", worker, request)
    assert again.body["replayed"] is True and again.body["message_id"] == sent.body["message_id"]
    assert [m["body"] for m in _messages(stack)] == ["start", "two"]


def test_m1_a_send_whose_answer_was_lost_is_stored_once(api, stack, agents, faults):
    """The put committed and botocore sent it again after a 500: the retry's condition finds
    the seq taken — by this very message — so it is not stored a second time."""
    worker, _, inbox = _pair(api, agents)
    fault = faults.fail(
        "PutItem", "InternalServerError", where=touches(pk="CONV#", sk="M#"), commit_first=True
    )
    sent = api("POST", "/v1/messages", worker, {"inbox_id": inbox, "message": "two"})
    assert fault.injected == 1
    assert sent.status == 201, sent.body
    assert [m["body"] for m in _messages(stack)] == ["start", "two"]


def _first_contact(api: Any, token: str, **extra: Any) -> Any:
    return api(
        "POST", "/v1/messages", token, {"target": "agent:reviewer", "message": "hi", **extra}
    )


def _conversations(stack: Any) -> list[dict[str, Any]]:
    return items(stack, stack.settings.messages_table, pk="CONV#", sk="META")


def _counters(stack: Any) -> dict[str, int]:
    found = items(stack, stack.settings.messages_table, sk="COUNTERS")
    return {d["pk"]: int(d.get("inboxes", 0)) for d in found}


def test_m1_a_first_contact_cancelled_for_a_conflict_is_sent_again(api, stack, agents, faults):
    worker, reviewer = agents.named("worker"), agents.named("reviewer")
    fault = faults.fail(
        "TransactWriteItems",
        "TransactionCanceledException",
        reasons=["None", "None", "None", "TransactionConflict", "None", "None"],
        where=touches(pk="CONV#"),
        times=TRANSACTION_ATTEMPTS - 1,
    )
    sent = _first_contact(api, worker)
    assert sent.status == 201, sent.body
    assert fault.injected == TRANSACTION_ATTEMPTS - 1
    mailbox = api("GET", "/v1/messages", reviewer, query={"agent_name": "reviewer"}).body
    assert [m["body"] for m in mailbox["messages"]] == ["hi"]
    assert len(_conversations(stack)) == 1 and set(_counters(stack).values()) == {1}


@pytest.mark.parametrize(
    "reasons",
    [
        ["None", "None", "None", "TransactionConflict", "None", "None"],
        ["ThrottlingError", "None", "None", "None", "None", "None"],
        ["None", "None", "None", "None", "ProvisionedThroughputExceeded", "None"],
    ],
)
def test_m1_a_first_contact_that_cannot_commit_is_503_not_a_busy_mailbox(
    api, stack, agents, faults, reasons
):
    worker, reviewer = agents.named("worker"), agents.named("reviewer")
    before = snapshot(stack)
    fault = faults.fail(
        "TransactWriteItems",
        "TransactionCanceledException",
        reasons=reasons,
        where=touches(pk="CONV#"),
        times=100,
    )
    reply = _first_contact(api, worker, submission_id="fc-1")
    retry_later(reply)
    assert "too busy" not in reply.body["error"]["message"]
    assert fault.injected == TRANSACTION_ATTEMPTS  # a few sends, not 100 × 12 s of them
    assert snapshot(stack) == before  # no conversation, no count, no binding left
    faults.clear()
    sent = _first_contact(api, worker, submission_id="fc-1")
    assert sent.status == 201, sent.body
    assert _first_contact(api, worker, submission_id="fc-1").body["replayed"] is True
    assert len(_conversations(stack)) == 1 and set(_counters(stack).values()) == {1}
    mailbox = api("GET", "/v1/messages", reviewer, query={"agent_name": "reviewer"}).body
    assert len(mailbox["messages"]) == 1


def test_m1_a_first_contact_whose_answer_was_lost_is_the_send(api, stack, agents, faults):
    """The transaction committed and botocore sent it again after a 500: the retry finds its
    own conversation id taken, which means this very send went in (once)."""
    worker, reviewer = agents.named("worker"), agents.named("reviewer")
    fault = faults.fail(
        "TransactWriteItems", "InternalServerError", where=touches(pk="CONV#"), commit_first=True
    )
    sent = _first_contact(api, worker, submission_id="fc-lost")
    assert fault.injected == 1
    assert sent.status == 201, sent.body
    assert _first_contact(api, worker, submission_id="fc-lost").body["replayed"] is True
    mailbox = api("GET", "/v1/messages", reviewer, query={"agent_name": "reviewer"}).body
    assert [m["body"] for m in mailbox["messages"]] == ["hi"]
    assert len(_conversations(stack)) == 1 and set(_counters(stack).values()) == {1}


def test_m4_register_under_conflict_then_throttling(api, stack, agents, faults):
    token = agents.connection("agent-conn")["token"]
    conflict = faults.fail(
        "TransactWriteItems",
        "TransactionCanceledException",
        reasons=["TransactionConflict", "None", "None", "None"],
        where=touches(sk="AGENT#"),
    )
    assert api("POST", "/v1/agents", token, {"agent_name": "first"}).status == 200
    assert conflict.injected == 1
    before = snapshot(stack)
    throttle = faults.exhaust(
        "TransactWriteItems", "ProvisionedThroughputExceededException", where=touches(sk="AGENT#")
    )
    retry_later(api("POST", "/v1/agents", token, {"agent_name": "second"}))
    assert throttle.injected == faults.max_attempts
    assert snapshot(stack) == before  # no name, no count, no consent on the connection
    faults.clear()
    assert api("POST", "/v1/agents", token, {"agent_name": "second"}).status == 200
    names = items(stack, stack.settings.messages_table, sk="AGENT#")
    assert sorted(n["name"] for n in names) == ["first", "second"]
    counted = items(stack, stack.settings.messages_table, sk="COUNTERS")
    assert {int(c.get("agents", 0)) for c in counted} == {2}


def test_m4_a_register_whose_answer_was_lost_counts_the_name_once(api, stack, agents, faults):
    token = agents.connection("agent-conn")["token"]
    lost = faults.fail(
        "TransactWriteItems", "InternalServerError", where=touches(sk="AGENT#"), commit_first=True
    )
    assert api("POST", "/v1/agents", token, {"agent_name": "first"}).status == 200
    assert lost.injected == 1
    assert len(items(stack, stack.settings.messages_table, sk="AGENT#")) == 1
    counted = items(stack, stack.settings.messages_table, sk="COUNTERS")
    assert {int(c.get("agents", 0)) for c in counted} == {1}
    assert api("GET", "/v1/whoami", token).status == 200


# ---- connections: create and revoke ----------------------------------------------------


def _live_count(stack: Any) -> list[int]:
    accounts = items(stack, stack.settings.identity_table, sk="ACCOUNT")
    return [int(a.get("live_connections", 0)) for a in accounts]


def test_a2_a3_connection_create_and_revoke_under_conflicts_and_throttling(api, stack, faults):
    admin = stack.admin_token
    on_connections = touches(stack.settings.identity_table, sk="CONN#")
    conflict = faults.fail(
        "TransactWriteItems",
        "TransactionCanceledException",
        reasons=["TransactionConflict", "None"],
        where=on_connections,
    )
    created = api("POST", "/v1/connections", admin, {"name": "one"})
    assert created.status == 201 and conflict.injected == 1
    counted = _live_count(stack)
    before = snapshot(stack)
    faults.exhaust("TransactWriteItems", "ThrottlingException", where=on_connections)
    retry_later(api("POST", "/v1/connections", admin, {"name": "two"}))
    assert snapshot(stack) == before  # no connection, no place taken
    faults.clear()
    connection_id = created.body["connection_id"]
    revoke = faults.exhaust("TransactWriteItems", "InternalServerError", where=on_connections)
    retry_later(api("DELETE", f"/v1/connections/{connection_id}", admin))
    assert revoke.injected == faults.max_attempts
    # Not revoked, and the caller was told so (never a silent success).
    assert api("GET", "/v1/whoami", created.body["token"]).status == 200
    assert _live_count(stack) == counted
    faults.clear()
    lost = faults.fail(
        "TransactWriteItems", "InternalServerError", where=on_connections, commit_first=True
    )
    assert api("DELETE", f"/v1/connections/{connection_id}", admin).status in (200, 204)
    assert lost.injected == 1  # revoked, answer lost, sent again: revoked once
    assert api("GET", "/v1/whoami", created.body["token"]).status == 401
    assert _live_count(stack) == [c - 1 for c in counted]


# ---- transactions stay within 100 items ------------------------------------------------


def _checks(stack: Any, n: int) -> dict[str, dict[str, Any]]:
    return {
        f"c{i}": {
            "ConditionCheck": {
                "TableName": stack.settings.work_table,
                "Key": {"pk": {"S": f"LIMIT#{i}"}, "sk": {"S": "X"}},
                "ConditionExpression": "attribute_not_exists(pk)",
            }
        }
        for i in range(n)
    }


def test_a_transaction_of_100_items_commits_and_101_is_refused_before_sending(stack, faults):
    from agentworks.dynamo import transact_write

    transact_write(stack.client, _checks(stack, limits.TRANSACTION_MAX_ITEMS))
    sent = faults.fail("TransactWriteItems", "InternalServerError", times=0)
    with pytest.raises(ValueError, match="at most 100 items"):
        transact_write(stack.client, _checks(stack, limits.TRANSACTION_MAX_ITEMS + 1))
    assert sent.matched == 0  # refused here, not by DynamoDB


def test_m5_replacing_a_full_allow_list_stays_within_100_items_per_transaction(api, stack, agents):
    """A name allowed for its registering connection and 50 others, re-registered with 50
    different ones: 1 update + 50 grants + 50 revokes = 101 items. The revokes go first (one
    transaction under the same version check), so a failure between leaves less authority."""
    owner = agents.connection("owner")
    admin = stack.admin_token
    made = [
        api("POST", "/v1/connections", admin, {"name": f"c{i}"}).body["connection_id"]
        for i in range(2 * limits.ALLOWED_CONNECTIONS_MAX)
    ]
    old, new = made[: limits.ALLOWED_CONNECTIONS_MAX], made[limits.ALLOWED_CONNECTIONS_MAX :]
    sizes: list[int] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        sizes.append(len(params["TransactItems"]))

    stack.client.meta.events.register("provide-client-params.dynamodb.TransactWriteItems", record)
    register = {"agent_name": "shared", "allowed_connection_ids": old}
    assert api("POST", "/v1/agents", owner["token"], register).status == 200
    replaced = api(
        "POST",
        "/v1/agents",
        owner["token"],
        {"agent_name": "shared", "allowed_connection_ids": new},
    )
    assert replaced.status == 200, replaced.body
    assert max(sizes) <= limits.TRANSACTION_MAX_ITEMS
    assert sizes[-2:] == [1 + limits.ALLOWED_CONNECTIONS_MAX] * 2  # revokes, then grants
    connections = {
        c["connection_id"]: c for c in items(stack, stack.settings.identity_table, sk="CONN#")
    }
    assert all("shared" not in connections[c]["acting_as"] for c in old)
    assert all("shared" in connections[c]["acting_as"] for c in new)
    assert "shared" in connections[owner["connection_id"]]["acting_as"]


def test_mcp_a_throttled_send_is_an_unavailable_retry_result(stack, faults):
    """The MCP surface answers the same error as HTTP, never `internal` or a traceback."""
    from tests.integration.test_mcp_handler import (
        McpCaller,
        connection,
        load_handler_module,
        text_of,
    )

    app = load_handler_module()
    worker = McpCaller(app, connection(stack, "worker"))
    worker.ok(action="register", agent_name="worker")
    reviewer = McpCaller(app, connection(stack, "reviewer"))
    reviewer.ok(action="register", agent_name="reviewer")
    fault = faults.exhaust("TransactWriteItems", "ThrottlingException", where=touches(pk="CONV#"))
    result = worker.tool(action="send", target="agent:reviewer", message="hi")
    assert fault.injected == faults.max_attempts
    assert result["isError"] is True
    assert result["structuredContent"]["error"]["code"] == "unavailable_retry"
    assert "Traceback" not in text_of(result)
