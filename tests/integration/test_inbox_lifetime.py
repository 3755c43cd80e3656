"""M11 inbox lifetime: idle 7 days → expired then removed; 300 per initiating account and
2,000 per store evict the oldest idle; expired lookups answer `expired` only to the owner
for 7 more days and are bounded to 2,000 entries."""

from __future__ import annotations

from typing import Any

from agentworks import limits
from agentworks.dynamo import to_item
from agentworks.ids import new_ulid
from agentworks.messaging import keys
from agentworks.messaging.conversation_items import conversation_to_item
from agentworks.messaging.lifecycle_store import live_attributes
from agentworks.messaging.models import Conversation, Party
from tests.support.handlers import LambdaContext, load_handler

DAY = 86400


def _seed_conversations(stack: Any, account_id: str, count: int, hours_ago: int) -> list[str]:
    """`count` live conversations of `account_id`, last active `hours_ago`, counted as the
    admission path would count them."""
    now_ms = int(stack.clock.now() * 1000)
    table = stack.settings.messages_table
    ids = []
    requests = []
    for i in range(count):
        ulid = new_ulid(stack.clock) if i == 0 else f"{new_ulid(stack.clock)[:-4]}{i:04d}"
        active = now_ms - hours_ago * 3_600_000
        conv = Conversation(
            conversation=ulid,
            account_id=account_id,
            parties={"a": Party("external"), "b": Party("agent", "agt_x", "ghost")},
            created_at=active,
            last_activity=active,
            activity_hour=active // 3_600_000,
        )
        item = conversation_to_item(conv) | live_attributes(account_id, conv.activity_hour, ulid)
        requests.append({"PutRequest": {"Item": to_item(item)}})
        ids.append(f"ibx_{ulid}a")
    for i in range(0, len(requests), 25):
        stack.client.batch_write_item(RequestItems={table: requests[i : i + 25]})
    for key in (keys.account_counters(account_id), keys.server_counters()):
        stack.client.update_item(
            TableName=table,
            Key=to_item(key),
            UpdateExpression="SET inboxes = if_not_exists(inboxes, :z) + :n",
            ExpressionAttributeValues=to_item({":z": 0, ":n": count}),
        )
    return ids


def _account(api, token) -> str:
    return api("GET", "/v1/whoami", token).body["account_id"]


def test_m11_301st_inbox_of_an_account_evicts_its_oldest_idle(api, agents, stack):
    worker, _ = agents.named("worker"), agents.named("reviewer")
    account = _account(api, worker)
    oldest = _seed_conversations(stack, account, 1, hours_ago=50)
    _seed_conversations(stack, account, limits.INBOXES_PER_INITIATING_ACCOUNT - 2, hours_ago=2)
    # 300th live conversation: admitted, nothing evicted.
    assert (
        api("POST", "/v1/messages", worker, {"target": "agent:reviewer", "message": "300"}).status
        == 201
    )
    assert api("GET", "/v1/messages", worker, query={"inbox_id": oldest[0]}).status == 200
    # 301st: admitted by retiring the least recently active conversation.
    assert (
        api("POST", "/v1/messages", worker, {"target": "agent:reviewer", "message": "301"}).status
        == 201
    )
    gone = api("GET", "/v1/messages", worker, query={"inbox_id": oldest[0]})
    assert gone.status == 410 and gone.body["error"]["code"] == "expired"
    counters = stack.client.get_item(
        TableName=stack.settings.messages_table, Key=to_item(keys.account_counters(account))
    )["Item"]
    assert int(counters["inboxes"]["N"]) == 300


def test_m11_store_wide_bound_of_2000_live_inboxes(api, agents, stack):
    """Other accounts hold 1,999 live conversations. Only a few are seeded as items (moto
    slows with table size); the store counter says 1,999 as admission would have left it."""
    worker, _ = agents.named("worker"), agents.named("reviewer")
    oldest = _seed_conversations(stack, "acct_OTHER", 1, hours_ago=50)
    _seed_conversations(stack, "acct_OTHER", 4, hours_ago=5)
    stack.client.update_item(
        TableName=stack.settings.messages_table,
        Key=to_item(keys.server_counters()),
        UpdateExpression="SET inboxes = :n",
        ExpressionAttributeValues=to_item({":n": limits.INBOXES_PER_STORE - 1}),
    )
    assert (
        api("POST", "/v1/messages", worker, {"target": "agent:reviewer", "message": "2000"}).status
        == 201
    )
    table = stack.settings.messages_table
    key = to_item(keys.conversation(oldest[0][4:-1]))
    assert "evicted_at" not in stack.client.get_item(TableName=table, Key=key)["Item"]
    assert (
        api("POST", "/v1/messages", worker, {"target": "agent:reviewer", "message": "2001"}).status
        == 201
    )
    retired = stack.client.get_item(TableName=table, Key=key)["Item"]
    assert "evicted_at" in retired and "idle_store" not in retired
    server = stack.client.get_item(TableName=table, Key=to_item(keys.server_counters()))["Item"]
    assert int(server["inboxes"]["N"]) == limits.INBOXES_PER_STORE


