"""The chained send path: one conversation-wide message chain read and extended without
a transaction (M1, M3, M7, M11), submission ids claimed before the send (M2), and the
allow-list carried by the connection the authorizer reads (M5).

Races on the chain itself (60 senders, 20 retries of one submission id) are in
test_message_concurrency.py.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import pytest

from agentworks import limits
from agentworks.dynamo import from_item, to_item
from agentworks.identity.connection_store import connection_key
from agentworks.ids import parse_inbox_id
from agentworks.messaging import keys
from agentworks.messaging.models import iso
from tests.integration.test_stale_head import _chain
from tests.support import stale_reads

DAY = 86_400


def _pair(api, agents) -> tuple[str, str, str, str]:
    """worker → reviewer first contact; (worker token, reviewer token, worker's inbox on
    side a, reviewer's inbox on side b)."""
    worker, reviewer = agents.named("worker"), agents.named("reviewer")
    sent = api("POST", "/v1/messages", worker, {"target": "agent:reviewer", "message": "start"})
    assert sent.status == 201
    mailbox = api("GET", "/v1/messages", reviewer, query={"agent_name": "reviewer"}).body
    return worker, reviewer, sent.body["inbox_id"], mailbox["messages"][0]["reply_address"]


def _send(api, token: str, inbox: str, message: str, **extra: Any) -> Any:
    reply = api("POST", "/v1/messages", token, {"inbox_id": inbox, "message": message, **extra})
    assert reply.status in (200, 201), reply.body
    return reply


def _read(api, token: str, inbox: str, **query: Any) -> dict:
    reply = api("GET", "/v1/messages", token, query={"inbox_id": inbox, **query})
    assert reply.status == 200, reply.body
    return reply.body


class QueryLog:
    """The Queries the services' DynamoDB client makes: how many items each examined."""

    def __init__(self) -> None:
        self.scanned: list[int] = []
        self.active = False
        self._lock = threading.Lock()

    def __call__(self, parsed: dict[str, Any], **_: Any) -> None:
        if self.active:
            with self._lock:
                self.scanned.append(int(parsed.get("ScannedCount", 0)))


@contextmanager
def queries(stack: Any) -> Iterator[QueryLog]:
    log = QueryLog()
    stack.client.meta.events.register("after-call.dynamodb.Query", log)
    log.active = True
    try:
        yield log
    finally:
        log.active = False
        stack.client.meta.events.unregister("after-call.dynamodb.Query", log)


# ---------------------------------------------------------------- the chain (M1, M3)


def test_m1_both_directions_share_one_gapless_chain(api, agents, stack):
    worker, reviewer, inbox, reply_to = _pair(api, agents)
    _send(api, reviewer, reply_to, "r1")
    _send(api, worker, inbox, "w1")
    _send(api, reviewer, reply_to, "r2")
    items = stack.client.query(
        TableName=stack.settings.messages_table,
        KeyConditionExpression="pk = :pk AND begins_with(sk, :m)",
        ExpressionAttributeValues=to_item(
            {":pk": f"CONV#{parse_inbox_id(inbox).conversation}", ":m": keys.MESSAGE_PREFIX}
        ),
    )["Items"]
    chain = [from_item(i) or {} for i in items]
    assert [(keys.message_seq(m["sk"]), m["to_side"], m["body"]) for m in chain] == [
        (1, "b", "start"),
        (2, "a", "r1"),
        (3, "b", "w1"),
        (4, "a", "r2"),
    ]
    # Each message carries the counts as of itself, so the newest says it all.
    assert (chain[-1]["n_a"], chain[-1]["n_b"]) == (2, 2)


def test_m3_inbox_page_is_full_across_thirty_messages_of_the_other_side(api, agents, stack):
    worker, reviewer, inbox, reply_to = _pair(api, agents)
    _send(api, reviewer, reply_to, "r1")
    for i in range(30):
        _send(api, worker, inbox, f"w{i}")
        stack.clock.advance(60)  # 33 sends in ~30 minutes: under the hourly limit
    _send(api, reviewer, reply_to, "r2")
    _send(api, reviewer, reply_to, "r3")

    page = _read(api, worker, inbox, limit=3)
    assert [m["body"] for m in page["messages"]] == ["r1", "r2", "r3"]
    # Two per page: the first page still spans the thirty, the second holds the rest.
    first = _read(api, worker, inbox, limit=2)
    assert [m["body"] for m in first["messages"]] == ["r1", "r2"]
    second = _read(api, worker, inbox, limit=2, after=first["next_cursor"])
    assert [m["body"] for m in second["messages"]] == ["r3"]
    assert _read(api, worker, inbox, after=second["next_cursor"])["messages"] == []
    # The reviewer's side, read the same way, holds start + the thirty, in order.
    theirs = _read(api, reviewer, reply_to, limit=100)
    assert [m["body"] for m in theirs["messages"]] == ["start"] + [f"w{i}" for i in range(30)]


def test_m3_cursor_skips_the_other_sides_messages_it_examined(api, agents, stack):
    worker, reviewer, inbox, reply_to = _pair(api, agents)
    _send(api, reviewer, reply_to, "r1")
    for i in range(10):
        _send(api, worker, inbox, f"w{i}")
    page = _read(api, worker, inbox)
    assert [m["body"] for m in page["messages"]] == ["r1"]

    # Nothing new for this side: the head read alone answers (its counts), no page Query.
    with queries(stack) as log:
        empty = _read(api, worker, inbox, after=page["next_cursor"])
    assert empty["messages"] == [] and empty["next_cursor"] == page["next_cursor"]
    assert len(log.scanned) == 1  # the head Query (META + newest message)

    _send(api, reviewer, reply_to, "r2")
    with queries(stack) as log:
        later = _read(api, worker, inbox, after=page["next_cursor"])
    assert [m["body"] for m in later["messages"]] == ["r2"]
    # The page Query started past the ten messages examined (and skipped) last time.
    assert log.scanned == [2, 1]


def test_m3_a_page_query_examines_about_as_many_items_as_this_side_needs(api, agents, stack):
    """Reads cost what they examine. The chain: start (seq 1, to the reviewer), r1 (2, to
    the worker), w0–w29 (3–32, to the reviewer), r2 and r3 (33, 34, to the worker). After
    the head Query (META + the newest message: 2 items), a page Query examines the stretch
    expected to hold the messages wanted, from the per-side counts the head carries."""
    worker, reviewer, inbox, reply_to = _pair(api, agents)
    _send(api, reviewer, reply_to, "r1")
    for i in range(30):
        _send(api, worker, inbox, f"w{i}")
        stack.clock.advance(60)  # under the hourly send limit
    _send(api, reviewer, reply_to, "r2")
    _send(api, reviewer, reply_to, "r3")

    def page(**query: Any) -> tuple[list[str], list[int], str]:
        with queries(stack) as log:
            body = _read(api, worker, inbox, **query)
        return [m["body"] for m in body["messages"]], log.scanned, body["next_cursor"]

    # All three of this side's: all 34 items are needed anyway, in one Query.
    assert page(limit=3)[:2] == (["r1", "r2", "r3"], [2, 34])
    # Two of the three: 34 × 2/3 rounded up, plus a margin of 2, holds only r1; then one
    # more among the 9 left, two of them this side's (9 × 1/2 up, + 2 = 7: none there);
    # then the last two items (a budget of 3, two left), and the page is cut to two.
    assert page(limit=2)[:2] == (["r1", "r2"], [2, 25, 7, 2])
    # Walking one at a time, each cursor carries this side's count: a page starts after
    # the items examined before it, and the last one needs the head alone.
    first, scanned, cursor = page(limit=1)
    assert (first, scanned) == (["r1"], [2, 14])  # 34 × 1/3 up, + 2
    second, scanned, cursor = page(limit=1, after=cursor)
    assert (second, scanned) == (["r2"], [2, 12, 6, 2])
    third, scanned, cursor = page(limit=1, after=cursor)
    assert (third, scanned) == (["r3"], [2, 1])  # r3 is all that is left
    assert page(after=cursor) == ([], [2], cursor)
    # The other side's messages alone are new: the head's counts say none is this side's.
    for i in range(3):
        _send(api, worker, inbox, f"x{i}")
    assert page(after=cursor) == ([], [2], cursor)
    # Read whole, the chain ends on the other side's x0–x2: the cursor still moves to the
    # newest message, with its count, so another of theirs needs no page Query either.
    messages, scanned, newest = page(limit=100)
    assert (messages, scanned) == (["r1", "r2", "r3"], [2, 37])
    _send(api, worker, inbox, "x3")
    assert page(after=newest) == ([], [2], newest)
    # A cursor of an earlier release, with no count: the page Query looks past seq 34 and
    # finds nothing of this side's (x0–x3, 4 items), and the next cursor has the count.
    from agentworks.messaging.cursors import Cursors
    from agentworks.signing import Signer

    countless = Cursors(Signer(b"test-signing-key-0123456789")).inbox(inbox, 34)
    messages, scanned, counted = page(after=countless)
    assert (messages, scanned) == ([], [2, 4])
    _send(api, worker, inbox, "x4")
    assert page(after=counted) == ([], [2], counted)
    _send(api, reviewer, reply_to, "r4")  # seq 40
    assert page(after=countless)[:2] == (["r4"], [2, 6])
    # A count-less cursor at the newest message: nothing newer, so no page Query.
    cursors = Cursors(Signer(b"test-signing-key-0123456789"))
    assert page(after=cursors.inbox(inbox, 40))[:2] == ([], [2])
    # With no count, a Query examines twice the messages wanted, and the page goes on
    # until it has them (x0–x4 at 35–39, r4 at 40)…
    assert page(limit=1, after=countless)[:2] == (["r4"], [2, 2, 2, 2])
    # …and stops where the items end: four after seq 36, the fourth the newest.
    assert page(limit=2, after=cursors.inbox(inbox, 36))[:2] == (["r4"], [2, 4])
    # A page cut to its size carries the count of its last message: 40 × 2/4 up + 2 = 22
    # hold r1; 18 × 1/3 up + 2 = 8 hold none; 10 × 1/3 up + 2 = 6 hold r2 and r3.
    two, scanned, cut = page(limit=2)
    assert (two, scanned) == (["r1", "r2"], [2, 22, 8, 6])
    # r3 and r4 wait among the 7 after r2: 7 × 1/2 up + 2 = 6 items hold r3.
    assert page(limit=1, after=cut)[:2] == (["r3"], [2, 6])


def test_m11_a_send_retried_past_the_inboxs_idle_days_is_refused_as_expired(
    api, agents, stack, monkeypatch
):
    """Another send took the seq, and by the time this one reads the head again the
    conversation has crossed its 7 idle days: refused as expired, in the same words as a
    send that found it so at once, and nothing is stored."""
    from agentworks.messaging.conversation_store import WriteConflict

    worker, _reviewer, inbox, _reply_to = _pair(api, agents)
    store = stack.services.messaging._conversations
    real_append = store.append

    def taken_meanwhile(message: Any) -> None:
        monkeypatch.setattr(store, "append", real_append)
        stack.clock.advance(limits.INBOX_IDLE_SECONDS)
        raise WriteConflict()

    monkeypatch.setattr(store, "append", taken_meanwhile)
    late = api("POST", "/v1/messages", worker, {"inbox_id": inbox, "message": "late"})
    assert (late.status, late.body["error"]["message"]) == (
        410,
        "This inbox expired after 7 idle days. Start a new conversation with target=agent:NAME.",
    )
    assert [m[2] for m in _chain(stack, inbox)] == ["start"]


def test_m1_a_send_whose_seq_is_always_taken_gives_up_saying_so(api, agents, stack, monkeypatch):
    """Every attempt finds its seq taken by another send: after a bounded number of
    attempts the send is refused as a conflict to retry, and nothing is stored."""
    from agentworks.messaging.conversation_store import WriteConflict
    from agentworks.messaging.first_contacts import MAX_WRITE_ATTEMPTS

    worker, _reviewer, inbox, _reply_to = _pair(api, agents)
    attempts: list[int] = []

    def taken(message: Any) -> None:
        attempts.append(message.seq)
        raise WriteConflict()

    monkeypatch.setattr(stack.services.messaging._conversations, "append", taken)
    busy = api("POST", "/v1/messages", worker, {"inbox_id": inbox, "message": "busy"})
    assert (busy.status, busy.body["error"]["message"]) == (
        409,
        "The conversation is too busy right now; retry with the same submission_id.",
    )
    assert attempts == [2] * MAX_WRITE_ATTEMPTS
    assert [m[2] for m in _chain(stack, inbox)] == ["start"]


def test_m1_a_send_reads_its_conversations_head_once_eventually_consistent(api, agents, stack):
    """Half the read units: the chained put refuses a seq a stale head would reuse, so the
    send's one head Query need not be strongly consistent (and is not made twice)."""
    worker, _reviewer, inbox, _reply_to = _pair(api, agents)
    reads: list[bool] = []

    def query(params: dict[str, Any], **_: Any) -> None:
        reads.append(bool(params.get("ConsistentRead")))

    stack.client.meta.events.register("provide-client-params.dynamodb.Query", query)
    try:
        _send(api, worker, inbox, "once")
    finally:
        stack.client.meta.events.unregister("provide-client-params.dynamodb.Query", query)
    assert reads == [False]


def test_m3_expired_messages_a_page_examined_count_as_this_sides(api, agents, stack):
    """Two messages to the worker whose TTL passed while DynamoDB still holds them (it
    deletes up to 48 h late) count among the worker's messages examined, though the page
    shows neither: once the head's count of them is examined, the page Query stops. The
    chain: start (seq 1, to the reviewer), e1 and e2 (2, 3, to the worker), w0–w19 (4–23)."""
    worker, reviewer, inbox, reply_to = _pair(api, agents)
    _send(api, reviewer, reply_to, "e1")
    _send(api, reviewer, reply_to, "e2")
    for i in range(20):
        _send(api, worker, inbox, f"w{i}")
        stack.clock.advance(60)  # under the hourly send limit
    conversation = f"CONV#{parse_inbox_id(inbox).conversation}"
    for seq in (2, 3):
        stack.client.update_item(
            TableName=stack.settings.messages_table,
            Key=to_item({"pk": conversation, "sk": keys.message_sk(seq)}),
            UpdateExpression="SET #ttl = :past",
            ExpressionAttributeNames={"#ttl": keys.TTL_ATTRIBUTE},
            ExpressionAttributeValues=to_item({":past": int(stack.clock.now()) - 1}),
        )
    with queries(stack) as log:
        page = _read(api, worker, inbox, limit=1)
    # The head (2 items), then 23 × 1/2 rounded up + 2 = 14 items: start, e1, e2, w0–w10.
    # Both of the worker's two are among them, so no second Query looks at w11–w19.
    assert (page["messages"], log.scanned) == ([], [2, 14])
    assert _read(api, worker, inbox, after=page["next_cursor"])["messages"] == []


def test_m3_a_page_shows_a_message_just_sent_through_a_lagging_replica(api, agents, stack):
    worker, reviewer, inbox, reply_to = _pair(api, agents)
    before = _read(api, worker, inbox)
    _send(api, reviewer, reply_to, "r1")
    stale_reads.install(stack.client).missing()  # a replica that has not seen the partition
    page = _read(api, worker, inbox, after=before["next_cursor"])
    assert [m["body"] for m in page["messages"]] == ["r1"]


def test_m3_inbox_state_reads_what_this_side_sent_twice_the_records_at_a_time(
    api, agents, stack, monkeypatch
):
    """The state's newest delivery records are this side's sent messages, read newest
    first in Queries of twice the records shown, until there are enough."""
    monkeypatch.setattr(limits, "STATE_DELIVERY_RECORDS", 2)
    worker, reviewer, inbox, reply_to = _pair(api, agents)
    sent = {text: _send(api, worker, inbox, text).body["message_id"] for text in ("two", "three")}
    for n in range(3):
        _send(api, reviewer, reply_to, f"r{n}")
    real_query = stack.client.query
    examined: list[int] = []

    def query(**request: Any) -> Any:
        answer = real_query(**request)
        if "receipt" in request.get("ProjectionExpression", ""):  # the sent records' read
            examined.append(answer["ScannedCount"])
        return answer

    monkeypatch.setattr(stack.client, "query", query)

    def state() -> list[str]:
        examined.clear()
        body = api("GET", f"/v1/inboxes/{inbox}/state", worker).body
        return [r["message_id"] for r in body["delivery_records"]]

    # Newest first: r2, r1, r0, three (one of this side's), then two and start (the rest).
    assert state() == [sent["three"], sent["two"]]
    assert examined == [4, 2]
    sent.update({text: _send(api, worker, inbox, text).body["message_id"] for text in ("x0", "x1")})
    # x1, x0, r2, r1: two of this side's, enough in the first Query.
    assert state() == [sent["x1"], sent["x0"]]
    assert examined == [4]


def test_m2_a_send_whose_claim_answer_was_lost_is_stored_once(api, agents, stack, monkeypatch):
    """The submission id's claim committed but its answer was lost (a 500 after the write;
    botocore retries): the send goes on as the id's holder, not as a send in progress."""
    from tests.support import faults

    worker, reviewer, inbox, reply_to = _pair(api, agents)
    plan = faults.install(stack.client, monkeypatch)
    plan.fail("PutItem", "InternalServerError", where=faults.touches(pk="SUB#"), commit_first=True)
    body = {"inbox_id": inbox, "message": "once", "submission_id": "s-1"}
    sent = api("POST", "/v1/messages", worker, body)
    assert sent.status == 201, sent.body
    assert plan.injected == 1
    again = api("POST", "/v1/messages", worker, body).body
    assert again == {**sent.body, "replayed": True}
    bodies = [m["body"] for m in _read(api, reviewer, reply_to)["messages"]]
    assert bodies == ["start", "once"]


def test_m3_long_poll_wakes_only_for_this_side(api, agents, stack):
    worker, _, inbox, _ = _pair(api, agents)
    tail = _read(api, worker, inbox)
    # The worker's own messages (delivered to the reviewer) never end the worker's wait.
    _send(api, worker, inbox, "to the reviewer")
    start = stack.clock.now()
    waited = _read(api, worker, inbox, after=tail["next_cursor"], wait_seconds=5)
    assert waited["messages"] == [] and stack.clock.now() - start >= 4


def test_m7_ack_only_for_a_message_delivered_to_the_callers_side(api, agents, stack):
    """Sequence numbers are conversation-wide, so a message id built from the caller's own
    inbox and the seq of a message it sent must not reach the peer's receipt."""
    worker, reviewer, inbox, reply_to = _pair(api, agents)
    sent = _send(api, worker, inbox, "for the reviewer").body  # seq 2, delivered to b
    forged = sent["message_id"].replace(
        parse_inbox_id(reply_to).conversation + "b", parse_inbox_id(inbox).conversation + "a"
    )
    assert forged != sent["message_id"]
    refused = api("POST", f"/v1/messages/{forged}/ack", worker, {"delivery": "processed"})
    assert refused.status == 404
    page = _read(api, reviewer, reply_to)
    assert [m["receipt"] for m in page["messages"]] == ["stored", "stored"]


# ---------------------------------------------------------------- activity and expiry (M11)


def test_m11_idle_expiry_counts_from_the_newest_message_not_the_hourly_meta(api, agents, stack):
    worker, reviewer, inbox, reply_to = _pair(api, agents)
    stack.clock.advance(600)  # same activity hour: META is not rewritten
    _send(api, reviewer, reply_to, "ten minutes later")
    stack.clock.advance(7 * DAY - 600)  # 7 days after the first message only
    assert api("GET", "/v1/messages", worker, query={"inbox_id": inbox}).status == 200
    from tests.support.handlers import LambdaContext, load_handler

    tick = load_handler("tick").handler({"source": "aws.events"}, LambdaContext())
    assert tick["retired_idle"] == 0
    stack.clock.advance(600)
    assert api("GET", "/v1/messages", worker, query={"inbox_id": inbox}).status == 410


def test_m11_meta_moves_to_a_new_activity_hour_once(api, agents, stack):
    worker, reviewer, inbox, reply_to = _pair(api, agents)
    table = stack.settings.messages_table
    key = to_item(keys.conversation(parse_inbox_id(inbox).conversation))

    def meta() -> dict:
        return from_item(stack.client.get_item(TableName=table, Key=key)["Item"]) or {}

    first_hour = meta()["activity_hour"]
    updates: list[str] = []
    stack.client.meta.events.register(
        "provide-client-params.dynamodb.UpdateItem",
        lambda params, **_: updates.append(params["Key"]["sk"]["S"]),
    )
    stack.clock.advance(3600)
    _send(api, reviewer, reply_to, "next hour")
    _send(api, worker, inbox, "same hour")
    assert meta()["activity_hour"] == first_hour + 1
    assert meta()["idle_key"].startswith(f"{first_hour + 1:08d}#")
    assert updates == ["META"]  # the first send of the hour only


def test_m11_tick_checks_the_newest_message_before_retiring(api, agents, stack):
    """A send that stopped after storing its message but before moving META to its hour
    leaves META behind; the tick's sweep still retires only a conversation whose newest
    message is 7 days old, and repairs META instead."""
    from tests.support.handlers import LambdaContext, load_handler

    worker, reviewer, inbox, reply_to = _pair(api, agents)
    table = stack.settings.messages_table
    key = to_item(keys.conversation(parse_inbox_id(inbox).conversation))
    before = from_item(stack.client.get_item(TableName=table, Key=key)["Item"]) or {}
    stack.clock.advance(2 * 3600)
    _send(api, reviewer, reply_to, "two hours later")
    stack.client.put_item(TableName=table, Item=to_item(before))  # the lost hourly move
    stack.clock.advance(7 * DAY - 3600)  # idle 7 days by META, not by the newest message
    tick = load_handler("tick").handler({"source": "aws.events"}, LambdaContext())
    assert tick["retired_idle"] == 0
    repaired = from_item(stack.client.get_item(TableName=table, Key=key)["Item"]) or {}
    assert repaired["activity_hour"] == before["activity_hour"] + 2
    assert api("GET", "/v1/messages", worker, query={"inbox_id": inbox}).status == 200
    stack.clock.advance(2 * 3600)
    tick = load_handler("tick").handler({"source": "aws.events"}, LambdaContext())
    assert tick["retired_idle"] == 1
    assert api("GET", "/v1/messages", worker, query={"inbox_id": inbox}).status == 410


# ---------------------------------------------------------------- submission ids (M2)


def _pending_binding(stack: Any, account: str, sender: str, sid: str, **fields: Any) -> None:
    from agentworks.messaging.models import SubmissionBinding
    from agentworks.messaging.submission_store import binding_to_item

    binding = SubmissionBinding(
        content_hash=fields["digest"],
        inbox_id=fields["inbox_id"],
        conversation_id=fields["inbox_id"].replace("ibx_", "cnv_")[:-1],
        message_id=None,
        created_at=None,
        claim="crashed-send",
        claimed_at=int(stack.clock.now() * 1000),
        sender=sender,
        submission_id=sid,
        account_id=account,
    )
    stack.client.put_item(
        TableName=stack.settings.messages_table, Item=to_item(binding_to_item(binding))
    )


def _digest(inbox: str, sender: str, body: str) -> str:
    from agentworks.messaging.submissions import content_hash

    return content_hash(inbox, sender, body)


def test_m2_a_send_that_stopped_after_storing_is_recovered_not_repeated(
    api, agents, stack, monkeypatch
):
    """The message was stored but the send stopped before naming it on its binding: once
    the claim is stale, a retry finds that message and replays its receipt."""
    from agentworks.messaging import submissions

    monkeypatch.setattr(submissions, "_CLAIM_WAIT_S", 0.2)  # how long a retry waits for it
    worker, reviewer, inbox, reply_to = _pair(api, agents)
    account = api("GET", "/v1/whoami", worker).body["account_id"]
    body = {"inbox_id": inbox, "message": "exactly once", "submission_id": "crash-1"}
    _pending_binding(
        stack,
        account,
        "external",
        "crash-1",
        digest=_digest(inbox, "external", "exactly once"),
        inbox_id=inbox,
    )
    # While the claim is fresh, a retry waits for the send in progress, then says so.
    busy = api("POST", "/v1/messages", worker, body)
    assert (busy.status, busy.body["error"]) == (
        409,
        {
            "code": "conflict",
            "message": "A send with this submission_id is still in progress; retry in a few "
            "seconds with the same submission_id.",
            "field": "submission_id",
        },
    )
    # What the stopped send had stored: its message, never named on the binding.
    from agentworks.messaging.conversation_store import ConversationStore
    from agentworks.messaging.models import StoredMessage

    store = ConversationStore(stack.client, stack.settings.messages_table)
    now_ms = int(stack.clock.now() * 1000)
    head = store.head(parse_inbox_id(inbox).conversation, now_ms)
    assert head.latest is not None and head.last_seq == 1
    store.append(
        StoredMessage(
            conversation=parse_inbox_id(inbox).conversation,
            side="b",
            seq=2,
            sender="external",  # the worker's side of _pair is the account's external one
            body="exactly once",
            created_at=now_ms,
            window=[*head.window(), now_ms],
            counts={"a": 0, "b": 2},
            submission_id="crash-1",
        )
    )
    stack.clock.advance(31)
    retry = api("POST", "/v1/messages", worker, body)
    assert retry.status == 200 and retry.body["replayed"] is True
    read = _read(api, reviewer, reply_to)["messages"]
    assert [m["body"] for m in read] == ["start", "exactly once"]
    # The receipt of the message the stopped send stored: its id and its time, not now's.
    assert retry.body["message_id"] == read[1]["message_id"]
    assert retry.body["message_id"].endswith("b0000000002")
    assert retry.body["created_at"] == read[1]["created_at"] == iso(now_ms)
    # The binding now names the message: later retries replay at once.
    assert api("POST", "/v1/messages", worker, body).body["message_id"] == retry.body["message_id"]


def test_m2_a_real_send_stopped_before_naming_its_message_is_recovered(api, agents, stack, faults):
    """The same, end to end: the send stores its message under its submission id, and
    every attempt to name it on the binding fails (best effort: the send still answers
    201). A retry once the claim is stale finds that message by its submission id and
    replays it rather than storing it again."""
    from tests.support.faults import touches

    worker, reviewer, inbox, reply_to = _pair(api, agents)
    body = {"inbox_id": inbox, "message": "exactly once", "submission_id": "stop-1"}
    naming = faults.exhaust("UpdateItem", "InternalServerError", where=touches(pk="SUB#"))
    sent = api("POST", "/v1/messages", worker, body)
    assert sent.status == 201 and naming.injected == faults.max_attempts
    faults.clear()
    stack.clock.advance(31)
    retry = api("POST", "/v1/messages", worker, body)
    assert retry.status == 200 and retry.body["replayed"] is True, retry.body
    assert retry.body["message_id"] == sent.body["message_id"]
    read = _read(api, reviewer, reply_to)["messages"]
    assert [m["body"] for m in read] == ["start", "exactly once"]


def test_m2_a_stale_claim_that_stored_nothing_is_taken_over(api, agents, stack):
    worker, reviewer, inbox, reply_to = _pair(api, agents)
    account = api("GET", "/v1/whoami", worker).body["account_id"]
    _pending_binding(
        stack,
        account,
        "external",
        "crash-2",
        digest=_digest(inbox, "external", "hello"),
        inbox_id=inbox,
    )
    stack.clock.advance(31)
    body = {"inbox_id": inbox, "message": "hello", "submission_id": "crash-2"}
    taken = api("POST", "/v1/messages", worker, body)
    assert taken.status == 201 and taken.body["replayed"] is False
    assert api("POST", "/v1/messages", worker, body).status == 200
    assert [m["body"] for m in _read(api, reviewer, reply_to)["messages"]] == ["start", "hello"]


def test_m2_refused_send_gives_its_submission_id_back(api, agents, stack):
    worker, _, inbox, _ = _pair(api, agents)
    for i in range(39):
        _send(api, worker, inbox, f"{i}")
    body = {"inbox_id": inbox, "message": "later", "submission_id": "after-limit"}
    assert api("POST", "/v1/messages", worker, body).status == 429
    stack.clock.advance(3600)
    # Nothing was stored under the id, so the same id sends the message now.
    again = api("POST", "/v1/messages", worker, body)
    assert again.status == 201 and again.body["replayed"] is False


def test_m2_same_submission_id_from_both_sides_are_separate(api, agents, stack):
    worker, reviewer, inbox, reply_to = _pair(api, agents)
    mine = _send(api, worker, inbox, "one", submission_id="shared").body
    theirs = _send(api, reviewer, reply_to, "one", submission_id="shared").body
    assert mine["message_id"] != theirs["message_id"]


# ---------------------------------------------------------------- acting_as (M5)


def _acting_as(stack: Any, token: str) -> dict[str, str]:
    """What the authorizer passes on for this token: name → agent_id."""
    return stack.principal(token).acting_as


def _connection_item(stack: Any, account: str, connection_id: str) -> dict:
    item = stack.client.get_item(
        TableName=stack.settings.identity_table,
        Key=to_item(connection_key(account, connection_id)),
    )["Item"]
    return from_item(item) or {}


def test_m5_allow_list_change_counts_from_the_next_request(api, agents, stack):
    owner, helper = agents.connection("owner"), agents.connection("helper")
    registered = api("POST", "/v1/agents", owner["token"], {"agent_name": "reviewer"}).body
    assert _acting_as(stack, owner["token"]) == {"reviewer": registered["agent_id"]}
    assert _acting_as(stack, helper["token"]) == {}
    worker = agents.named("worker")
    sent = api("POST", "/v1/messages", worker, {"target": "agent:reviewer", "message": "hi"}).body
    reply_to = api("GET", "/v1/messages", owner["token"], query={"agent_name": "reviewer"}).body[
        "messages"
    ][0]["reply_address"]
    as_helper = {"inbox_id": reply_to, "message": "from helper", "agent_name": "reviewer"}
    assert api("POST", "/v1/messages", helper["token"], as_helper).status == 404

    api(
        "POST",
        "/v1/agents",
        owner["token"],
        {"agent_name": "reviewer", "allowed_connection_ids": [helper["connection_id"]]},
    )
    assert _acting_as(stack, helper["token"]) == {"reviewer": registered["agent_id"]}
    assert api("POST", "/v1/messages", helper["token"], as_helper).status == 201

    # Dropped from the list: refused on the very next request, everywhere.
    api(
        "POST",
        "/v1/agents",
        owner["token"],
        {"agent_name": "reviewer", "allowed_connection_ids": []},
    )
    assert _acting_as(stack, helper["token"]) == {}
    assert api("POST", "/v1/messages", helper["token"], as_helper).status == 404
    assert api("GET", "/v1/messages", helper["token"], query={"inbox_id": reply_to}).status == 404
    assert (
        api("GET", "/v1/messages", helper["token"], query={"agent_name": "reviewer"}).status == 404
    )
    assert api("POST", "/v1/messages", owner["token"], as_helper).status == 201
    assert sent["inbox_id"]


def test_m5_unregister_refuses_the_next_request_of_every_allowed_connection(api, agents, stack):
    owner, helper = agents.connection("owner"), agents.connection("helper")
    api(
        "POST",
        "/v1/agents",
        owner["token"],
        {"agent_name": "worker", "allowed_connection_ids": [helper["connection_id"]]},
    )
    agents.named("reviewer")
    sent = api(
        "POST",
        "/v1/messages",
        helper["token"],
        {"agent_name": "worker", "target": "agent:reviewer", "message": "hi"},
    ).body
    assert api("DELETE", "/v1/agents/worker", owner["token"]).status == 200
    for token in (owner["token"], helper["token"]):
        assert _acting_as(stack, token) == {}
        assert api("GET", "/v1/messages", token, query={"inbox_id": sent["inbox_id"]}).status == 404
        assert (
            api("POST", "/v1/messages", token, {"inbox_id": sent["inbox_id"], "message": "x"})
        ).status == 404
        assert api("GET", "/v1/messages", token, query={"agent_name": "worker"}).status == 404
    account = api("GET", "/v1/whoami", owner["token"]).body["account_id"]
    for connection_id in (owner["connection_id"], helper["connection_id"]):
        assert _connection_item(stack, account, connection_id)["acting_as"] == {}


def test_m5_racing_allow_list_changes_leave_connections_matching_the_list(api, agents, stack):
    owner = agents.connection("owner")
    helpers = [agents.connection(f"h{i}") for i in range(4)]
    api("POST", "/v1/agents", owner["token"], {"agent_name": "shared"})
    choices = [[h["connection_id"] for h in helpers[i : i + 2]] for i in range(3)]

    def change(allowed: list[str]) -> int:
        body = {"agent_name": "shared", "allowed_connection_ids": allowed}
        return api("POST", "/v1/agents", owner["token"], body).status

    with ThreadPoolExecutor(max_workers=3) as pool:
        statuses = list(pool.map(change, choices * 2))
    assert set(statuses) <= {200, 409}
    final = {a["agent_name"]: a for a in api("GET", "/v1/agents", owner["token"]).body["agents"]}[
        "shared"
    ]
    allowed = set(final["allowed_connection_ids"])
    for conn in [owner, *helpers]:
        names = _acting_as(stack, conn["token"])
        assert ("shared" in names) == (conn["connection_id"] in allowed), conn["connection_id"]


@pytest.mark.parametrize("read", ["inbox", "mailbox"])
def test_m4_presence_refreshes_at_most_once_a_minute(api, agents, stack, read):
    worker, reviewer, _, reply_to = _pair(api, agents)
    writes: list[str] = []

    def record(params: dict, **_: object) -> None:
        if not params["Key"]["pk"]["S"].startswith("USAGE#"):  # usage counts (issue 12)
            writes.append(params["Key"]["sk"]["S"].split("#")[0])

    stack.client.meta.events.register("provide-client-params.dynamodb.UpdateItem", record)
    query = {"inbox_id": reply_to} if read == "inbox" else {"agent_name": "reviewer"}
    stack.clock.advance(61)
    for _ in range(3):
        assert api("GET", "/v1/messages", reviewer, query=query).status == 200
        stack.clock.advance(20)
    assert writes == ["CONN"]  # one small update of the connection item, no registration write
    stack.clock.advance(60)
    api("GET", "/v1/messages", reviewer, query=query)
    assert writes == ["CONN", "CONN"]
    listed = {a["agent_name"]: a for a in api("GET", "/v1/agents", worker).body["agents"]}
    assert listed["reviewer"]["online"] is True and listed["worker"]["online"] is False
    assert listed["reviewer"]["last_seen_at"] == _iso(stack.clock.now())
    stack.clock.advance(121)
    assert api("GET", "/v1/agents", worker).body["agents"][0]["online"] is False


def _iso(seconds: float) -> str:
    from agentworks.messaging.models import iso

    return iso(int(seconds * 1000)) or ""


# ---- a party's post as the system (a Crew's reply): the same chain and the same once ----


def _head_reads(monkeypatch: Any, meanwhile: Callable[[], None] | None = None) -> list[str]:
    """Counts the conversation head's reads; `meanwhile` runs once, right after the first
    read answers (another send taking the next seq before this one writes)."""
    from agentworks.messaging.conversation_store import ConversationStore

    original = ConversationStore.head
    reads: list[str] = []

    def head(self: Any, conversation: str, now_ms: int, consistent: bool = True) -> Any:
        found = original(self, conversation, now_ms, consistent)
        reads.append(conversation)
        if meanwhile is not None and len(reads) == 1:
            meanwhile()
        return found

    monkeypatch.setattr(ConversationStore, "head", head)
    return reads


def test_a_post_as_the_system_reads_its_head_once(api, agents, stack, monkeypatch) -> None:
    _worker, _reviewer, _inbox, reply_to = _pair(api, agents)
    reads = _head_reads(monkeypatch)
    stack.services.messaging.send_as_system(reply_to, "from the Crew")
    assert len(reads) == 1
    assert _chain(stack, reply_to)[-1] == (2, "a", "from the Crew")


def test_a_post_as_the_system_that_loses_its_seq_is_retried_on_a_fresh_head(
    api, agents, stack, monkeypatch
) -> None:
    _worker, _reviewer, inbox, reply_to = _pair(api, agents)
    messaging = stack.services.messaging
    _head_reads(monkeypatch, meanwhile=lambda: messaging.send_as_system(inbox, "meanwhile"))
    messaging.send_as_system(reply_to, "the reply")
    assert _chain(stack, inbox)[-2:] == [(2, "b", "meanwhile"), (3, "a", "the reply")]


def test_a_post_as_the_system_whose_binding_was_not_named_is_recovered_not_repeated(
    api, agents, stack, monkeypatch
) -> None:
    """The post stored its message, then naming it on the submission's binding failed:
    once the claim is stale, the same post again finds that message (by the submission id
    it was stored with) and answers its receipt, storing nothing more."""
    from botocore.exceptions import ClientError

    from agentworks.messaging.conversation_store import ConversationStore

    _worker, _reviewer, inbox, reply_to = _pair(api, agents)
    original = ConversationStore.complete_binding
    lost: list[str] = []

    def complete_binding(self: Any, *args: Any) -> None:
        if not lost:
            lost.append("once")
            raise ClientError({"Error": {"Code": "InternalServerError"}}, "UpdateItem")
        original(self, *args)

    monkeypatch.setattr(ConversationStore, "complete_binding", complete_binding)
    messaging = stack.services.messaging
    first = messaging.send_as_system(reply_to, "answer once", submission_id="reply-1")
    stack.clock.advance(31)  # the claim is stale: a retry may take it over
    again = messaging.send_as_system(reply_to, "answer once", submission_id="reply-1")
    assert lost == ["once"]
    assert again.message_id == first.message_id and again.replayed
    assert [body for _, _, body in _chain(stack, inbox)] == ["start", "answer once"]


def test_nothing_was_received_before_a_conversations_first_message(api, agents, stack) -> None:
    """The notes a Crew's run reads with a request (C1) are those before it: before the
    first message there are none, not the first message itself."""
    from agentworks.messaging.conversation_store import ConversationStore

    _worker, _reviewer, inbox, _reply_to = _pair(api, agents)
    store = ConversationStore(stack.client, stack.settings.messages_table)
    conversation = parse_inbox_id(inbox).conversation
    assert store.received_before(conversation, "b", 1, 10) == []
    stack.services.messaging.send_as_system(inbox, "second")  # seq 2, to the reviewer (b)
    assert [m.body for m in store.received_before(conversation, "b", 2, 10)] == ["start"]
    assert [m.body for m in store.received_before(conversation, "b", 3, 10)] == [
        "second",
        "start",
    ]
    # Read strongly: a replica that has not seen the conversation would answer no notes.
    stale_reads.install(stack.client).missing()
    assert [m.body for m in store.received_before(conversation, "b", 2, 10)] == ["start"]


def test_a_mailbox_entry_reads_back_whole_and_strongly(api, agents, stack) -> None:
    from agentworks.messaging.conversation_store import ConversationStore
    from agentworks.messaging.models import MailboxEntry
    from tests.integration.test_write_faults import items

    _pair(api, agents)
    [stored] = items(stack, stack.settings.messages_table, pk="MBX#")
    agent_id = str(stored["pk"]).removeprefix("MBX#")
    store = ConversationStore(stack.client, stack.settings.messages_table)
    stale_reads.install(stack.client).missing()  # a replica that has not seen the entry
    now_ms = int(stack.clock.now() * 1000)
    assert store.mailbox_page(agent_id, 0, 10, now_ms) == [
        MailboxEntry(
            agent_id=agent_id,
            seq=1,
            message_id=stored["message_id"],
            conversation_id=stored["conversation_id"],
            reply_inbox_id=stored["reply_inbox_id"],
            sender=stored["sender"],
            body="start",
            created_at=int(stored["created_at"]),
        )
    ]


def test_a_mailbox_page_goes_on_past_entries_that_expired(api, agents, stack) -> None:
    """Entries expire oldest first (M11): a page read after the first one's time shows the
    later ones, not nothing."""
    from agentworks import limits

    worker, reviewer = agents.named("worker"), agents.named("reviewer")
    other = agents.connection("other")["token"]
    first = {"target": "agent:reviewer", "message": "first"}
    assert api("POST", "/v1/messages", worker, first).status == 201
    stack.clock.advance(3 * limits.DAY_SECONDS)
    later = {"target": "agent:reviewer", "message": "later"}
    assert api("POST", "/v1/messages", other, later).status == 201
    stack.clock.advance(limits.MESSAGE_RETENTION_SECONDS - 3 * limits.DAY_SECONDS)
    page = api("GET", "/v1/messages", reviewer, query={"agent_name": "reviewer", "after": "0"})
    assert [m["body"] for m in page.body["messages"]] == ["later"]


def test_m2_a_replay_reads_the_binding_from_its_refused_claim(api, agents, stack) -> None:
    """The claim that finds the id taken returns the binding it found (ALL_OLD on the
    refused put): the replay reads no binding again."""
    worker, _reviewer, inbox, _reply_to = _pair(api, agents)
    body = {"inbox_id": inbox, "message": "once", "submission_id": "replayed-1"}
    assert api("POST", "/v1/messages", worker, body).status == 201
    reads: list[str] = []
    stack.client.meta.events.register(
        "before-call.dynamodb.GetItem",
        lambda params, **_: reads.append(str(params)),  # the request as sent
    )
    again = api("POST", "/v1/messages", worker, body)
    assert again.status == 200 and again.body["replayed"] is True
    assert not [key for key in reads if "SUB#" in key], reads
