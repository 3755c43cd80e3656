"""One Crew asks another in a conversation (C3, C4): the asking run waits on a task token
(not by polling) and carries on with the answer; a Crew that can't reach another is told
why and who can change it; four conversations deep is refused; and the run asks as whoever
started the work, so revoking that connection stops it. Runs really execute on Step
Functions (moto)."""

from __future__ import annotations

import time
from typing import Any

from agentworks import limits
from tests.integration.crew_support import CONTRACTS
from tests.integration.test_conversation_requests import (
    TERMINAL,
    ask,
    executions,
    request_state,
    requests_of,
    tick,
)
from tests.integration.test_crew_messages import wait_for_messages


def asking_crew(name: str, asks: str, may_ask: list[str], messaging: str = "on") -> dict:
    """A Crew whose run asks crew:`asks` about a clause and answers with what it heard."""
    return {
        "name": name,
        "instructions": "Ask the contracts team about clauses.",
        "messaging": messaging,
        "may_ask": may_ask,
        "adapter": {
            "type": "scripted",
            "rules": [
                {
                    "when": "clause (\\d+)",
                    "ask_crew": {"crew": asks, "request": "What does clause {match.1} say?"},
                    "reply": f"{name} heard: {{answer}}",
                },
                {"default": "I only pass clause questions on."},
            ],
        },
    }


def settle(api: Any, token: str, sent: dict, timeout: float = 60) -> dict:
    """Runs the tick (which starts the runs of requests Crews' runs sent) until the
    request `sent` reached a final state."""
    deadline = time.monotonic() + timeout
    while True:
        tick()
        found = request_state(api, token, sent)
        if found["state"] in TERMINAL:
            return found
        assert time.monotonic() < deadline, found
        time.sleep(0.1)


def make(api: Any, stack: Any, definition: dict) -> None:
    made = api("POST", "/v1/crews", stack.admin_token, definition)
    assert made.status == 201, made.body


def test_c3_a_crew_asks_another_waits_for_the_reply_and_carries_on(api, stack, agents):
    make(api, stack, CONTRACTS)
    make(api, stack, asking_crew("intake", "contracts", ["contracts"]))
    caller = agents.connection("caller")["token"]
    sent = ask(api, caller, "Please check clause 7.", target="crew:intake").body
    assert settle(api, caller, sent)["state"] == "answered"
    [reply] = wait_for_messages(api, caller, sent["inbox_id"])
    assert reply["body"] == "intake heard: Clause 7 covers termination."
    assert reply["in_reply_to"] == sent["message_id"]
    # Two runs, one each; the asking one waited on a task token, not in a loop of turns.
    assert len(executions(stack)) == 2


def test_c4_a_crew_that_may_not_ask_is_told_why_and_who_can_change_it(api, stack, agents):
    make(api, stack, CONTRACTS)
    make(api, stack, asking_crew("intake", "contracts", []))
    caller = agents.connection("caller")["token"]
    sent = ask(api, caller, "Please check clause 7.", target="crew:intake").body
    assert settle(api, caller, sent)["state"] == "answered"
    [reply] = wait_for_messages(api, caller, sent["inbox_id"])
    assert "may not ask crew:contracts" in reply["body"]
    assert "`may_ask` list" in reply["body"] and "crews update" in reply["body"]
    assert len(executions(stack)) == 1  # contracts never ran


def test_c4_a_crew_whose_messaging_is_off_refuses_with_the_reason(api, stack, agents):
    make(api, stack, dict(CONTRACTS, messaging="off"))
    make(api, stack, asking_crew("intake", "contracts", ["contracts"]))
    caller = agents.connection("caller")["token"]
    sent = ask(api, caller, "Please check clause 7.", target="crew:intake").body
    assert settle(api, caller, sent)["state"] == "answered"
    [reply] = wait_for_messages(api, caller, sent["inbox_id"])
    assert "messaging switch is off" in reply["body"] and "An account admin" in reply["body"]


def test_c4_three_conversations_deep_and_no_deeper(api, stack, agents):
    """caller → one (1) → two (2) → three (3) → contracts would be the fourth: refused
    (CONVERSATION_DEPTH_MAX deep, the chain below is built for that bound)."""
    assert limits.CONVERSATION_DEPTH_MAX == 3
    make(api, stack, CONTRACTS)
    make(api, stack, asking_crew("three", "contracts", ["contracts"]))
    make(api, stack, asking_crew("two", "three", ["three"]))
    make(api, stack, asking_crew("one", "two", ["two"]))
    caller = agents.connection("caller")["token"]
    sent = ask(api, caller, "Please check clause 7.", target="crew:one").body
    assert settle(api, caller, sent)["state"] == "answered"
    [reply] = wait_for_messages(api, caller, sent["inbox_id"], timeout=60)
    assert reply["body"].startswith("one heard: two heard: three heard: Your request was not sent")
    assert f"{limits.CONVERSATION_DEPTH_MAX} conversations deep" in reply["body"]
    assert len(executions(stack)) == 3  # contracts never ran


