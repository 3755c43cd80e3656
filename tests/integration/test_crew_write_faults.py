"""The Crews' write paths under faults real DynamoDB produces and moto does not (F1, F2, F4,
F5, F6, F7, M9): function admission, a step's save, the finish that frees the slot, a
person's reply, a wakeup's claim and a Crew's delete. Each succeeds as if nothing happened,
or answers `503 unavailable_retry` with nothing changed; no slot is leaked, no call is
admitted twice. See test_write_faults.py for the messaging paths and the fault model.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import boto3

from agentworks.dynamo import TRANSACTION_ATTEMPTS
from tests.integration.crew_support import CONTRACTS, wait_for
from tests.integration.test_write_faults import items, retry_later
from tests.support.faults import touches

TERMINAL = {"succeeded", "failed", "interrupted", "cancelled"}


def _crew(api: Any, stack: Any, **changes: Any) -> None:
    definition = copy.deepcopy(CONTRACTS)
    definition.update(changes)
    reply = api("POST", "/v1/crews", stack.admin_token, definition)
    assert reply.status == 201, reply.body


def _call(api: Any, token: str, function: str, args: dict, **extra: Any) -> Any:
    body = {"target": "crew:contracts", "function": function, "args": args, **extra}
    return api("POST", "/v1/calls", token, body)


def _running(stack: Any) -> int:
    (crew,) = items(stack, stack.settings.work_table, sk="CREW#")
    return int(crew["running"])


def _calls(stack: Any) -> list[dict[str, Any]]:
    return items(stack, stack.settings.work_table, pk="CALL#")


def _executions(stack: Any) -> list[dict[str, Any]]:
    sfn = boto3.client("stepfunctions", region_name="us-east-1")
    arn = stack.settings.function_call_state_machine_arn
    return sfn.list_executions(stateMachineArn=arn)["executions"]


def _frees_slot(params: dict[str, Any]) -> bool:
    """The finish transaction: the one that gives a slot back."""
    return "running - :one" in json.dumps(params)


ADMISSION = touches(pk="CALL#")


def test_f5_admission_cancelled_for_a_conflict_is_sent_again(api, stack, agents, faults):
    _crew(api, stack)
    caller = agents.connection("caller")["token"]
    conflict = faults.fail(
        "TransactWriteItems",
        "TransactionCanceledException",
        reasons=["TransactionConflict", "None", "None"],
        where=ADMISSION,
    )
    accepted = _call(api, caller, "summarize", {"text": "a"}, submission_id="job-1")
    assert accepted.status == 202, accepted.body
    assert conflict.injected == 1
    wait_for(api, caller, accepted.body["call_id"], TERMINAL)
    assert len(_calls(stack)) == 1 and _running(stack) == 0


def test_f4_f5_admission_throttled_past_the_retries_takes_nothing(api, stack, agents, faults):
    _crew(api, stack)
    caller = agents.connection("caller")["token"]
    throttle = faults.exhaust(
        "TransactWriteItems", "ProvisionedThroughputExceededException", where=ADMISSION
    )
    retry_later(_call(api, caller, "summarize", {"text": "a"}, submission_id="job-1"))
    assert throttle.injected == faults.max_attempts
    # No slot taken, no record, no binding, no execution.
    assert _running(stack) == 0 and _calls(stack) == []
    assert items(stack, stack.settings.work_table, pk="CALLSUB#") == []
    assert _executions(stack) == []
    faults.clear()
    accepted = _call(api, caller, "summarize", {"text": "a"}, submission_id="job-1")
    assert accepted.status == 202, accepted.body
    wait_for(api, caller, accepted.body["call_id"], TERMINAL)
    assert len(_calls(stack)) == 1 and len(_executions(stack)) == 1 and _running(stack) == 0


def test_f4_admission_whose_answer_was_lost_is_admitted_once(api, stack, agents, faults):
    """The transaction committed, the 500 made botocore send it again: the retry finds its
    own record (and binding), which means this very call was admitted — once, one slot."""
    _crew(api, stack)
    caller = agents.connection("caller")["token"]
    lost = faults.fail(
        "TransactWriteItems", "InternalServerError", where=ADMISSION, commit_first=True
    )
    accepted = _call(api, caller, "summarize", {"text": "a"}, submission_id="job-lost")
    assert lost.injected == 1
    assert accepted.status == 202, accepted.body
    done = wait_for(api, caller, accepted.body["call_id"], TERMINAL)
    assert done["state"] == "succeeded"
    assert len(_calls(stack)) == 1 and len(_executions(stack)) == 1
    assert _running(stack) == 0


def test_f5_a_finish_cancelled_for_a_conflict_gives_its_slot_back(api, stack, agents, faults):
    """Before: a finish cancelled by TransactionConflict was read as "Crew deleted" and
    recorded without freeing its slot — three such and the Crew was busy for good."""
    _crew(api, stack)
    caller = agents.connection("caller")["token"]
    conflict = faults.fail(
        "TransactWriteItems",
        "TransactionCanceledException",
        reasons=["None", "TransactionConflict"],
        where=_frees_slot,
        times=TRANSACTION_ATTEMPTS - 1,
    )
    call_id = _call(api, caller, "summarize", {"text": "a"}).body["call_id"]
    done = wait_for(api, caller, call_id, TERMINAL)
    assert done["state"] == "succeeded" and conflict.injected == TRANSACTION_ATTEMPTS - 1
    assert _running(stack) == 0


def test_f5_a_finish_that_cannot_commit_is_retried_by_the_state_machine(api, stack, agents, faults):
    """All of `transact_write`'s attempts conflict: the Finish task fails with nothing
    written, and its Retry sends it again — the slot still comes back, exactly once."""
    _crew(api, stack)
    caller = agents.connection("caller")["token"]
    conflict = faults.fail(
        "TransactWriteItems",
        "TransactionCanceledException",
        reasons=["None", "TransactionConflict"],
        where=_frees_slot,
        times=TRANSACTION_ATTEMPTS,
    )
    call_id = _call(api, caller, "summarize", {"text": "a"}).body["call_id"]
    done = wait_for(api, caller, call_id, TERMINAL)
    assert done["state"] == "succeeded" and conflict.injected == TRANSACTION_ATTEMPTS
    assert conflict.matched == TRANSACTION_ATTEMPTS + 1  # the state machine's retry
    assert _running(stack) == 0


def test_f6_a_step_save_throttled_once_is_retried_and_past_the_retries_interrupts(
    api, stack, agents, faults
):
    _crew(api, stack)
    caller = agents.connection("caller")["token"]
    saves = touches(stack.settings.work_table, pk="CALL#")
    once = faults.fail("PutItem", "ThrottlingException", where=saves)
    first = _call(api, caller, "summarize", {"text": "a"}).body["call_id"]
    assert wait_for(api, caller, first, TERMINAL)["state"] == "succeeded"
    assert once.injected == 1
    faults.clear()
    faults.exhaust("PutItem", "ThrottlingException", where=saves)
    second = _call(api, caller, "summarize", {"text": "b"}).body["call_id"]
    done = wait_for(api, caller, second, TERMINAL)
    # The turn failed on the store, its Catch ended the call: slot freed, cause recorded.
    assert done["state"] == "interrupted", done
    assert _running(stack) == 0


def test_f7_a_reply_throttled_past_the_retries_is_503_and_its_retry_answers(
    api, stack, agents, faults
):
    _crew(api, stack)
    caller = agents.connection("caller")["token"]
    call_id = _call(api, caller, "confirm", {"action": "ship"}).body["call_id"]
    waiting = wait_for(api, caller, call_id, {"input_required"})
    request_id = waiting["pending_inputs"][0]["request_id"]
    throttle = faults.exhaust(
        "PutItem", "InternalServerError", where=touches(stack.settings.work_table, pk="CALL#")
    )
    answer = {"request_id": request_id, "answer": "yes"}
    retry_later(api("POST", f"/v1/calls/{call_id}/reply", caller, answer))
    assert throttle.injected == faults.max_attempts
    still = api("GET", f"/v1/calls/{call_id}", caller).body
    assert still["state"] == "input_required" and still["pending_inputs"][0]["request_id"]
    faults.clear()
    assert api("POST", f"/v1/calls/{call_id}/reply", caller, answer).status == 200
    done = wait_for(api, caller, call_id, TERMINAL)
    assert done["state"] == "succeeded" and done["result"] == {"confirmed": "yes"}
    assert _running(stack) == 0


def test_f1_a_crew_delete_throttled_past_the_retries_keeps_the_crew(api, stack, faults):
    _crew(api, stack)
    throttle = faults.exhaust(
        "DeleteItem", "ThrottlingException", where=touches(stack.settings.work_table, sk="CREW#")
    )
    retry_later(api("DELETE", "/v1/crews/contracts", stack.admin_token))
    assert throttle.injected == faults.max_attempts
    assert api("GET", "/v1/crews/contracts", stack.admin_token).status == 200
    faults.clear()
    once = faults.fail(
        "DeleteItem", "ThrottlingException", where=touches(stack.settings.work_table, sk="CREW#")
    )
    assert api("DELETE", "/v1/crews/contracts", stack.admin_token).status in (200, 204)
    assert once.injected == 1
    assert items(stack, stack.settings.work_table, sk="CREW#") == []


def _claims(params: dict[str, Any]) -> bool:
    """A wakeup's claim (scheduled → firing)."""
    return "wake_due = :claimed" in json.dumps(params)


