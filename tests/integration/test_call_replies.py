"""F7 replies by what the caller and the call's execution see: a reply to an unknown call
looks like any unknown call, one to an ended call or a question not (yet) waiting says
which, an accepted one is recorded with its request and resumes the execution with it, and
a record that keeps changing is retried a bounded number of times. Written to kill the
mutants `make mutate` found alive in crews/calls.py's `reply` (docs/benchmarks.md,
"Mutation testing")."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import boto3
import pytest

from agentworks.crews.call_store import CallStore, StaleCall
from tests.integration.crew_support import CONTRACTS, wait_for

REPLIED = {"running", "succeeded"}


def _caller(api: Any, stack: Any, agents: Any) -> str:
    assert api("POST", "/v1/crews", stack.admin_token, CONTRACTS).status == 201
    return agents.connection("caller")["token"]


def _waiting_call(api: Any, caller: str) -> tuple[str, str]:
    """A call of `confirm` waiting on its question: (call_id, request_id)."""
    body = {"target": "crew:contracts", "function": "confirm", "args": {"action": "ship"}}
    call_id = api("POST", "/v1/calls", caller, body).body["call_id"]
    waiting = wait_for(api, caller, call_id, {"input_required"})
    [pending] = waiting["pending_inputs"]
    return call_id, pending["request_id"]


def test_a_question_shows_when_it_was_asked(api, stack, agents) -> None:
    caller = _caller(api, stack, agents)
    asked = stack.clock.now()
    call_id, request_id = _waiting_call(api, caller)
    [pending] = api("GET", f"/v1/calls/{call_id}", caller).body["pending_inputs"]
    assert pending["request_id"] == request_id
    assert datetime.fromisoformat(pending["asked_at"]).timestamp() == pytest.approx(asked, abs=1)


def _store(stack: Any) -> CallStore:
    return CallStore(stack.client, stack.settings.work_table)


def test_a_reply_to_an_unknown_call_looks_like_any_unknown_call(api, stack, agents) -> None:
    caller = _caller(api, stack, agents)
    unknown = "call_01KZZZZZZZZZZZZZZZZZZZZZZZ"
    replied = api("POST", f"/v1/calls/{unknown}/reply", caller, {"request_id": "r", "answer": "y"})
    shown = api("GET", f"/v1/calls/{unknown}", caller)
    assert replied.status == shown.status == 404
    assert replied.body == shown.body


def test_a_reply_to_an_ended_call_says_it_ended(api, stack, agents) -> None:
    caller = _caller(api, stack, agents)
    body = {"target": "crew:contracts", "function": "summarize", "args": {"text": "t"}}
    call_id = api("POST", "/v1/calls", caller, body).body["call_id"]
    wait_for(api, caller, call_id, {"succeeded"})
    replied = api("POST", f"/v1/calls/{call_id}/reply", caller, {"request_id": "r", "answer": "y"})
    assert (replied.status, replied.body["error"]["message"]) == (
        409,
        "The call already ended (succeeded); there is nothing to answer.",
    )


def test_a_question_whose_token_is_not_held_yet_cannot_be_answered(api, stack, agents) -> None:
    """Asked, but the AwaitInput state has not stored its token: nothing could resume the
    execution, so the reply is refused and the question keeps waiting."""
    caller = _caller(api, stack, agents)
    call_id, request_id = _waiting_call(api, caller)
    record, version = _store(stack).get(call_id) or (None, 0)
    assert record is not None and record.task_token
    record.task_token = None
    _store(stack).save(record, version)
    replied = api(
        "POST", f"/v1/calls/{call_id}/reply", caller, {"request_id": request_id, "answer": "y"}
    )
    assert (replied.status, replied.body["error"]["field"]) == (409, "request_id")
    kept = _store(stack).get(call_id)
    assert kept is not None and [p.request_id for p in kept[0].pending_inputs] == [request_id]
    assert kept[0].answers == []


def test_an_answer_is_recorded_with_its_request_and_resumes_the_execution(
    api, stack, agents
) -> None:
    caller = _caller(api, stack, agents)
    call_id, request_id = _waiting_call(api, caller)
    replied = api(
        "POST", f"/v1/calls/{call_id}/reply", caller, {"request_id": request_id, "answer": "yes"}
    )
    assert replied.status == 200, replied.body
    done = wait_for(api, caller, call_id, {"succeeded"})
    assert done["result"] == {"confirmed": "yes"}
    record = _store(stack).get(call_id)
    assert record is not None
    assert record[0].answers == [{"request_id": request_id, "answer": "yes"}]
    # The AwaitInput task succeeded with the request it answered (what the console shows).
    machine = stack.settings.function_call_state_machine_arn
    execution = machine.replace(":stateMachine:", ":execution:") + ":" + call_id
    history = boto3.client("stepfunctions", region_name="us-east-1").get_execution_history(
        executionArn=execution
    )["events"]
    outputs = [
        json.loads(e["taskSucceededEventDetails"]["output"])
        for e in history
        if e["type"] == "TaskSucceeded"
    ]
    assert {"request_id": request_id} in outputs


def _stale_saves(monkeypatch: Any, stack: Any, stale: int) -> list[int]:
    """The calls' store refuses the first `stale` saves as if the record had changed;
    returns the list each save attempt is counted in."""
    store = stack.services.crews.calls._calls
    real_save = store.save
    attempts: list[int] = []

    def save(record: Any, version: int) -> int:
        attempts.append(version)
        if len(attempts) <= stale:
            raise StaleCall(record.call_id)
        return int(real_save(record, version))

    monkeypatch.setattr(store, "save", save)
    return attempts


def test_a_record_that_changed_meanwhile_is_read_again(api, stack, agents, monkeypatch) -> None:
    caller = _caller(api, stack, agents)
    call_id, request_id = _waiting_call(api, caller)
    attempts = _stale_saves(monkeypatch, stack, stale=1)
    replied = api(
        "POST", f"/v1/calls/{call_id}/reply", caller, {"request_id": request_id, "answer": "ok"}
    )
    assert replied.status == 200, replied.body
    assert len(attempts) == 2
    monkeypatch.undo()
    assert wait_for(api, caller, call_id, {"succeeded"})["result"] == {"confirmed": "ok"}


@pytest.mark.parametrize("stale", [5])
def test_a_record_that_keeps_changing_is_given_up_after_five_tries(
    api, stack, agents, monkeypatch, stale
) -> None:
    caller = _caller(api, stack, agents)
    call_id, request_id = _waiting_call(api, caller)
    attempts = _stale_saves(monkeypatch, stack, stale=stale + 1)
    replied = api(
        "POST", f"/v1/calls/{call_id}/reply", caller, {"request_id": request_id, "answer": "ok"}
    )
    assert (replied.status, replied.body["error"]["message"]) == (
        409,
        "The call changed while replying; retry.",
    )
    assert len(attempts) == stale
