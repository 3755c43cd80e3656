"""M11 limits and M4 registration bounds, each at and just past its bound. Time moves only
through the injected clock; bulk state is seeded directly (moto slows with table size)."""

from __future__ import annotations

from typing import Any

from agentworks import limits
from agentworks.dynamo import to_item
from agentworks.messaging import keys

EMOJI = "\U0001f600"  # 4 bytes in UTF-8, one character


def _first_contact(api, agents) -> tuple[str, str, str, str]:
    """worker → reviewer; returns (worker token, reviewer token, worker inbox, reviewer inbox)."""
    worker, reviewer = agents.named("worker"), agents.named("reviewer")
    sent = api("POST", "/v1/messages", worker, {"target": "agent:reviewer", "message": "start"})
    reply_to = api("GET", "/v1/messages", reviewer, query={"agent_name": "reviewer"}).body[
        "messages"
    ][0]["reply_address"]
    return worker, reviewer, sent.body["inbox_id"], reply_to


def test_m11_message_length_counts_characters_not_bytes(api, agents, stack):
    worker, _, inbox, _ = _first_contact(api, agents)
    ok = api("POST", "/v1/messages", worker, {"inbox_id": inbox, "message": EMOJI * 20_000})
    assert ok.status == 201
    too_long = api("POST", "/v1/messages", worker, {"inbox_id": inbox, "message": EMOJI * 20_001})
    assert too_long.status == 400
    assert "20,001" in too_long.body["error"]["message"]
    shortest = "x" * limits.MESSAGE_MIN_CHARS
    empty = api("POST", "/v1/messages", worker, {"inbox_id": inbox, "message": shortest[1:]})
    assert empty.status == 400
    assert (
        api("POST", "/v1/messages", worker, {"inbox_id": inbox, "message": shortest}).status == 201
    )


def test_m11_rate_limit_41st_message_in_an_hour_refused_with_retry_after(api, agents, stack):
    worker, reviewer, inbox, reply_to = _first_contact(api, agents)  # message 1 of the hour
    # Both directions count: 19 more from the worker, 20 replies.
    for i in range(19):
        assert (
            api("POST", "/v1/messages", worker, {"inbox_id": inbox, "message": f"w{i}"}).status
            == 201
        )
        stack.clock.advance(30)
    for i in range(20):
        assert (
            api("POST", "/v1/messages", reviewer, {"inbox_id": reply_to, "message": f"r{i}"}).status
            == 201
        )
    refused = api("POST", "/v1/messages", worker, {"inbox_id": inbox, "message": "41st"})
    assert refused.status == 429
    retry_after = refused.body["error"]["retry_after"]
    assert refused.headers["Retry-After"] == str(retry_after)
    # The first message was sent 19 * 30 s ago, so its slot frees when the window has
    # passed over it: an hour less 570 s from now.
    assert limits.RATE_LIMIT_WINDOW_SECONDS == 3600
    assert retry_after == limits.RATE_LIMIT_WINDOW_SECONDS - 19 * 30
    # M2: a retry of an accepted submission still returns its receipt past the limit.
    stack.clock.advance(retry_after - 1)
    assert api("POST", "/v1/messages", worker, {"inbox_id": inbox, "message": "x"}).status == 429
    stack.clock.advance(1)
    assert api("POST", "/v1/messages", worker, {"inbox_id": inbox, "message": "x"}).status == 201


def test_m2_submission_retry_answers_even_when_rate_limited(api, agents, stack):
    worker, _, inbox, _ = _first_contact(api, agents)
    body = {"inbox_id": inbox, "message": "keep", "submission_id": "sub-1"}
    original = api("POST", "/v1/messages", worker, body).body
    for i in range(38):
        api("POST", "/v1/messages", worker, {"inbox_id": inbox, "message": f"{i}"})
    assert api("POST", "/v1/messages", worker, {"inbox_id": inbox, "message": "no"}).status == 429
    replay = api("POST", "/v1/messages", worker, body)
    assert replay.status == 200 and replay.body["message_id"] == original["message_id"]