def test_m9_a_throttled_claim_leaves_the_wakeup_for_the_next_tick(api, stack, agents, faults):
    """The tick does not fail on a claim throttled past the retries: that wakeup stays
    scheduled for the next tick (and others would still fire in this one)."""
    from tests.integration.test_wakeups import conversation, schedule, tick, wakeup_in_state

    caller = agents.connection("caller")["token"]
    sent = conversation(api, stack, caller)
    wakeup_id = schedule(api, caller, sent["inbox_id"], delay_seconds=120).body["wakeup_id"]
    stack.clock.advance(121)
    throttle = faults.exhaust("UpdateItem", "ThrottlingException", where=_claims)
    assert tick()["wakeups_fired"] == 0
    assert throttle.injected == faults.max_attempts
    state = api("GET", "/v1/crews/contracts/state", stack.admin_token).body
    assert wakeup_in_state(state, wakeup_id)["state"] == "scheduled"  # not claimed
    faults.clear()
    assert tick()["wakeups_fired"] == 1
    assert tick()["wakeups_fired"] == 0


def test_m9_a_claim_whose_answer_was_lost_still_fires_once(api, stack, agents, faults):
    """The claim committed and botocore sent it again after a 500: the retry's condition
    fails on our own claim, which is recognised by its run id — the wakeup fires, once."""
    from tests.integration.test_wakeups import conversation, schedule, tick

    caller = agents.connection("caller")["token"]
    sent = conversation(api, stack, caller)
    schedule(api, caller, sent["inbox_id"], delay_seconds=120)
    stack.clock.advance(121)
    lost = faults.fail("UpdateItem", "InternalServerError", where=_claims, commit_first=True)
    assert tick()["wakeups_fired"] == 1
    assert lost.injected == 1
    assert tick()["wakeups_fired"] == 0
    runs = [c for c in _calls(stack) if c.get("state") is not None]
    assert len(runs) == 1


