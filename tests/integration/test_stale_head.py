"""A send reads the conversation's head eventually consistent (half the read units); a
stale head may cost a retry, never a lost, doubled or wrongly refused message (M1, M7, M11).

moto answers every read fresh, so the replica in tests/support/stale_reads.py stands in
for one that lags: each test pins what it answers and shows the send still lands once, in
order, and that a refusal is only ever made on a strongly consistent read.
"""

from __future__ import annotations

from typing import Any

import pytest

from agentworks import limits
from agentworks.dynamo import from_item, to_item
from agentworks.ids import parse_inbox_id
from agentworks.messaging import keys
from tests.support import stale_reads


@pytest.fixture
def replica(stack: Any) -> stale_reads.Replica:
    return stale_reads.install(stack.client)


def _pair(api, agents) -> tuple[str, str, str, str]:
    worker, reviewer = agents.named("worker"), agents.named("reviewer")
    sent = api("POST", "/v1/messages", worker, {"target": "agent:reviewer", "message": "start"})
    assert sent.status == 201
    mailbox = api("GET", "/v1/messages", reviewer, query={"agent_name": "reviewer"}).body
    return worker, reviewer, sent.body["inbox_id"], mailbox["messages"][0]["reply_address"]


def _send(api, token: str, inbox: str, message: str) -> Any:
    return api("POST", "/v1/messages", token, {"inbox_id": inbox, "message": message})


def _chain(stack: Any, inbox: str) -> list[tuple[int, str, str]]:
    items = stack.client.query(
        TableName=stack.settings.messages_table,
        KeyConditionExpression="pk = :pk AND begins_with(sk, :m)",
        ExpressionAttributeValues=to_item(
            {":pk": f"CONV#{parse_inbox_id(inbox).conversation}", ":m": keys.MESSAGE_PREFIX}
        ),
        ConsistentRead=True,
    )["Items"]
    rows = [from_item(i) or {} for i in items]
    return [(keys.message_seq(m["sk"]), m["to_side"], m["body"]) for m in rows]


def test_a_stale_head_costs_a_retry_not_a_message(api, agents, stack, replica):
    worker, reviewer, inbox, reply_to = _pair(api, agents)
    replica.freeze()  # the replica keeps answering the head as of this moment
    assert _send(api, reviewer, reply_to, "r1").status == 201
    assert _send(api, reviewer, reply_to, "r2").status == 201  # read seq 1, put 2 taken
    assert _send(api, worker, inbox, "w1").status == 201
    assert replica.stale_answers >= 2
    assert _chain(stack, inbox) == [
        (1, "b", "start"),
        (2, "a", "r1"),
        (3, "a", "r2"),
        (4, "b", "w1"),
    ]
    replica.thaw()
    page = api("GET", "/v1/messages", worker, query={"inbox_id": inbox}).body["messages"]
    assert [m["body"] for m in page] == ["r1", "r2"]


def test_a_replica_that_has_not_seen_the_conversation_does_not_refuse(api, agents, stack, replica):
    _worker, reviewer, inbox, reply_to = _pair(api, agents)
    replica.missing()  # the first reply to a new conversation, before the replica has it
    assert _send(api, reviewer, reply_to, "right away").status == 201
    assert replica.stale_answers == 1
    assert _chain(stack, inbox)[-1] == (2, "a", "right away")


def test_a_stale_head_does_not_expire_a_conversation_that_is_still_live(
    api, agents, stack, replica
):
    worker, reviewer, inbox, reply_to = _pair(api, agents)
    stack.clock.advance(limits.INBOX_IDLE_SECONDS - 3600)
    replica.freeze()
    assert _send(api, worker, inbox, "just in time").status == 201  # pins the old head
    stack.clock.advance(7200)  # the pinned head is past 7 idle days; the stored one is not
    assert _send(api, reviewer, reply_to, "still live").status == 201
    assert _chain(stack, inbox)[-1] == (3, "a", "still live")


def test_a_stale_rate_window_does_not_admit_one_too_many(api, agents, stack, replica):
    worker, _reviewer, inbox, _reply_to = _pair(api, agents)
    replica.freeze()  # pins a window holding one message: alone, it would admit more
    for n in range(limits.RATE_LIMIT_MESSAGES - 1):
        stack.clock.advance(1)
        assert _send(api, worker, inbox, f"m{n}").status == 201
    refused = _send(api, worker, inbox, "one too many")
    assert refused.status == 429
    assert len(_chain(stack, inbox)) == limits.RATE_LIMIT_MESSAGES