def _seed_history(stack: Any, inbox_id: str, count: int) -> None:
    """Appends `count` messages delivered to the side of `inbox_id` to the conversation's
    chain, as `count` sends spread over many hours would leave them (each carries the
    chain's state: seq, per-side counts, the rate window of the last accepted send)."""
    from agentworks.ids import parse_inbox_id
    from agentworks.messaging.conversation_items import message_to_item
    from agentworks.messaging.conversation_store import ConversationStore
    from agentworks.messaging.models import StoredMessage

    ref = parse_inbox_id(inbox_id)
    table = stack.settings.messages_table
    now_ms = int(stack.clock.now() * 1000)
    head = ConversationStore(stack.client, table).head(ref.conversation, now_ms)
    assert head.latest is not None
    counts = dict(head.latest.counts)
    items = []
    for seq in range(head.last_seq + 1, head.last_seq + 1 + count):
        counts[ref.side] += 1
        message = StoredMessage(
            conversation=ref.conversation,
            side=ref.side,
            seq=seq,
            sender="agent:worker",
            body=f"seeded {seq}",
            created_at=now_ms,
            window=head.window(),  # no new slot used: the seeded sends are hours old
            counts=dict(counts),  # type: ignore[arg-type]
        )
        items.append({"PutRequest": {"Item": to_item(message_to_item(message))}})
    for i in range(0, len(items), 25):
        stack.client.batch_write_item(RequestItems={table: items[i : i + 25]})


def test_m11_inbox_history_1001st_message_evicts_oldest_delivered(api, agents, stack):
    worker, reviewer, inbox, reply_to = _first_contact(api, agents)
    _seed_history(stack, reply_to, limits.INBOX_HISTORY_MAX - 1)  # + "start" = 1,000
    state = api("GET", f"/v1/inboxes/{reply_to}/state", reviewer).body
    assert state["messages_retained"] == 1000
    assert (
        api("POST", "/v1/messages", worker, {"inbox_id": inbox, "message": "1001st"}).status == 201
    )
    page = api("GET", "/v1/messages", reviewer, query={"inbox_id": reply_to, "limit": 2}).body
    assert [m["body"] for m in page["messages"]] == ["seeded 2", "seeded 3"]  # "start" evicted
    assert api("GET", f"/v1/inboxes/{reply_to}/state", reviewer).body["messages_retained"] == 1000


def test_m11_the_1000th_message_evicts_nothing_and_asks_nothing(api, agents, stack):
    """At the bound the history is full, not over it: no delete request is made (one would
    cost a write even on nothing), and the first message is still there."""
    worker, reviewer, inbox, reply_to = _first_contact(api, agents)
    _seed_history(stack, reply_to, limits.INBOX_HISTORY_MAX - 2)  # + "start" = 999
    deletes: list[dict] = []

    def delete(params: dict, **_: Any) -> None:
        deletes.append(params)

    stack.client.meta.events.register("provide-client-params.dynamodb.DeleteItem", delete)
    try:
        sent = api("POST", "/v1/messages", worker, {"inbox_id": inbox, "message": "1000th"})
        assert sent.status == 201 and deletes == []
        more = api("POST", "/v1/messages", worker, {"inbox_id": inbox, "message": "1001st"})
        assert more.status == 201 and len(deletes) == 1
    finally:
        stack.client.meta.events.unregister("provide-client-params.dynamodb.DeleteItem", delete)
    page = api("GET", "/v1/messages", reviewer, query={"inbox_id": reply_to, "limit": 1}).body
    assert [m["body"] for m in page["messages"]] == ["seeded 2"]  # "start" went with the 1001st


