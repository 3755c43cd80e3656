"""§8 results posted to a mailbox Crew's call, by what the poster and the execution see:
the target bounds of the posting connection count (A4), a call not waiting with its token
takes no result and says in which state it is, a Crew deleted meanwhile still lets the
work finish, a result past the inline bound is kept as a file, and the execution resumes
with who posted. Written to kill the mutants `make mutate` found alive in crews/calls.py's
`post_result` (docs/benchmarks.md, "Mutation testing")."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import boto3

from agentworks import limits
from agentworks.crews.call_store import CallStore
from tests.integration.crew_support import wait_for
from tests.integration.test_mailbox_adapter import DELEGATOR, call

RESULT = {"summary": "30 days notice."}


def _handed_off(api: Any, stack: Any, caller: str, text: str = "Terms.") -> str:
    """A call of crew:delegator handed to agent:worker, its AwaitAgent token held."""
    call_id = call(api, caller, text)
    store = CallStore(stack.client, stack.settings.work_table)
    deadline = time.monotonic() + 30
    while True:
        found = store.get(call_id)
        record = found[0] if found else None
        if record and record.task_token and record.handoff_message is None:
            assert record.handoff_agent == "worker"
            return call_id
        assert time.monotonic() < deadline, found
        time.sleep(0.05)


def _worker_with(api: Any, stack: Any, agents: Any, *bounded: list[str]) -> list[str]:
    """Registers agent:worker allowing connections bounded to each of `bounded`; returns
    their tokens."""
    made = [
        agents.connection(f"poster-{n}", scopes=["messages:send"])
        if not bounds
        else api(
            "POST",
            "/v1/connections",
            stack.admin_token,
            {"name": f"poster-{n}", "scopes": ["messages:send"], "target_bounds": bounds},
        ).body
        for n, bounds in enumerate(bounded)
    ]
    owner = agents.connection("worker-conn")
    body = {
        "agent_name": "worker",
        "allowed_connection_ids": [owner["connection_id"]] + [m["connection_id"] for m in made],
    }
    assert api("POST", "/v1/agents", owner["token"], body).status == 200
    return [m["token"] for m in made]


def _post(api: Any, token: str, call_id: str, **body: Any) -> Any:
    return api("POST", f"/v1/calls/{call_id}/result", token, {"agent_name": "worker", **body})


def test_the_posters_target_bounds_must_name_the_agent(api, stack, agents) -> None:
    assert api("POST", "/v1/crews", stack.admin_token, DELEGATOR).status == 201
    elsewhere, named = _worker_with(api, stack, agents, ["crew:delegator"], ["agent:worker"])
    caller = agents.connection("caller")["token"]
    call_id = _handed_off(api, stack, caller)
    refused = _post(api, elsewhere, call_id, result=RESULT)
    unknown = _post(api, elsewhere, "call_01KZZZZZZZZZZZZZZZZZZZZZZZ", result=RESULT)
    assert refused.status == unknown.status == 404
    assert refused.body == unknown.body
    assert _post(api, named, call_id, result=RESULT).status == 200
    assert wait_for(api, caller, call_id, {"succeeded"})["result"] == RESULT


def _change(stack: Any, call_id: str, **fields: Any) -> None:
    store = CallStore(stack.client, stack.settings.work_table)
    found = store.get(call_id)
    assert found is not None
    record, version = found
    for name, value in fields.items():
        setattr(record, name, value)
    store.save(record, version)


def test_a_call_not_waiting_with_its_token_takes_no_result(api, stack, agents) -> None:
    assert api("POST", "/v1/crews", stack.admin_token, DELEGATOR).status == 201
    [worker] = _worker_with(api, stack, agents, [])
    caller = agents.connection("caller")["token"]
    for fields, state in (({"task_token": None}, "running"), ({"state": "accepted"}, "accepted")):
        call_id = _handed_off(api, stack, caller)
        _change(stack, call_id, **fields)
        refused = _post(api, worker, call_id, result=RESULT)
        assert (refused.status, refused.body["error"]) == (
            409,
            {
                "code": "conflict",
                "message": f"The call is {state}; it is not waiting for a result.",
                "state": state,
            },
        )


def test_work_handed_off_finishes_after_its_crew_was_deleted(api, stack, agents) -> None:
    """The Crew (and its output schema) is gone: the posted result is taken as it is."""
    assert api("POST", "/v1/crews", stack.admin_token, DELEGATOR).status == 201
    [worker] = _worker_with(api, stack, agents, [])
    caller = agents.connection("caller")["token"]
    call_id = _handed_off(api, stack, caller)
    assert api("DELETE", "/v1/crews/delegator", stack.admin_token).status == 200
    posted = _post(api, worker, call_id, result={"gist": "not the schema's"})
    assert posted.status == 200, posted.body


def test_a_large_result_is_kept_as_the_calls_result_file(api, stack, agents) -> None:
    assert api("POST", "/v1/crews", stack.admin_token, DELEGATOR).status == 201
    [worker] = _worker_with(api, stack, agents, [])
    caller = agents.connection("caller")["token"]
    call_id = _handed_off(api, stack, caller)
    large = {"summary": "x" * (limits.RESULT_INLINE_MAX_BYTES + 1)}
    assert _post(api, worker, call_id, result=large).status == 200
    done = wait_for(api, caller, call_id, {"succeeded"})
    assert done["result"] is None and done["result_file"], done
    path = done["result_file"]
    page = api("GET", f"/v1/calls/{call_id}/files", caller, query={"path": path})
    assert (page.status, page.body["encoding"]) == (200, "utf-8"), page.body
    assert json.loads(page.body["content"]) == large
    # A file that is not UTF-8 comes back base64-encoded (here the same key, rewritten).
    record = CallStore(stack.client, stack.settings.work_table).get(call_id)
    assert record is not None
    binary = b"\xff\xfe\x00 not text"
    boto3.client("s3", region_name="us-east-1").put_object(
        Bucket=stack.settings.outputs_bucket,
        Key=f"calls/{record[0].crew_id}/{call_id}/{path}",
        Body=binary,
    )
    page = api("GET", f"/v1/calls/{call_id}/files", caller, query={"path": path})
    assert (page.body["encoding"], page.body["size"]) == ("base64", len(binary))
    assert base64.b64decode(page.body["content"]) == binary
    # An unknown call's file looks like any unknown call.
    unknown = "call_01KZZZZZZZZZZZZZZZZZZZZZZZ"
    gone = api("GET", f"/v1/calls/{unknown}/files", caller, query={"path": path})
    shown = api("GET", f"/v1/calls/{unknown}", caller)
    assert (gone.status, gone.body) == (shown.status, shown.body)


def test_the_execution_resumes_with_who_posted(api, stack, agents) -> None:
    assert api("POST", "/v1/crews", stack.admin_token, DELEGATOR).status == 201
    [worker] = _worker_with(api, stack, agents, [])
    caller = agents.connection("caller")["token"]
    call_id = _handed_off(api, stack, caller)
    assert _post(api, worker, call_id, result=RESULT).status == 200
    wait_for(api, caller, call_id, {"succeeded"})
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
    assert {"posted_by": "agent:worker"} in outputs


def test_a_name_registered_again_after_the_hand_off_cannot_post_its_result(
    api, stack, agents
) -> None:
    """The work went to agent:worker as it was (its agent id): a new registration of the
    same name — another agent — is refused like an unknown call, and the call waits on."""
    assert api("POST", "/v1/crews", stack.admin_token, DELEGATOR).status == 201
    [worker] = _worker_with(api, stack, agents, [])
    caller = agents.connection("caller")["token"]
    call_id = _handed_off(api, stack, caller)
    assert api("DELETE", "/v1/agents/worker", worker).status == 200
    newcomer = agents.named("worker")  # the same name, a new agent
    refused = _post(api, newcomer, call_id, result=RESULT)
    unknown = _post(api, newcomer, "call_01KZZZZZZZZZZZZZZZZZZZZZZZ", result=RESULT)
    assert (refused.status, refused.body) == (unknown.status, unknown.body) == (404, unknown.body)
    assert api("GET", f"/v1/calls/{call_id}", caller).body["state"] == "running"
