"""Usage and cost per account (issue 12, item 4): the counters match what a scripted run
did, through the real handlers (API, step runner on Step Functions, push and notifier fed
by the messages table's real stream), and only an unbounded admin of the account sees them.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import boto3

from agentworks import limits, prices
from agentworks.dynamo import from_item
from agentworks.item_size import item_size
from agentworks.usage.costs import estimate
from agentworks.usage.counts import Counts, day_of
from tests.integration.crew_support import CONTRACTS, wait_for
from tests.support.handlers import LambdaContext, load_handler
from tests.support.streams import StreamReader

TERMINAL = {"succeeded", "failed", "interrupted"}


def _ws_event(route: str, ws_id: str, token: str | None = None, **query: str) -> dict:
    headers = {"host": "push.local"} | ({"authorization": f"Bearer {token}"} if token else {})
    return {
        "headers": headers,
        "queryStringParameters": query or None,
        "requestContext": {"routeKey": route, "connectionId": ws_id, "requestId": ws_id},
    }


def _push(route: str, ws_id: str, token: str | None = None, **query: str) -> dict:
    answer = load_handler("push").handler(_ws_event(route, ws_id, token, **query), LambdaContext())
    assert answer["statusCode"] == 200, answer
    return dict(json.loads(answer["body"]))


def _deliver(stream: StreamReader) -> dict:
    return dict(load_handler("notifier").handler({"Records": stream.records()}, LambdaContext()))


def _today(api: Any, token: str, **query: Any) -> dict:
    reply = api("GET", "/v1/usage", token, query=query or None)
    assert reply.status == 200, reply.body
    return dict(reply.body["days"][-1])


def _transitions(call_id: str) -> int:
    """StateEntered events of the call's execution: what Step Functions bills."""
    sfn = boto3.client("stepfunctions", region_name="us-east-1")
    [execution] = [
        e
        for machine in sfn.list_state_machines()["stateMachines"]
        for e in sfn.list_executions(stateMachineArn=machine["stateMachineArn"])["executions"]
        if e["name"] == call_id
    ]
    events = sfn.get_execution_history(executionArn=execution["executionArn"])["events"]
    return sum(1 for e in events if e["type"].endswith("StateEntered"))


def _stored_message_bytes(stack: Any) -> int:
    table = stack.settings.messages_table
    items = stack.client.scan(TableName=table)["Items"]
    messages = [i for i in items if i["sk"]["S"].startswith("M#")]
    return sum(item_size(i) + prices.DYNAMODB_ITEM_OVERHEAD_BYTES for i in messages)