def test_m11_pending_oldest_blocks_eviction_inbox_full(api, agents, stack):
    worker, reviewer, inbox, reply_to = _first_contact(api, agents)
    _seed_history(stack, reply_to, limits.INBOX_HISTORY_MAX - 1)
    oldest = api("GET", "/v1/messages", reviewer, query={"inbox_id": reply_to, "limit": 1}).body[
        "messages"
    ][0]
    assert (
        api(
            "POST", f"/v1/messages/{oldest['message_id']}/ack", reviewer, {"delivery": "admitted"}
        ).status
        == 200
    )
    full = api("POST", "/v1/messages", worker, {"inbox_id": inbox, "message": "one more"})
    assert full.status == 409 and full.body["error"] == {
        "code": "inbox_full",
        "message": "The conversation holds 1,000 messages and its oldest is still being "
        "delivered (admitted, not processed). Retry once the receiver acknowledges it as "
        "processed.",
    }
    # Nothing half written: the refused message is not stored, the count is unchanged.
    state = api("GET", f"/v1/inboxes/{reply_to}/state", reviewer).body
    assert state["messages_retained"] == 1000
    assert (
        api(
            "POST", f"/v1/messages/{oldest['message_id']}/ack", reviewer, {"delivery": "processed"}
        ).status
        == 200
    )
    assert api("POST", "/v1/messages", worker, {"inbox_id": inbox, "message": "now"}).status == 201


def test_m4_101st_registration_in_an_account_refused(api, agents, stack):
    token = agents.connection("many")["token"]
    for i in range(limits.REGISTRATIONS_PER_ACCOUNT - 1):  # "many" + 99
        assert api("POST", "/v1/agents", token, {"agent_name": f"a{i}"}).status == 200
    assert api("POST", "/v1/agents", token, {"agent_name": "last"}).status == 200
    refused = api("POST", "/v1/agents", token, {"agent_name": "one-too-many"})
    assert refused.status == 409 and refused.body["error"]["code"] == "limit_reached"
    assert len(api("GET", "/v1/agents", token).body["agents"]) == 100
    # Unregistering frees a slot.
    assert api("DELETE", "/v1/agents/a0", token).status == 200
    assert api("POST", "/v1/agents", token, {"agent_name": "one-too-many"}).status == 200


def test_m4_server_wide_registration_bound(api, agents, stack):
    token = agents.connection("x")["token"]
    # Other accounts hold 1,999 names: seed the store-wide counter as they would have.
    stack.client.put_item(
        TableName=stack.settings.messages_table,
        Item=to_item({**keys.server_counters(), "agents": limits.REGISTRATIONS_PER_SERVER - 1}),
    )
    assert api("POST", "/v1/agents", token, {"agent_name": "the-2000th"}).status == 200
    refused = api("POST", "/v1/agents", token, {"agent_name": "the-2001st"})
    assert refused.status == 409 and "2,000" in refused.body["error"]["message"]


def test_m11_page_and_wait_bounds(api, agents):
    worker, _, inbox, _ = _first_contact(api, agents)
    q = {"inbox_id": inbox}
    assert api("GET", "/v1/messages", worker, query={**q, "limit": 100}).status == 200
    assert api("GET", "/v1/messages", worker, query={**q, "limit": 101}).status == 400
    assert api("GET", "/v1/messages", worker, query={**q, "limit": 0}).status == 400
    assert api("GET", "/v1/messages", worker, query={**q, "wait_seconds": 25}).status == 200
    assert api("GET", "/v1/messages", worker, query={**q, "wait_seconds": 25.5}).status == 400


def test_m4_name_and_purpose_bounds(api, agents):
    token = agents.connection("n")["token"]
    assert api("POST", "/v1/agents", token, {"agent_name": "a" * 64}).status == 200
    assert api("POST", "/v1/agents", token, {"agent_name": "b" * 65}).status == 400
    assert api("POST", "/v1/agents", token, {"agent_name": "p", "purpose": "x" * 512}).status == 200
    assert api("POST", "/v1/agents", token, {"agent_name": "q", "purpose": "x" * 513}).status == 400


