"""§8 `mailbox` adapter: the work goes to a named external agent as a message, and the call
completes when that agent posts the result (Step Functions `.waitForTaskToken`)."""

from __future__ import annotations

import time
from typing import Any

from tests.integration.crew_support import wait_for
from tests.integration.test_crew_messages import send, wait_for_messages

TERMINAL = {"succeeded", "failed", "interrupted"}
DELEGATOR: dict[str, Any] = {
    "name": "delegator",
    "instructions": "Hand every summary to the worker.",
    "messaging": "on",
    "adapter": {"type": "mailbox", "agent": "worker"},
    "functions": [
        {
            "name": "summarize",
            "description": "Summarize a text",
            "input_schema": {
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
            },
            "output_schema": {
                "type": "object",
                "properties": {"summary": {"type": "string"}},
                "required": ["summary"],
            },
        }
    ],
}


def wait_for_mailbox(api: Any, token: str, agent: str, timeout: float = 30) -> list[dict]:
    deadline = time.monotonic() + timeout
    while True:
        page = api("GET", "/v1/messages", token, query={"agent_name": agent})
        assert page.status == 200, page.body
        if page.body["messages"]:
            return page.body["messages"]
        assert time.monotonic() < deadline, page.body
        time.sleep(0.05)


def call(api: Any, token: str, text: str) -> str:
    accepted = api(
        "POST",
        "/v1/calls",
        token,
        {"target": "crew:delegator", "function": "summarize", "args": {"text": text}},
    )
    assert accepted.status == 202, accepted.body
    return str(accepted.body["call_id"])


def test_s8_mailbox_round_trip_the_named_agent_reads_the_work_and_posts_the_result(
    api, stack, agents
):
    assert api("POST", "/v1/crews", stack.admin_token, DELEGATOR).status == 201
    worker = agents.named("worker")
    other = agents.named("other")
    caller = agents.connection("caller")["token"]
    call_id = call(api, caller, "Either party may end it with 30 days notice.")
    deadline = time.monotonic() + 30
    while True:  # the caller sees the call running, handed over
        waiting = api("GET", f"/v1/calls/{call_id}", caller).body
        assert waiting["state"] in ("accepted", "running"), waiting
        if "handed to agent:worker" in waiting["progress"]:
            break
        assert time.monotonic() < deadline, waiting
        time.sleep(0.05)
    # The worker finds the work in its mailbox: from the Crew, naming the call.
    [work] = wait_for_mailbox(api, worker, "worker")
    assert work["sender"] == "crew:delegator"
    assert "Either party may end it with 30 days notice." in work["body"]
    assert call_id in work["body"]
    assert f"agentworks functions complete --call-id {call_id} --agent worker" in work["body"]
    path = f"/v1/calls/{call_id}/result"
    result = {"summary": "30 days notice."}
    # Only the agent the work went to may post it (A4, A5), acting as that name (M5).
    assert api("POST", path, other, {"agent_name": "other", "result": result}).status == 404
    assert api("POST", path, other, {"agent_name": "worker", "result": result}).status == 404
    assert api("POST", path, caller, {"agent_name": "worker", "result": result}).status == 404
    # A result the output schema refuses is the poster's 422; the call keeps waiting.
    wrong = api("POST", path, worker, {"agent_name": "worker", "result": {"gist": "x"}})
    assert wrong.status == 422 and wrong.body["error"]["code"] == "invalid_result"
    assert api("GET", f"/v1/calls/{call_id}", caller).body["state"] == "running"
    posted = api(
        "POST", path, worker, {"agent_name": "worker", "result": result, "final_text": "Done."}
    )
    assert posted.status == 200, posted.body
    done = wait_for(api, caller, call_id, TERMINAL)
    assert done["state"] == "succeeded", done
    assert done["result"] == result and done["final_text"] == "Done."
    again = api("POST", path, worker, {"agent_name": "worker", "result": result})
    assert again.status == 409
    assert api("GET", "/v1/crews/delegator", caller).body["running"] == 0  # slot freed


def test_s8_mailbox_crew_answers_a_message_with_what_its_agent_posts(api, stack, agents):
    """A message to a mailbox Crew goes to its agent too; the posted text is the answer."""
    assert api("POST", "/v1/crews", stack.admin_token, DELEGATOR).status == 201
    worker = agents.named("worker")
    caller = agents.connection("caller")["token"]
    sent = send(api, caller, "Can you check clause 4?", target="crew:delegator")
    assert sent.status == 201, sent.body
    [work] = wait_for_mailbox(api, worker, "worker")
    assert "Can you check clause 4?" in work["body"]
    run_id = work["body"].split("AgentWorks call ", 1)[1].split(".", 1)[0]
    posted = api(
        "POST",
        f"/v1/calls/{run_id}/result",
        worker,
        {"agent_name": "worker", "final_text": "Clause 4 is fine."},
    )
    assert posted.status == 200, posted.body
    [answer] = wait_for_messages(api, caller, sent.body["inbox_id"])
    assert answer["sender"] == "crew:delegator" and answer["body"] == "Clause 4 is fine."


def test_s8_mailbox_to_an_unregistered_agent_fails_the_call_with_the_reason(api, stack, agents):
    assert api("POST", "/v1/crews", stack.admin_token, DELEGATOR).status == 201
    caller = agents.connection("caller")["token"]
    call_id = call(api, caller, "anything")
    done = wait_for(api, caller, call_id, TERMINAL)
    assert done["state"] == "failed", done
    assert done["errors"] == [
        "The work could not be handed to agent:worker: agent:worker is not a registered name "
        "of this account"
    ]
    assert api("GET", "/v1/crews/delegator", caller).body["running"] == 0


def test_s8_a_retried_hand_off_delivers_the_work_once(api, stack, agents):
    """The hand-off step may run again after it delivered (a retried task): the work goes
    to the agent's mailbox once, and the retry gets the first delivery's receipt."""
    from agentworks.messaging.models import Party

    created = api("POST", "/v1/crews", stack.admin_token, DELEGATOR)
    assert created.status == 201, created.body
    worker = agents.named("worker")
    account = api("GET", "/v1/whoami", stack.admin_token).body["account_id"]
    crew = api("GET", "/v1/crews/delegator", stack.admin_token).body
    sender = Party("crew", crew["crew_id"], "delegator")
    messaging = stack.services.messaging
    first, agent_id = messaging.first_contact_as_system(
        account, sender, "agent:worker", "the work", submission_id="call_1.handoff.1"
    )
    again, same_agent = messaging.first_contact_as_system(
        account, sender, "agent:worker", "the work", submission_id="call_1.handoff.1"
    )
    assert (again.message_id, same_agent) == (first.message_id, agent_id)
    assert again.replayed and not first.replayed
    [work] = wait_for_mailbox(api, worker, "worker")
    assert (work["message_id"], work["body"]) == (first.message_id, "the work")