def test_c3_the_run_asks_as_its_starter_and_stops_once_that_is_revoked(api, stack, agents):
    make(api, stack, CONTRACTS)
    make(api, stack, asking_crew("intake", "contracts", ["contracts"], messaging="review"))
    starter = agents.connection("starter")
    sent = ask(api, starter["token"], "Please check clause 7.", target="crew:intake").body
    revoked = api("DELETE", f"/v1/connections/{starter['connection_id']}", stack.admin_token)
    assert revoked.status == 200, revoked.body
    released = api(
        "POST",
        "/v1/crews/intake/release",
        stack.admin_token,
        {"message_id": sent["message_id"]},
    )
    assert released.status == 200, released.body
    deadline = time.monotonic() + 30
    while True:
        state = api("GET", "/v1/crews/intake/state", stack.admin_token).body
        [record] = state["inboxes"][0]["delivery_records"]
        if record["run_state"] in ("failed", "interrupted", "succeeded"):
            break
        assert time.monotonic() < deadline, state
        time.sleep(0.05)
    assert record["run_state"] == "interrupted", record
    tick()
    assert len(executions(stack)) == 1  # no request reached crew:contracts


def test_c3_requests_between_crews_show_their_states(api, stack, agents):
    """The request intake sent is a request like any other: the conversation between the
    Crews has it, answered."""
    make(api, stack, CONTRACTS)
    make(api, stack, asking_crew("intake", "contracts", ["contracts"]))
    caller = agents.connection("caller")["token"]
    sent = ask(api, caller, "Please check clause 2.", target="crew:intake").body
    settle(api, caller, sent)
    state = api("GET", "/v1/crews/contracts/state", stack.admin_token).body
    [inbox] = state["inboxes"]
    assert inbox["peer"] == "crew:intake"
    assert [r["run_state"] for r in inbox["delivery_records"]] == ["succeeded"]
    assert requests_of(api, caller, sent["inbox_id"])[0]["state"] == "answered"


def test_c3_the_run_asks_within_its_starters_target_bounds(api, stack, agents):
    """A4 holds for the work a connection starts: a starter bounded to crew:intake reaches
    intake, but intake's run, asking as that starter, cannot reach crew:contracts."""
    make(api, stack, CONTRACTS)
    make(api, stack, asking_crew("intake", "contracts", ["contracts"]))
    bounded = api(
        "POST",
        "/v1/connections",
        stack.admin_token,
        {"name": "bounded", "scopes": ["messages:send", "messages:read"],
         "target_bounds": ["crew:intake"]},
    )  # fmt: skip
    assert bounded.status == 201, bounded.body
    token = bounded.body["token"]
    sent = ask(api, token, "Please check clause 7.", target="crew:intake").body
    assert settle(api, token, sent)["state"] == "answered"
    [reply] = wait_for_messages(api, token, sent["inbox_id"])
    assert reply["body"].startswith("intake heard: Your request was not sent")
    assert "can't be reached from here" in reply["body"]
    assert len(executions(stack)) == 1  # contracts never ran


def test_c3_the_asked_crews_run_starts_at_once_not_at_the_tick(api, stack, agents):
    """The step runner that sends the request starts the asked Crew's run on the state
    machine its task names (its own): no tick runs here, and the answer comes back."""
    make(api, stack, CONTRACTS)
    make(api, stack, asking_crew("intake", "contracts", ["contracts"]))
    caller = agents.connection("caller")["token"]
    sent = ask(api, caller, "Please check clause 9.", target="crew:intake").body
    deadline = time.monotonic() + 30
    while (found := request_state(api, caller, sent))["state"] not in TERMINAL:
        assert time.monotonic() < deadline, found  # (the tick is never called)
        time.sleep(0.05)
    assert found["state"] == "answered"
    [reply] = wait_for_messages(api, caller, sent["inbox_id"])
    assert reply["body"] == "intake heard: Clause 9 covers termination."
    assert len(executions(stack)) == 2