def _seed_mailbox(stack, first_entry_key: dict, count: int) -> None:
    """`count` more mailbox entries after the first, copies of it under the next sequence
    numbers (as `count` more first contacts would leave them; moto slows with HTTP calls)."""
    table = stack.settings.messages_table
    item = stack.client.get_item(TableName=table, Key=first_entry_key, ConsistentRead=True)["Item"]
    seq = int(item["sk"]["S"])
    for start in range(0, count, 25):
        stack.client.batch_write_item(
            RequestItems={
                table: [
                    {
                        "PutRequest": {
                            "Item": {
                                **item,
                                "sk": {"S": keys.seq_key(seq + n)},
                                "body": {"S": f"m{seq + n}"},
                            }
                        }
                    }
                    for n in range(start + 1, min(count, start + 25) + 1)
                ]
            }
        )


def test_m3_m11_a_mailbox_page_holds_limit_messages_and_the_next_page_the_rest(api, agents, stack):
    """A page is at most `limit` (≤ PAGE_MAX) messages, PAGE_DEFAULT without one; the cursor
    goes on where the page ended, losing and repeating nothing."""
    reviewer = agents.named("reviewer")
    worker = agents.connection("worker")["token"]
    sent = api("POST", "/v1/messages", worker, {"target": "agent:reviewer", "message": "m"})
    assert sent.status == 201
    first = api("GET", "/v1/messages", reviewer, query={"agent_name": "reviewer"}).body
    [entry] = first["messages"]
    mailbox_pk = next(
        i["pk"]["S"]
        for i in stack.client.scan(TableName=stack.settings.messages_table)["Items"]
        if i["pk"]["S"].startswith("MBX#")
        and i.get("message_id", {}).get("S") == entry["message_id"]
    )
    _seed_mailbox(stack, {"pk": {"S": mailbox_pk}, "sk": {"S": keys.seq_key(1)}}, limits.PAGE_MAX)
    q = {"agent_name": "reviewer", "after": "0"}

    full = api("GET", "/v1/messages", reviewer, query={**q, "limit": limits.PAGE_MAX}).body
    assert len(full["messages"]) == limits.PAGE_MAX
    rest = api("GET", "/v1/messages", reviewer, query={**q, "after": full["next_cursor"]}).body
    assert [m["body"] for m in rest["messages"]] == [f"m{limits.PAGE_MAX + 1}"]
    assert [m["body"] for m in full["messages"]][:2] == ["m", "m2"]

    default = api("GET", "/v1/messages", reviewer, query=q).body["messages"]
    assert len(default) == limits.PAGE_DEFAULT
    small = api("GET", "/v1/messages", reviewer, query={**q, "limit": 3}).body["messages"]
    assert [m["body"] for m in small] == ["m", "m2", "m3"]
    refused = api("GET", "/v1/messages", reviewer, query={**q, "limit": limits.PAGE_MAX + 1})
    assert refused.status == 400 and refused.body["error"]["field"] == "limit"


def test_m11_a_message_is_kept_message_retention_seconds_while_its_inbox_lives_on(
    api, agents, stack
):
    """M11: a message is readable for MESSAGE_RETENTION_SECONDS from when it was sent, even
    while later messages keep its inbox alive; then it is gone and the later ones remain."""
    worker, reviewer, inbox, reply_to = _first_contact(api, agents)  # "start" at t0
    stack.clock.advance(3 * 24 * 3600)
    assert (
        api("POST", "/v1/messages", worker, {"inbox_id": inbox, "message": "later"}).status == 201
    )
    q = {"inbox_id": reply_to, "after": "0"}
    stack.clock.advance(limits.MESSAGE_RETENTION_SECONDS - 3 * 24 * 3600 - 1)
    mailbox = {"agent_name": "reviewer", "after": "0"}
    shown = api("GET", "/v1/messages", reviewer, query=q).body["messages"]
    assert [m["body"] for m in shown] == ["start", "later"]
    assert [m["body"] for m in api("GET", "/v1/messages", reviewer, query=mailbox).body[
        "messages"]] == ["start"]  # fmt: skip
    stack.clock.advance(1)
    shown = api("GET", "/v1/messages", reviewer, query=q).body["messages"]
    assert [m["body"] for m in shown] == ["later"]
    assert api("GET", "/v1/messages", reviewer, query=mailbox).body["messages"] == []
