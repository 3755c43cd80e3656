"""Structured functions on Step Functions (F1–F8): the execution really runs in moto."""

from __future__ import annotations

import copy

from tests.integration.crew_support import CONTRACTS, wait_for


def _crew(api, stack, definition=None):
    reply = api("POST", "/v1/crews", stack.admin_token, definition or CONTRACTS)
    assert reply.status == 201, reply.body
    return reply.body


def test_f1_crew_crud(api, stack, agents):
    created = _crew(api, stack)
    assert created["messaging"] == "on" and created["target"] == "crew:contracts"
    caller = agents.connection("caller")["token"]
    assert api("GET", "/v1/crews/contracts", caller).body["crew_id"] == created["crew_id"]
    assert [c["name"] for c in api("GET", "/v1/crews", caller).body["crews"]] == ["contracts"]
    changed = copy.deepcopy(CONTRACTS)
    changed["instructions"] = "Be brief."
    updated = api("PUT", "/v1/crews/contracts", stack.admin_token, changed)
    assert updated.status == 200 and updated.body["version"] == 2
    # Only admins define Crews.
    assert api("POST", "/v1/crews", caller, CONTRACTS).status == 403
    assert api("POST", "/v1/crews", stack.admin_token, CONTRACTS).status == 409
    assert api("DELETE", "/v1/crews/contracts", stack.admin_token).status == 200
    assert api("GET", "/v1/crews/contracts", caller).status == 404


def test_f1_bad_definitions_are_400(api, stack):
    bad = copy.deepcopy(CONTRACTS)
    bad["functions"][0]["input_schema"] = {"type": "nonsense"}
    reply = api("POST", "/v1/crews", stack.admin_token, bad)
    assert reply.status == 400 and "input_schema" in reply.body["error"]["message"]
    bad = copy.deepcopy(CONTRACTS)
    bad["adapter"] = {"type": "telepathy"}
    assert api("POST", "/v1/crews", stack.admin_token, bad).status == 400
    bad = copy.deepcopy(CONTRACTS)
    bad["messaging"] = "sometimes"
    assert api("POST", "/v1/crews", stack.admin_token, bad).status == 400


def test_f2_f3_call_runs_to_succeeded_on_step_functions(api, stack, agents):
    _crew(api, stack)
    caller = agents.connection("caller")["token"]
    listed = api("GET", "/v1/functions", caller, query={"target": "crew:contracts"}).body
    assert [f["name"] for f in listed["functions"]] == ["summarize", "confirm"]
    accepted = api(
        "POST",
        "/v1/calls",
        caller,
        {
            "target": "crew:contracts",
            "function": "summarize",
            "args": {"text": "Either party may end it."},
        },
    )
    assert accepted.status == 202 and accepted.body["state"] == "accepted"
    done = wait_for(api, caller, accepted.body["call_id"], {"succeeded", "failed", "interrupted"})
    assert done["state"] == "succeeded", done
    assert done["result"] == {"summary": "Either party may end it."}
    # The record ends in the execution's Finish task; the execution itself ends a moment
    # after it: wait for that, not for a clock.
    import time

    def executions() -> list[dict]:
        return boto_sfn(stack).list_executions(
            stateMachineArn=stack.settings.function_call_state_machine_arn
        )["executions"]

    deadline = time.monotonic() + 30
    while executions()[0]["status"] == "RUNNING" and time.monotonic() < deadline:
        time.sleep(0.05)
    ended = executions()
    assert [e["name"] for e in ended] == [accepted.body["call_id"]]
    assert ended[0]["status"] == "SUCCEEDED"


def boto_sfn(stack):
    import boto3

    return boto3.client("stepfunctions", region_name="us-east-1")


def test_f3_schema_rejection_is_422_with_path(api, stack, agents):
    _crew(api, stack)
    caller = agents.connection("caller")["token"]
    reply = api(
        "POST",
        "/v1/calls",
        caller,
        {"target": "crew:contracts", "function": "summarize", "args": {"text": 42}},
    )
    assert reply.status == 422 and reply.body["error"]["path"] == "args.text"
    missing = api(
        "POST",
        "/v1/calls",
        caller,
        {"target": "crew:contracts", "function": "summarize", "args": {}},
    )
    assert missing.status == 422
    unknown = api("POST", "/v1/calls", caller, {"target": "crew:contracts", "function": "nope"})
    assert unknown.status == 400


def test_f3_a_schema_rejection_names_the_args_once_whatever_the_fields_are_called(
    api, stack, agents
):
    """The validator speaks of `data`; the caller sent `args`. Only that first word is
    renamed — a field that is itself called `data` keeps its name."""
    crew = copy.deepcopy(CONTRACTS)
    crew["functions"][0]["input_schema"] = {
        "type": "object",
        "properties": {"data": {"type": "object", "properties": {"data": {"type": "string"}}}},
    }
    _crew(api, stack, crew)
    caller = agents.connection("caller")["token"]
    body = {"target": "crew:contracts", "function": "summarize", "args": {"data": {"data": 7}}}
    reply = api("POST", "/v1/calls", caller, body)
    assert reply.status == 422, reply.body
    assert reply.body["error"]["path"] == "args.data.data"
    assert reply.body["error"]["message"] == (
        "args don't match summarize's input schema: args.data.data must be string"
    )


def test_f7_human_input_round_trip(api, stack, agents):
    _crew(api, stack)
    caller = agents.connection("caller")["token"]
    call_id = api(
        "POST",
        "/v1/calls",
        caller,
        {"target": "crew:contracts", "function": "confirm", "args": {"action": "deploy"}},
    ).body["call_id"]
    waiting = wait_for(api, caller, call_id, {"input_required", "failed", "interrupted"})
    assert waiting["state"] == "input_required"
    [question] = waiting["pending_inputs"]
    assert question["question"] == "Proceed with deploy?"
    wrong = api(
        "POST", f"/v1/calls/{call_id}/reply", caller, {"request_id": "req_wrong", "answer": "yes"}
    )
    assert wrong.status == 409
    ok = api(
        "POST",
        f"/v1/calls/{call_id}/reply",
        caller,
        {"request_id": question["request_id"], "answer": "yes"},
    )
    assert ok.status == 200
    done = wait_for(api, caller, call_id, {"succeeded", "failed", "interrupted"})
    assert done["state"] == "succeeded" and done["result"] == {"confirmed": "yes"}
    late = api(
        "POST",
        f"/v1/calls/{call_id}/reply",
        caller,
        {"request_id": question["request_id"], "answer": "again"},
    )
    assert late.status == 409