def test_usage_counts_what_a_scripted_run_did(api, agents, stack):
    admin = stack.admin_token
    worker, reviewer = agents.named("worker"), agents.named("reviewer")
    stream = StreamReader(stack.client, stack.settings.messages_table)
    ws_id = f"ws{uuid.uuid4().hex[:14]}"
    assert _push("$connect", ws_id, reviewer, agent_name="reviewer") == {"type": "listening"}
    connected_at = stack.clock.now()

    # Send 5: a first contact and 4 into its inbox, the notifier fed after each two.
    first = api("POST", "/v1/messages", worker, {"target": "agent:reviewer", "message": "hi"})
    assert first.status == 201, first.body
    notices = _deliver(stream)["posted"]
    for n in range(4):
        body = {"inbox_id": first.body["inbox_id"], "message": f"more {n} " * (n + 1)}
        assert api("POST", "/v1/messages", worker, body).status == 201
        if n % 2:
            notices += _deliver(stream)["posted"]
    assert notices >= 2

    # Read 4: the mailbox's first contact, then a page of 3 of the reviewer's inbox; a page
    # with nothing new is no read.
    mailbox = api("GET", "/v1/messages", reviewer, query={"agent_name": "reviewer"}).body
    assert len(mailbox["messages"]) == 1
    inbox = mailbox["messages"][0]["reply_address"]
    page = api("GET", "/v1/messages", reviewer, query={"inbox_id": inbox, "limit": 3}).body
    assert len(page["messages"]) == 3
    tail = {"inbox_id": inbox, "after": page["next_cursor"], "limit": 10}
    rest = api("GET", "/v1/messages", reviewer, query=tail).body
    assert len(rest["messages"]) == 2
    empty = {**tail, "after": rest["next_cursor"]}
    assert api("GET", "/v1/messages", reviewer, query=empty).body["messages"] == []

    # One call straight through, one that asks a person first (more states entered).
    assert api("POST", "/v1/crews", admin, CONTRACTS).status == 201
    summarize = {"target": "crew:contracts", "function": "summarize", "args": {"text": "t"}}
    done = api("POST", "/v1/calls", worker, summarize).body["call_id"]
    assert wait_for(api, worker, done, TERMINAL)["state"] == "succeeded"
    confirm = {"target": "crew:contracts", "function": "confirm", "args": {"action": "x"}}
    asked = api("POST", "/v1/calls", worker, confirm).body["call_id"]
    [question] = wait_for(api, worker, asked, {"input_required"} | TERMINAL)["pending_inputs"]
    answer = {"request_id": question["request_id"], "answer": "yes"}
    assert api("POST", f"/v1/calls/{asked}/reply", worker, answer).status == 200
    assert wait_for(api, worker, asked, TERMINAL)["state"] == "succeeded"

    stack.clock.advance(90)
    assert _push("$disconnect", ws_id) == {"type": "closed"}

    today = _today(api, admin)
    assert today["day"] == day_of(stack.clock.now())
    assert today["messages_sent"] == 5
    assert today["stored_bytes"] == _stored_message_bytes(stack)
    assert (today["messages_read"], today["read_requests"]) == (6, 3)
    assert today["function_calls"] == 2
    assert today["state_transitions"] == _transitions(done) + _transitions(asked)
    assert _transitions(done) == 3 and _transitions(asked) == 6
    assert today["push_notices"] == notices
    assert today["push_minutes"] == round((stack.clock.now() - connected_at) / 60, 2) == 1.5
    # The estimate is the counters priced with the bench's table, and it is not nothing.
    counts = Counts(
        messages_sent=5,
        stored_bytes=today["stored_bytes"],
        messages_read=6,
        read_requests=3,
        function_calls=2,
        state_transitions=today["state_transitions"],
        push_seconds=90,
        push_notices=notices,
    )
    assert today["estimated_cost_usd"] == round(estimate(counts).total_usd, 6) > 0
    report = api("GET", "/v1/usage", admin).body
    assert report["estimated_cost"]["total_usd"] == round(estimate(counts).total_usd, 6)
    assert report["total"]["messages_sent"] == 5 and len(report["days"]) == 7
    assert all(d["messages_sent"] == 0 for d in report["days"][:-1])


def test_a_day_counts_on_its_own_row(api, agents, stack):
    worker, reviewer = agents.named("worker"), agents.named("reviewer")
    stream = StreamReader(stack.client, stack.settings.messages_table)
    api("POST", "/v1/messages", worker, {"target": "agent:reviewer", "message": "day one"})
    _deliver(stream)
    stack.clock.advance(limits.DAY_SECONDS)
    api("GET", "/v1/messages", reviewer, query={"agent_name": "reviewer"})
    days = api("GET", "/v1/usage", stack.admin_token, query={"days": 2}).body["days"]
    assert [(d["messages_sent"], d["messages_read"]) for d in days] == [(1, 0), (0, 1)]


