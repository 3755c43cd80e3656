"""DynamoDB requests and capacity units of each hot path, measured through the handlers.

A small cast in one account: `alice` and `bob` are registered names (each on its own
connection) and `ext` is an unnamed connection. Each path is driven once with the meter
on; authentication's use is counted apart from the route's (see stack.BenchApi).
Then the same paths run unmetered to time the handlers for the cost model.
"""

from __future__ import annotations

import statistics
import uuid
from dataclasses import dataclass, field
from typing import Any

from bench.meter import Tally
from bench.stack import Invocation, Stack
from tests.support.clock import FakeClock

# "1 KB body": 1,024 ASCII characters, so the message item itself crosses 1 KB.
BODY = ("The quick brown fox jumps over the lazy dog. " * 23)[:1024]
PAGE = 10
# Sends this far apart keep every conversation under its hourly rate limit (40 an hour);
# uneven, so stored timestamps carry realistic digits.
SEND_SPACING_S = 97.531


@dataclass
class Cast:
    alice: str
    bob: str
    ext: str


@dataclass
class RequestCosts:
    """Per-path tallies (route only) plus authentication's, and handler durations."""

    paths: dict[str, Tally] = field(default_factory=dict)
    authentication: Tally = field(default_factory=Tally)
    durations: dict[str, float] = field(default_factory=dict)  # medians, seconds


def _connection(stack: Stack, name: str) -> str:
    done = stack.call("POST", "/v1/connections", stack.admin_token, {"name": name})
    return str(done.body["token"])


def _register(stack: Stack, token: str, name: str, metered: bool = False) -> Invocation:
    return stack.call("POST", "/v1/agents", token, {"agent_name": name}, metered=metered)


def _send(stack: Stack, token: str, metered: bool = False, **fields: Any) -> Invocation:
    if isinstance(stack.clock, FakeClock):
        stack.clock.advance(SEND_SPACING_S)
    body = {"message": BODY, **{k: v for k, v in fields.items() if v is not None}}
    return stack.call("POST", "/v1/messages", token, body, metered=metered)


def _read(stack: Stack, token: str, metered: bool = False, **query: Any) -> Invocation:
    return stack.call("GET", "/v1/messages", token, query=query, metered=metered)