def test_f6_f7_saves_whose_answer_was_lost_are_not_read_as_stale(api, stack, agents, faults):
    """A step's save and a reply's save each committed and were sent again after a 500: the
    retry finds the record at the version it wrote itself, so neither is taken for a
    concurrent change — the turn is not interrupted, the reply is not refused."""
    _crew(api, stack)
    caller = agents.connection("caller")["token"]
    saves = touches(stack.settings.work_table, pk="CALL#")
    step = faults.fail("PutItem", "InternalServerError", where=saves, commit_first=True)
    call_id = _call(api, caller, "confirm", {"action": "ship"}).body["call_id"]
    waiting = wait_for(api, caller, call_id, {"input_required"})
    assert step.injected == 1
    reply = faults.fail("PutItem", "InternalServerError", where=saves, commit_first=True)
    answer = {"request_id": waiting["pending_inputs"][0]["request_id"], "answer": "yes"}
    assert api("POST", f"/v1/calls/{call_id}/reply", caller, answer).status == 200
    assert reply.injected == 1
    done = wait_for(api, caller, call_id, TERMINAL)
    assert done["state"] == "succeeded" and done["result"] == {"confirmed": "yes"}
    assert _running(stack) == 0


def test_f5_a_finish_whose_answer_was_lost_frees_the_slot_once(api, stack, agents, faults):
    _crew(api, stack)
    caller = agents.connection("caller")["token"]
    lost = faults.fail(
        "TransactWriteItems", "InternalServerError", where=_frees_slot, commit_first=True
    )
    call_id = _call(api, caller, "summarize", {"text": "a"}).body["call_id"]
    done = wait_for(api, caller, call_id, TERMINAL)
    assert done["state"] == "succeeded" and lost.injected == 1
    assert _running(stack) == 0  # freed once: not 1 (leaked), not -1 (twice)


def test_f1_a_crew_delete_whose_answer_was_lost_is_a_delete(api, stack, faults):
    _crew(api, stack)
    lost = faults.fail(
        "DeleteItem",
        "InternalServerError",
        where=touches(stack.settings.work_table, sk="CREW#"),
        commit_first=True,
    )
    assert api("DELETE", "/v1/crews/contracts", stack.admin_token).status in (200, 204)
    assert lost.injected == 1
    assert api("GET", "/v1/crews/contracts", stack.admin_token).status == 404