def test_m11_idle_inbox_expires_after_7_days_then_tick_retires_it(api, agents, stack):
    worker, _reviewer = agents.named("worker"), agents.named("reviewer")
    stranger = stack.services.identity.bootstrap("other").token  # another account
    sent = api("POST", "/v1/messages", worker, {"target": "agent:reviewer", "message": "hi"}).body
    inbox = sent["inbox_id"]
    stack.clock.advance(limits.INBOX_IDLE_SECONDS - 1)
    assert api("GET", "/v1/messages", worker, query={"inbox_id": inbox}).status == 200
    stack.clock.advance(1)
    expired = api("GET", "/v1/messages", worker, query={"inbox_id": inbox})
    assert expired.status == 410
    late = api("POST", "/v1/messages", worker, {"inbox_id": inbox, "message": "x"})
    assert (late.status, late.body["error"]["message"]) == (
        410,
        "This inbox expired after 7 idle days. Start a new conversation with target=agent:NAME.",
    )
    # Another account can't tell it apart from an unknown id (A5).
    assert api("GET", "/v1/messages", stranger, query={"inbox_id": inbox}).status == 404

    stack.clock.advance(3600)  # the sweep works on whole activity hours
    tick = load_handler("tick").handler({"source": "aws.events"}, LambdaContext())
    assert tick["retired_idle"] == 1
    assert api("GET", "/v1/inboxes/" + inbox + "/state", worker).body["status"] == "expired"
    # EXPIRED_LOOKUP_SECONDS more of `expired`, then TTL removes the metadata → unavailable.
    stack.clock.advance(limits.EXPIRED_LOOKUP_SECONDS - 1)
    assert api("GET", "/v1/messages", worker, query={"inbox_id": inbox}).status == 410
    stack.clock.advance(1)
    assert api("GET", "/v1/messages", worker, query={"inbox_id": inbox}).status == 404


def _seed_retired(stack: Any, count: int) -> list[str]:
    """`count` conversations retired earlier, oldest first, as the tick leaves them."""
    now_ms = int(stack.clock.now() * 1000)
    requests, ids = [], []
    for i in range(count):
        ulid = f"{new_ulid(stack.clock)[:-4]}{i:04d}"
        conv = Conversation(
            conversation=ulid,
            account_id="acct_OTHER",
            parties={"a": Party("external"), "b": Party("agent", "agt_x", "ghost")},
            created_at=now_ms,
            last_activity=now_ms - 8 * DAY * 1000,
            activity_hour=0,
            evicted_at=now_ms - (count - i) * 1000,
        )
        item = conversation_to_item(conv) | {
            "retired_store": "ALL",
            "retired_key": f"{now_ms - (count - i) * 1000:013d}#{ulid}",
        }
        requests.append({"PutRequest": {"Item": to_item(item)}})
        ids.append(f"ibx_{ulid}a")
    for i in range(0, len(requests), 25):
        stack.client.batch_write_item(
            RequestItems={stack.settings.messages_table: requests[i : i + 25]}
        )
    return ids


def test_m11_expired_lookup_metadata_bounded_to_2000_entries(api, agents, stack):
    worker, _ = agents.named("worker"), agents.named("reviewer")
    inbox = api("POST", "/v1/messages", worker, {"target": "agent:reviewer", "message": "hi"}).body
    oldest = _seed_retired(stack, limits.EXPIRED_LOOKUP_MAX_ENTRIES - 1)
    stack.clock.advance(8 * DAY)
    tick = load_handler("tick").handler({"source": "aws.events"}, LambdaContext())
    # 1,999 + the newly retired one = 2,000: the bound holds, nothing is forgotten.
    assert (tick["retired_idle"], tick["forgotten"]) == (1, 0)
    assert api("GET", "/v1/messages", worker, query={"inbox_id": inbox["inbox_id"]}).status == 410
    _seed_retired(stack, 1)  # one more retired entry: 2,001
    tick = load_handler("tick").handler({"source": "aws.events"}, LambdaContext())
    assert (tick["retired_idle"], tick["forgotten"]) == (0, 1)
    table = stack.settings.messages_table
    first = stack.client.get_item(TableName=table, Key=to_item(keys.conversation(oldest[0][4:-1])))
    assert "Item" not in first  # the oldest retired entry is forgotten
    assert api("GET", "/v1/messages", worker, query={"inbox_id": inbox["inbox_id"]}).status == 410
