"""C3 ask-back: a Crew's run working on a request may send a request back in the same
conversation and carry on when its reply arrives — waiting on a task token, not polling,
and starting no second run. A reply nobody waits on starts a run as before; a run asks
back at most `limits.ASK_BACKS_PER_RUN` times, then its question is its answer."""

from __future__ import annotations

import copy
import time
from typing import Any

from agentworks import limits
from agentworks.messaging import delivery_text
from tests.integration.crew_support import CONTRACTS
from tests.integration.test_conversation_requests import (
    TERMINAL,
    ask,
    executions,
    request_state,
    wait_for_request,
)
from tests.integration.test_crew_messages import wait_for_messages

RULES = [
    {"when": "renewal", "ask_back": "Which year do you mean?", "reply": "Renewed in: {answer}"},
]


def asking_crew(api: Any, stack: Any) -> None:
    definition = copy.deepcopy(CONTRACTS)
    definition["adapter"]["rules"] = RULES + definition["adapter"]["rules"]
    assert api("POST", "/v1/crews", stack.admin_token, definition).status == 201


def _runs(stack: Any) -> list[dict]:
    return [e for e in executions(stack) if e["name"].startswith("run_")]


def test_the_run_asks_back_and_carries_on_with_the_reply(api, stack, agents):
    asking_crew(api, stack)
    caller = agents.connection("caller")["token"]
    sent = ask(api, caller, "What were the renewal terms?").body
    [asked] = wait_for_messages(api, caller, sent["inbox_id"])
    assert (asked["kind"], asked["sender"]) == ("request", "crew:contracts")
    assert asked["body"] == "Which year do you mean?" and asked["deadline_at"] is not None
    assert request_state(api, caller, sent)["state"] == "in_progress"  # its run waits
    reply = {
        "inbox_id": sent["inbox_id"],
        "kind": "reply",
        "in_reply_to": asked["message_id"],
        "message": "2030",
    }
    assert api("POST", "/v1/messages", caller, reply).status == 201
    done = wait_for_request(api, caller, sent, TERMINAL)
    assert done["state"] == "answered"
    messages = wait_for_messages(api, caller, sent["inbox_id"], count=2)
    answer = messages[-1]
    assert (answer["kind"], answer["in_reply_to"]) == ("reply", sent["message_id"])
    # The run read the reply as the other side's words (fenced), and answered with them.
    assert answer["body"].startswith("Renewed in: [AgentWorks message from")
    assert "\n2030\n" in answer["body"]
    assert len(_runs(stack)) == 1  # the same run carried on: no second one started
    assert delivery_text.body_of(asked["delivered_text"]) == "Which year do you mean?"


def test_past_the_limit_the_question_is_the_answer(api, stack, agents, monkeypatch):
    """At the limit a run may still ask back (the test above, limit 5); past it — here a
    limit of 0 — its question is its answer to the request, and nothing waits."""
    monkeypatch.setattr(limits, "ASK_BACKS_PER_RUN", 0)
    asking_crew(api, stack)
    caller = agents.connection("caller")["token"]
    sent = ask(api, caller, "What were the renewal terms?").body
    assert wait_for_request(api, caller, sent, TERMINAL)["state"] == "answered"
    [answer] = wait_for_messages(api, caller, sent["inbox_id"])
    assert (answer["kind"], answer["in_reply_to"]) == ("reply", sent["message_id"])
    assert answer["body"] == "Which year do you mean?"
    assert len(_runs(stack)) == 1


def test_a_reply_no_run_waits_on_starts_a_run(api, stack, agents):
    """The run that asked back was stopped (its request cancelled): the late reply to its
    question starts a run of its own, as any message to the Crew does."""
    asking_crew(api, stack)
    caller = agents.connection("caller")["token"]
    sent = ask(api, caller, "What were the renewal terms?").body
    [asked] = wait_for_messages(api, caller, sent["inbox_id"])
    assert api("POST", f"/v1/requests/{sent['message_id']}/cancel", caller, {}).status == 200
    reply = {
        "inbox_id": sent["inbox_id"],
        "kind": "reply",
        "in_reply_to": asked["message_id"],
        "message": "clause 4 then",
    }
    assert api("POST", "/v1/messages", caller, reply).status == 201
    later = wait_for_messages(api, caller, sent["inbox_id"], count=2)
    assert later[-1]["body"] == "Clause 4 covers termination."
    assert len(_runs(stack)) == 2


def test_a_question_waits_for_a_person_never_for_the_other_agent(api, stack, agents):
    """C5: a run in a conversation with a question for a person (the adapter's `question`,
    a tool approval's kind) is input_required under Needs You; the person the work runs as
    answers it like any waiting run, and the run carries on to its reply."""
    definition = copy.deepcopy(CONTRACTS)
    definition["adapter"]["rules"].insert(
        0, {"when": "sign", "ask": "May I sign on your behalf?", "reply": "Signed: {answer}"}
    )
    assert api("POST", "/v1/crews", stack.admin_token, definition).status == 201
    caller = agents.connection("caller")["token"]
    sent = ask(api, caller, "Please sign the contract.").body
    deadline = time.monotonic() + 30
    while True:
        listed = api("GET", "/v1/conversations", caller, query={"tab": "needs_you"}).body
        if listed["conversations"]:
            break
        assert time.monotonic() < deadline, listed
        time.sleep(0.05)
    [waiting] = listed["conversations"]
    assert waiting["needs_you"] == 1
    run_id = request_state(api, caller, sent)["run_id"]
    # Needs You counts the question from the turn that asked it; the run shows
    # input_required once its AwaitInput state holds the token that an answer resumes.
    deadline = time.monotonic() + 30
    while (call := api("GET", f"/v1/calls/{run_id}", caller).body)["state"] == "running":
        assert time.monotonic() < deadline, call
        time.sleep(0.05)
    assert call["state"] == "input_required"
    [question] = call["pending_inputs"]
    assert question["question"] == "May I sign on your behalf?"
    # Nothing went to the other side: the asker's inbox holds no message yet.
    assert wait_for_messages(api, caller, sent["inbox_id"], count=0) == []
    answer = {"request_id": question["request_id"], "answer": "yes"}
    assert api("POST", f"/v1/calls/{run_id}/reply", caller, answer).status == 200
    assert wait_for_request(api, caller, sent, TERMINAL)["state"] == "answered"
    [reply] = wait_for_messages(api, caller, sent["inbox_id"])
    assert reply["body"] == "Signed: yes"