def measure(stack: Stack) -> RequestCosts:
    """Requires a stack on a FakeClock (rate windows and the long-poll move without sleeping)."""
    assert isinstance(stack.clock, FakeClock)
    costs = RequestCosts()
    cast = Cast(
        _connection(stack, "alice-conn"), _connection(stack, "bob-conn"), _connection(stack, "ext")
    )
    paths = costs.paths

    def keep(name: str, done: Invocation) -> Invocation:
        paths[name] = done.api
        costs.authentication = done.authentication  # the same GetItem on every request
        return done

    keep("register", _register(stack, cast.bob, "bob", metered=True))
    _register(stack, cast.alice, "alice")

    # First contact: a new conversation, its first message and the target's mailbox entry.
    first = keep(
        "first_contact",
        _send(stack, cast.alice, True, target="agent:bob", agent_name="alice"),
    )
    alice_inbox = first.body["inbox_id"]
    ext_inbox = _send(stack, cast.ext, target="agent:bob").body["inbox_id"]
    mailbox = _read(stack, cast.bob, agent_name="bob").body["messages"]
    bob_reply = {m["sender"]: m["reply_address"] for m in mailbox}
    bob_alice_inbox, bob_ext_inbox = bob_reply["agent:alice"], bob_reply["external"]
    assert alice_inbox != bob_alice_inbox

    # Sends into an existing inbox, from each kind of party.
    keep("send_named", _send(stack, cast.bob, True, inbox_id=bob_alice_inbox, agent_name="bob"))
    keep("send_external", _send(stack, cast.ext, True, inbox_id=ext_inbox))
    keep(
        "send_named_with_submission",
        _send(
            stack,
            cast.bob,
            True,
            inbox_id=bob_alice_inbox,
            agent_name="bob",
            submission_id=str(uuid.uuid4()),
        ),
    )
    keep(
        "send_external_with_submission",
        _send(stack, cast.ext, True, inbox_id=ext_inbox, submission_id=str(uuid.uuid4())),
    )
    # A named side that leaves agent_name out: the consent comes with the principal anyway.
    keep("send_named_without_agent_name", _send(stack, cast.bob, True, inbox_id=bob_alice_inbox))
    # The first send of a new hour also moves the conversation in the idle indexes.
    stack.clock.advance(3600 - stack.clock.now() % 3600 - SEND_SPACING_S + 1.234)
    keep(
        "send_new_hour",
        _send(stack, cast.bob, True, inbox_id=bob_alice_inbox, agent_name="bob"),
    )

    # Fill both sides of the ext<->bob conversation past one page.
    for _ in range(PAGE):
        _send(stack, cast.ext, inbox_id=ext_inbox)
        _send(stack, cast.bob, inbox_id=bob_ext_inbox, agent_name="bob")

    # Reads of one page of 10. `last_seen_at` is refreshed at most once a minute, so a
    # primed read shows the steady state and an unprimed one the once-a-minute extra.
    named_query = {"inbox_id": bob_ext_inbox, "agent_name": "bob", "limit": PAGE}
    _read(stack, cast.bob, **{**named_query, "limit": 1})
    named = keep("read_named", _read(stack, cast.bob, True, **named_query))
    assert len(named.body["messages"]) == PAGE
    external = keep("read_external", _read(stack, cast.ext, True, inbox_id=ext_inbox, limit=PAGE))
    assert len(external.body["messages"]) == PAGE
    stack.clock.sleep(61)
    keep("read_named_seen_refresh", _read(stack, cast.bob, True, **named_query))

    # Mailbox page: ten first contacts waiting for bob.
    for _ in range(PAGE - len(mailbox)):
        _send(stack, cast.ext, target="agent:bob")
    _read(stack, cast.bob, agent_name="bob", limit=1)
    box = keep("mailbox_read", _read(stack, cast.bob, True, agent_name="bob", limit=PAGE))
    assert len(box.body["messages"]) == PAGE

    # An idle long-poll: nothing arrives for 25 s (the fake clock moves when the service sleeps).
    tail = _read(stack, cast.bob, inbox_id=bob_alice_inbox, agent_name="bob", limit=PAGE)
    started = stack.clock.now()
    idle = keep(
        "idle_wait",
        _read(
            stack,
            cast.bob,
            True,
            inbox_id=bob_alice_inbox,
            agent_name="bob",
            after=tail.body["next_cursor"],
            wait_seconds=25,
        ),
    )
    assert idle.body["messages"] == [] and stack.clock.now() - started >= 25
    # The same wait on the initiating side (a), whose peer's side holds unread messages.
    tail = _read(stack, cast.ext, inbox_id=ext_inbox, limit=100)
    idle = keep(
        "idle_wait_initiator",
        _read(
            stack,
            cast.ext,
            True,
            inbox_id=ext_inbox,
            after=tail.body["next_cursor"],
            wait_seconds=25,
        ),
    )
    assert idle.body["messages"] == []

    costs.durations, busy_inbox = _time_handlers(stack, cast)
    # After the timing rounds that conversation carries a full hour of traffic in its
    # rate window (~37 timestamps), the largest its item gets.
    keep("send_busy", _send(stack, cast.ext, True, inbox_id=busy_inbox))
    return costs


def _time_handlers(stack: Stack, cast: Cast, rounds: int = 30) -> tuple[dict[str, float], str]:
    """Median wall time of each handler (meter off) on the send + page-read paths, and
    the inbox the sends went to."""
    conversation = _send(stack, cast.ext, target="agent:bob").body["inbox_id"]
    page = _read(stack, cast.bob, agent_name="bob", limit=100).body["messages"]
    bob_inbox = page[-1]["reply_address"]  # the newest first contact: this conversation
    sends, reads, auths = [], [], []
    for _ in range(rounds):
        done = _send(stack, cast.ext, inbox_id=conversation)
        sends.append(done.api_seconds)
        auths.append(done.authentication_seconds)
        done = _read(stack, cast.bob, inbox_id=bob_inbox, agent_name="bob", limit=PAGE)
        reads.append(done.api_seconds)
        auths.append(done.authentication_seconds)
    durations = {
        "send": statistics.median(sends),
        "read": statistics.median(reads),
        "authentication": statistics.median(auths),
    }
    return durations, conversation