def test_usage_is_for_an_unbounded_admin_of_the_account_only(api, agents, stack):
    worker = agents.named("worker")
    agents.named("reviewer")
    stream = StreamReader(stack.client, stack.settings.messages_table)
    api("POST", "/v1/messages", worker, {"target": "agent:reviewer", "message": "private"})
    _deliver(stream)
    account = stack.principal(stack.admin_token).account_id

    # Like every admin route: a connection without `admin`, or an admin held by target
    # bounds (account-wide administration, A3b), gets 403 forbidden.
    refused = api("GET", "/v1/usage", worker)
    assert (refused.status, refused.body["error"]["code"]) == (403, "forbidden")
    reply = api(
        "POST",
        "/v1/connections",
        stack.admin_token,
        {"name": "bounded-admin", "scopes": ["admin"], "target_bounds": ["crew:contracts"]},
    )
    assert reply.status == 201, reply.body
    bounded_token = reply.body["token"]
    refused = api("GET", "/v1/usage", bounded_token)
    assert (refused.status, refused.body["error"]["code"]) == (403, "forbidden")

    # Another account's admin never sees it: naming it answers as an unknown account does,
    # and its own report has none of this account's counters.
    intruder = stack.services.identity.bootstrap("intruder").token
    theirs = api("GET", "/v1/usage", intruder, query={"account": account})
    unknown = api(
        "GET", "/v1/usage", intruder, query={"account": "acct_01ARZ3NDEKTSV4RRFFQ69G5FAV"}
    )
    assert (theirs.status, theirs.body["error"]["code"]) == (404, "unavailable")
    assert theirs.body == unknown.body
    own = api("GET", "/v1/usage", intruder).body
    assert own["account_id"] != account
    assert all(d[k] == 0 for d in own["days"] for k in ("messages_sent", "stored_bytes"))
    mine = api("GET", "/v1/usage", stack.admin_token, query={"account": account}).body
    assert mine["total"]["messages_sent"] == 1


def test_days_limits(api, stack):
    admin = stack.admin_token
    assert len(api("GET", "/v1/usage", admin).body["days"]) == limits.USAGE_DAYS_DEFAULT
    at_most = api("GET", "/v1/usage", admin, query={"days": limits.USAGE_DAYS_MAX})
    assert at_most.status == 200 and len(at_most.body["days"]) == limits.USAGE_DAYS_MAX
    assert len(api("GET", "/v1/usage", admin, query={"days": 1}).body["days"]) == 1
    for days in (limits.USAGE_DAYS_MAX + 1, 0):
        past = api("GET", "/v1/usage", admin, query={"days": days})
        assert past.status == 400, past.body
        assert past.body["error"]["code"] == "invalid_request"
        assert past.body["error"]["field"] == "days"


def test_expired_counters_not_yet_deleted_are_left_out(stack):
    """A day's items expire (TTL) past the longest window; a report ignores any DynamoDB
    has not deleted yet (deletion lags by days)."""
    from agentworks.usage.usage_store import UsageStore

    account = stack.principal(stack.admin_token).account_id
    store = UsageStore(stack.client, stack.settings.work_table)
    today = day_of(stack.clock.now())
    store.add(account, today, 0, Counts(messages_sent=3))
    store.add(account, today, 5, Counts(messages_sent=1, push_notices=2))
    items = [
        from_item(i) or {}
        for i in stack.client.scan(TableName=stack.settings.work_table)["Items"]
        if i["pk"]["S"] == f"USAGE#{account}"
    ]
    assert sorted(i["sk"] for i in items) == [f"{today}#0", f"{today}#5"]
    ttl = items[0]["expires_ttl"]
    assert ttl - stack.clock.now() > limits.USAGE_DAYS_MAX * limits.DAY_SECONDS
    assert store.days(account, today, today, ttl - 1) == {
        today: Counts(messages_sent=4, push_notices=2)
    }
    assert store.days(account, today, today, ttl) == {}


def test_a_dropped_listener_counts_its_minutes_once(api, agents, stack):
    """The notifier drops a listener whose connection was revoked (and closes its socket);
    the `$disconnect` that follows finds it gone: its minutes count once."""
    worker = agents.named("worker")
    listener = agents.connection("listener", scopes=["messages:read", "messages:send"])
    registered = api("POST", "/v1/agents", listener["token"], {"agent_name": "reviewer"})
    assert registered.status == 200, registered.body
    stream = StreamReader(stack.client, stack.settings.messages_table)
    ws_id = f"ws{uuid.uuid4().hex[:14]}"
    _push("$connect", ws_id, listener["token"], agent_name="reviewer")
    stack.clock.advance(120)
    revoked = api("DELETE", f"/v1/connections/{listener['connection_id']}", stack.admin_token)
    assert revoked.status == 200
    api("POST", "/v1/messages", worker, {"target": "agent:reviewer", "message": "hello?"})
    assert _deliver(stream) == {"inboxes": 1, "posted": 0, "dropped": 1}
    assert _push("$disconnect", ws_id) == {"type": "closed"}
    today = _today(api, stack.admin_token)
    assert (today["push_minutes"], today["push_notices"], today["messages_sent"]) == (2.0, 0, 1)
