"""Wakeups (M9): another turn of a Crew in one exact conversation, fired by the one-minute
tick (the real tick handler, driven with the test's clock past the due time)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from agentworks import limits, runtime
from agentworks.conversations.crew_inbox_store import CrewInboxStore, parse_wakeup_id
from tests.integration.crew_support import CONTRACTS
from tests.integration.test_crew_messages import (
    crew,
    send,
    wait_for_messages,
    wait_for_state,
)
from tests.support.handlers import LambdaContext, load_handler


def tick() -> dict[str, int]:
    return load_handler("tick").handler({"source": "aws.events"}, LambdaContext())


def conversation(api: Any, stack: Any, token: str, messaging: str = "review") -> dict:
    """A conversation with the Crew (under review, so only wakeups make it act)."""
    crew(api, stack, messaging)
    sent = send(api, token, "Remind me about clause 8 later.")
    assert sent.status == 201, sent.body
    return sent.body


def schedule(api: Any, token: str, inbox_id: str, **when: Any) -> Any:
    return api("POST", "/v1/wakeups", token, {"inbox_id": inbox_id, **when})


def iso_in(stack: Any, seconds: float) -> str:
    return datetime.fromtimestamp(stack.clock.now() + seconds, tz=UTC).isoformat()


def wakeup_in_state(state: dict, wakeup_id: str) -> dict:
    for inbox in state["inboxes"]:
        for wakeup in inbox["wakeups"]:
            if wakeup["wakeup_id"] == wakeup_id:
                return wakeup
    raise AssertionError(f"no wakeup {wakeup_id}: {state}")


def test_m9_a_wakeup_fires_once_through_the_tick_and_the_crew_answers(api, stack, agents):
    caller = agents.connection("caller")["token"]
    sent = conversation(api, stack, caller)
    scheduled = schedule(api, caller, sent["inbox_id"], delay_seconds=120)
    assert scheduled.status == 201, scheduled.body
    assert scheduled.body["state"] == "scheduled" and scheduled.body["wakeup_id"].startswith("wku_")
    assert tick()["wakeups_fired"] == 0  # not due yet
    stack.clock.advance(121)
    assert tick()["wakeups_fired"] == 1
    assert tick()["wakeups_fired"] == 0  # a second tick never fires it again
    [answer] = wait_for_messages(api, caller, sent["inbox_id"])
    assert answer["sender"] == "crew:contracts"
    assert answer["body"] == "I can only discuss clauses."  # the wakeup prompt, not a message
    state = wait_for_state(
        api,
        stack,
        lambda s: wakeup_in_state(s, scheduled.body["wakeup_id"])["run_state"] == "succeeded",
    )
    shown = wakeup_in_state(state, scheduled.body["wakeup_id"])
    assert shown["state"] == "fired" and shown["run_id"].startswith("run_")
    # Replies don't cancel wakeups: a new one after a reply still fires.
    again = schedule(api, caller, sent["inbox_id"], delay_seconds=60)
    assert send(api, caller, "Thanks!", inbox_id=sent["inbox_id"]).status == 201
    stack.clock.advance(61)
    assert tick()["wakeups_fired"] == 1
    assert again.status == 201


def test_m9_cancel_prevents_it_and_reschedule_moves_it(api, stack, agents):
    caller = agents.connection("caller")["token"]
    sent = conversation(api, stack, caller)
    cancelled = schedule(api, caller, sent["inbox_id"], delay_seconds=120).body
    moved = schedule(api, caller, sent["inbox_id"], delay_seconds=120).body
    gone = api("DELETE", f"/v1/wakeups/{cancelled['wakeup_id']}", caller)
    assert gone.status == 200 and gone.body["state"] == "cancelled"
    later = api(
        "POST", f"/v1/wakeups/{moved['wakeup_id']}/reschedule", caller, {"delay_seconds": 600}
    )
    assert later.status == 200, later.body
    assert later.body["due_at"] > moved["due_at"] and later.body["state"] == "scheduled"
    stack.clock.advance(121)
    assert tick()["wakeups_fired"] == 0  # one cancelled, the other moved
    stack.clock.advance(600)
    assert tick()["wakeups_fired"] == 1
    state = api("GET", "/v1/crews/contracts/state", stack.admin_token).body
    assert wakeup_in_state(state, cancelled["wakeup_id"])["state"] == "cancelled"
    assert wakeup_in_state(state, moved["wakeup_id"])["state"] == "fired"
    # Only a scheduled wakeup can be cancelled or moved.
    for response in (
        api("DELETE", f"/v1/wakeups/{moved['wakeup_id']}", caller),
        api("POST", f"/v1/wakeups/{moved['wakeup_id']}/reschedule", caller, {"delay_seconds": 90}),
    ):
        assert response.status == 409 and response.body["error"]["state"] == "fired"


def test_m9_wakeups_are_authorized_like_a_send_into_that_inbox(api, stack, agents):
    caller = agents.connection("caller")["token"]
    sent = conversation(api, stack, caller)
    wakeup_id = schedule(api, caller, sent["inbox_id"], delay_seconds=120).body["wakeup_id"]
    # Outside the connection's bounds the conversation, and its wakeups, don't exist (A5).
    bounded = api(
        "POST",
        "/v1/connections",
        stack.admin_token,
        {"name": "bounded", "target_bounds": ["agent:someone"]},
    ).body["token"]
    assert schedule(api, bounded, sent["inbox_id"], delay_seconds=120).status == 404
    assert api("DELETE", f"/v1/wakeups/{wakeup_id}", bounded).status == 404
    reader = api(
        "POST", "/v1/connections", stack.admin_token, {"name": "r", "scopes": ["messages:read"]}
    ).body["token"]
    assert schedule(api, reader, sent["inbox_id"], delay_seconds=120).status == 403
    # The Crew's own side is nobody's, and a malformed id names nothing.
    crews_side = sent["inbox_id"][:-1] + "b"
    assert schedule(api, caller, crews_side, delay_seconds=120).status == 404
    assert api("DELETE", "/v1/wakeups/wku_nothing", caller).status == 404
    # Wakeups are for conversations with a Crew.
    agents.named("reviewer")
    with_agent = send(api, caller, "hi", target="agent:reviewer").body
    refused = schedule(api, caller, with_agent["inbox_id"], delay_seconds=120)
    assert refused.status == 400 and refused.body["error"]["field"] == "inbox_id"


def test_m9_switched_off_refuses_scheduling_but_not_cancelling(api, stack, agents):
    caller = agents.connection("caller")["token"]
    sent = conversation(api, stack, caller)
    wakeup_id = schedule(api, caller, sent["inbox_id"], delay_seconds=120).body["wakeup_id"]
    definition = dict(CONTRACTS, messaging="off")
    assert api("PUT", "/v1/crews/contracts", stack.admin_token, definition).status == 200
    refused = schedule(api, caller, sent["inbox_id"], delay_seconds=120)
    assert refused.status == 409 and refused.body["error"]["code"] == "messaging_off"
    assert api("DELETE", f"/v1/wakeups/{wakeup_id}", caller).status == 200


@pytest.mark.parametrize(
    ("when", "status"),
    [
        ({"delay_seconds": limits.WAKEUP_MIN_SECONDS - 1}, 400),
        ({"delay_seconds": limits.WAKEUP_MIN_SECONDS}, 201),
        ({"delay_seconds": limits.WAKEUP_MAX_SECONDS}, 201),
        ({"delay_seconds": limits.WAKEUP_MAX_SECONDS + 1}, 400),
        ({"at": -10}, 400),  # in the past
        ({"at": limits.WAKEUP_MIN_SECONDS}, 201),
        ({"at": limits.WAKEUP_MAX_SECONDS}, 201),
        ({"at": limits.WAKEUP_MAX_SECONDS + 1}, 400),
        ({"at": "next tuesday"}, 400),
        ({"at": 120, "delay_seconds": 120}, 400),
        ({}, 400),
    ],
)
def test_m9_due_between_60_seconds_and_7_days(api, stack, agents, when, status):
    caller = agents.connection("caller")["token"]
    sent = conversation(api, stack, caller)
    if isinstance(when.get("at"), int):
        when = {**when, "at": iso_in(stack, when["at"])}
    reply = schedule(api, caller, sent["inbox_id"], **when)
    assert reply.status == status, reply.body
    if status == 400:
        assert reply.body["error"]["code"] == "invalid_request"


def test_m9_a_scheduler_pause_holds_wakeups_until_it_is_lifted(api, stack, agents):
    caller = agents.connection("caller")["token"]
    sent = conversation(api, stack, caller)
    assert api("POST", "/v1/scheduler", caller, {"paused": True}).status == 403  # admin only
    paused = api("POST", "/v1/scheduler", stack.admin_token, {"paused": True})
    assert paused.status == 200 and paused.body == {"paused": True}
    assert api("GET", "/v1/scheduler", stack.admin_token).body == {"paused": True}
    wakeup_id = schedule(api, caller, sent["inbox_id"], delay_seconds=120).body["wakeup_id"]
    stack.clock.advance(121)
    assert tick()["wakeups_fired"] == 0
    state = api("GET", "/v1/crews/contracts/state", stack.admin_token).body
    assert state["scheduler_paused"] is True
    assert wakeup_in_state(state, wakeup_id)["state"] == "scheduled"
    assert api("POST", "/v1/scheduler", stack.admin_token, {"paused": False}).status == 200
    assert tick()["wakeups_fired"] == 1


class _RefusingStepFunctions:
    """Step Functions whose StartExecution fails (every other call goes through)."""

    def __init__(self) -> None:
        self._real = boto3.client("stepfunctions", region_name="us-east-1")

    def start_execution(self, **_: Any) -> Any:
        raise ClientError(
            {"Error": {"Code": "ServiceUnavailable", "Message": "down"}}, "StartExecution"
        )

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def test_m9_an_interrupted_delivery_is_recorded_interrupted_and_never_resent(api, stack, agents):
    caller = agents.connection("caller")["token"]
    sent = conversation(api, stack, caller)
    wakeup_id = schedule(api, caller, sent["inbox_id"], delay_seconds=120).body["wakeup_id"]
    failing = runtime.build_crews(
        stack.settings,
        stack.client,
        stack.clock,
        s3=boto3.client("s3", region_name="us-east-1"),
        stepfunctions=_RefusingStepFunctions(),
        messaging=stack.services.messaging,
    )
    runtime.install(replace(stack.services, crews=failing))
    stack.clock.advance(121)
    fired = tick()
    assert (fired["wakeups_fired"], fired["wakeups_interrupted"]) == (0, 1)
    runtime.install(stack.services)
    state = api("GET", "/v1/crews/contracts/state", stack.admin_token).body
    shown = wakeup_in_state(state, wakeup_id)
    assert shown["state"] == "interrupted" and "could not be started" in shown["error"]
    assert tick()["wakeups_fired"] == 0  # recorded, not resent
    # A tick that claimed a wakeup and stopped before recording it: the next ticks record it
    # interrupted once it is stale, and never fire it.
    stuck = schedule(api, caller, sent["inbox_id"], delay_seconds=60).body["wakeup_id"]
    stack.clock.advance(61)
    store = CrewInboxStore(stack.client, stack.settings.work_table)
    conversation_id, wake = parse_wakeup_id(stuck)
    now_ms = int(stack.clock.now() * 1000)
    assert store.claim(conversation_id, wake, now_ms, "run_never") is not None
    quiet = tick()
    assert quiet["wakeups_fired"] == quiet["wakeups_interrupted"] == 0
    assert set(quiet.values()) == {0}  # and nothing else happened either
    stack.clock.advance(limits.WAKEUP_FIRING_STALE_SECONDS + 1)
    assert tick()["wakeups_interrupted"] == 1
    assert tick()["wakeups_interrupted"] == 0
    state = api("GET", "/v1/crews/contracts/state", stack.admin_token).body
    assert wakeup_in_state(state, stuck)["state"] == "interrupted"


def test_m9_an_expired_inbox_takes_no_wakeup_and_says_why(api, stack, agents):
    caller = agents.connection("caller")["token"]
    sent = conversation(api, stack, caller)
    stack.clock.advance(limits.INBOX_IDLE_SECONDS + 1)
    refused = schedule(api, caller, sent["inbox_id"], delay_seconds=120)
    assert (refused.status, refused.body["error"]["message"]) == (
        410,
        "This inbox expired after 7 idle days. Start a new conversation with "
        "target=crew:contracts.",
    ), refused.body


def test_m9_a_wakeup_as_a_name_must_name_the_side_the_caller_holds(api, stack, agents):
    """Scheduling in a conversation as `agent_name` runs the send's own checks: the name
    must be the one holding that side (case aside), or the inbox answers as unknown."""
    worker = agents.named("worker")
    agents.named("reviewer")
    crew(api, stack, "review")
    first = {"target": "crew:contracts", "message": "Remind me.", "agent_name": "worker"}
    sent = api("POST", "/v1/messages", worker, first)
    assert sent.status == 201, sent.body
    inbox = sent.body["inbox_id"]

    def wakeup(inbox_id: str, agent_name: str) -> Any:
        asked = {"inbox_id": inbox_id, "agent_name": agent_name, "delay_seconds": 60}
        return api("POST", "/v1/wakeups", worker, asked)

    wrong = wakeup(inbox, "reviewer")
    crews_side = inbox[:-1] + ("b" if inbox.endswith("a") else "a")  # held by nobody
    unknown = wakeup(crews_side, "worker")
    assert wrong.status == 404 and wrong.body == unknown.body
    right = wakeup(inbox, "Worker")
    assert right.status == 201, right.body
