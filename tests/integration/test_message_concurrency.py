"""Concurrency: conditional writes keep M2 and the M11 rate limit exact under races."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from agentworks import limits
from agentworks.dynamo import from_item, to_item
from agentworks.messaging import keys


def _messages_in(stack, conversation: str) -> list[dict]:
    """Every message item of a conversation (both sides), in chain order."""
    result = stack.client.query(
        TableName=stack.settings.messages_table,
        KeyConditionExpression="pk = :pk AND begins_with(sk, :m)",
        ExpressionAttributeValues=to_item(
            {":pk": f"CONV#{conversation}", ":m": keys.MESSAGE_PREFIX}
        ),
        ConsistentRead=True,
    )
    return [from_item(i) for i in result["Items"]]


def test_m2_twenty_threads_same_submission_id_store_one_message(api, agents, stack):
    worker, reviewer = agents.named("worker"), agents.named("reviewer")
    body = {
        "agent_name": "worker",
        "target": "agent:reviewer",
        "message": "exactly once",
        "submission_id": "race-1",
    }
    with ThreadPoolExecutor(max_workers=20) as pool:
        replies = list(pool.map(lambda _: api("POST", "/v1/messages", worker, body), range(20)))
    assert sorted(r.status for r in replies) == [200] * 19 + [201]
    receipts = {(r.body["inbox_id"], r.body["message_id"], r.body["created_at"]) for r in replies}
    assert len(receipts) == 1
    inbox_id = replies[0].body["inbox_id"]
    assert [m["body"] for m in _messages_in(stack, inbox_id[4:-1])] == ["exactly once"]
    # One conversation, one mailbox entry: nothing else was written by the losers.
    mailbox = api("GET", "/v1/messages", reviewer, query={"agent_name": "reviewer"}).body
    assert [m["message_id"] for m in mailbox["messages"]] == [replies[0].body["message_id"]]


def test_m2_twenty_threads_same_submission_id_into_an_inbox(api, agents, stack):
    worker, _ = agents.named("worker"), agents.named("reviewer")
    inbox = api("POST", "/v1/messages", worker, {"target": "agent:reviewer", "message": "a"}).body
    body = {"inbox_id": inbox["inbox_id"], "message": "retry me", "submission_id": "race-2"}
    with ThreadPoolExecutor(max_workers=20) as pool:
        replies = list(pool.map(lambda _: api("POST", "/v1/messages", worker, body), range(20)))
    assert len({r.body["message_id"] for r in replies}) == 1
    assert sorted(r.status for r in replies) == [200] * 19 + [201]
    bodies = [m["body"] for m in _messages_in(stack, inbox["inbox_id"][4:-1])]
    assert bodies == ["a", "retry me"]


def test_m11_sixty_concurrent_sends_exactly_forty_accepted(api, agents, stack):
    worker, reviewer = agents.named("worker"), agents.named("reviewer")
    first = api("POST", "/v1/messages", worker, {"target": "agent:reviewer", "message": "0"}).body
    reply_to = api("GET", "/v1/messages", reviewer, query={"agent_name": "reviewer"}).body[
        "messages"
    ][0]["reply_address"]

    def send(i: int):
        # Both directions race into the same conversation.
        if i % 2:
            return api(
                "POST", "/v1/messages", worker, {"inbox_id": first["inbox_id"], "message": f"w{i}"}
            )
        return api("POST", "/v1/messages", reviewer, {"inbox_id": reply_to, "message": f"r{i}"})

    with ThreadPoolExecutor(max_workers=20) as pool:
        replies = list(pool.map(send, range(60)))
    accepted = [r for r in replies if r.status == 201]
    refused = [r for r in replies if r.status == 429]
    cap = limits.RATE_LIMIT_MESSAGES  # 40 in the hour, the first message included
    assert len(accepted) == cap - 1 and len(refused) == 60 - (cap - 1)
    messages = _messages_in(stack, first["inbox_id"][4:-1])
    assert len(messages) == cap
    # The chain is gapless: every accepted send got its own seq, in commit order ...
    assert [keys.message_seq(m["sk"]) for m in messages] == list(range(1, cap + 1))
    # ... and carried the rate window forward: the newest holds all accepted sends.
    assert len(messages[-1]["rate"]) == cap
    assert [len(m["rate"]) for m in messages] == list(range(1, cap + 1))
    # Per-side counts add up: each message counts itself on its receiving side.
    newest = messages[-1]
    assert newest["n_a"] + newest["n_b"] == 40
    assert newest["n_a"] == sum(m["to_side"] == "a" for m in messages)
    # Every accepted receipt names a distinct stored message.
    assert len({r.body["message_id"] for r in accepted}) == 39
