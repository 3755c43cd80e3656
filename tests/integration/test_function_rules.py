"""F4–F8 rules of structured functions, each through a real Step Functions execution."""

from __future__ import annotations

import copy
import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from agentworks.crews.models import CallFunction
from agentworks.crews.runner import StepRunner
from tests.integration.crew_support import CONTRACTS, wait_for

TERMINAL = {"succeeded", "failed", "interrupted", "cancelled"}


def _crew(api, stack, **changes):
    definition = copy.deepcopy(CONTRACTS)
    definition.update(changes)
    reply = api("POST", "/v1/crews", stack.admin_token, definition)
    assert reply.status == 201, reply.body
    return reply.body


def _call(api, token, function, args, **extra):
    return api(
        "POST",
        "/v1/calls",
        token,
        {"target": "crew:contracts", "function": function, "args": args, **extra},
    )


def test_f4_submission_id_recovers_the_call_and_conflicts_on_other_args(api, stack, agents):
    _crew(api, stack)
    caller = agents.connection("caller")["token"]
    first = _call(api, caller, "summarize", {"text": "a"}, submission_id="job-1")
    again = _call(api, caller, "summarize", {"text": "a"}, submission_id="job-1")
    assert first.status == 202 and again.status == 200 and again.body["replayed"] is True
    assert again.body["call_id"] == first.body["call_id"]
    clash = _call(api, caller, "summarize", {"text": "b"}, submission_id="job-1")
    assert clash.status == 409 and clash.body["error"]["field"] == "submission_id"
    wait_for(api, caller, first.body["call_id"], TERMINAL)
    executions = stack_executions(stack)
    assert len(executions) == 1  # the retry started nothing


def stack_executions(stack):
    import boto3

    sfn = boto3.client("stepfunctions", region_name="us-east-1")
    return sfn.list_executions(stateMachineArn=stack.settings.function_call_state_machine_arn)[
        "executions"
    ]


def test_f5_four_concurrent_calls_three_run_one_busy(api, stack, agents):
    _crew(api, stack)
    caller = agents.connection("caller")["token"]

    def call(i):
        return _call(api, caller, "confirm", {"action": f"step {i}"})

    with ThreadPoolExecutor(max_workers=4) as pool:
        replies = list(pool.map(call, range(4)))
    accepted = [r for r in replies if r.status == 202]
    busy = [r for r in replies if r.status == 429]
    assert len(accepted) == 3 and len(busy) == 1
    assert busy[0].body["error"]["code"] == "busy"
    assert busy[0].body["error"]["message"] == (
        "crew:contracts is running 3 calls; nothing was queued. "
        "Retry later (reuse the same submission_id)."
    )
    assert api("GET", "/v1/crews/contracts", caller).body["running"] == 3
    # A question pending (a quiet, long call) keeps its slot; finishing one frees one.
    first = wait_for(api, caller, accepted[0].body["call_id"], {"input_required"})
    assert _call(api, caller, "summarize", {"text": "x"}).status == 429
    api(
        "POST",
        f"/v1/calls/{first['call_id']}/reply",
        caller,
        {"request_id": first["pending_inputs"][0]["request_id"], "answer": "no"},
    )
    wait_for(api, caller, first["call_id"], TERMINAL)
    assert _call(api, caller, "summarize", {"text": "x"}).status == 202


def test_f5_a_call_whose_execution_cannot_start_ends_failed_and_frees_its_slot(
    api, stack, agents, monkeypatch
):
    """Admitted (record and slot in one transaction), but Step Functions refused to start
    it: nothing would ever run it, so it is recorded failed with why, and the slot is given
    back at once."""
    _crew(api, stack)
    caller = agents.connection("caller")["token"]
    executions = stack.services.crews.calls._executions

    def refused(name: str) -> None:
        raise RuntimeError("StartExecution refused")

    monkeypatch.setattr(executions, "start", refused)
    with pytest.raises(RuntimeError):
        stack.services.crews.calls.call(
            stack.principal(caller),
            CallFunction(target="crew:contracts", function="summarize", args={"text": "x"}),
        )
    [call] = api("GET", "/v1/calls", caller).body["calls"]
    status = api("GET", f"/v1/calls/{call['call_id']}", caller).body
    assert (status["state"], status["errors"]) == (
        "failed",
        ["The execution could not be started."],
    )
    record, _ = stack.services.crews.calls._calls.get(call["call_id"])
    assert record.slot_held is False and record.submission_id is None
    assert api("GET", "/v1/crews/contracts", caller).body["running"] == 0


def test_f5_a_crew_changed_while_admitting_a_call_is_a_conflict_to_retry(
    api, stack, agents, monkeypatch
):
    from agentworks.crews.call_store import CrewChanged

    _crew(api, stack)
    caller = agents.connection("caller")["token"]

    def changed(*args: object, **kwargs: object) -> None:
        raise CrewChanged()

    monkeypatch.setattr(stack.services.crews.calls._calls, "admit", changed)
    refused = _call(api, caller, "summarize", {"text": "x"})
    assert (refused.status, refused.body["error"]["message"]) == (
        409,
        "The Crew changed while calling it; retry.",
    )


def test_f6_one_correction_turn_then_success(api, stack, agents):
    adapter = copy.deepcopy(CONTRACTS["adapter"])
    adapter["rules"][1] = {
        "function": "summarize",
        "result": {"wrong": 1},
        "result_on_correction": {"summary": "fixed"},
    }
    _crew(api, stack, adapter=adapter)
    caller = agents.connection("caller")["token"]
    call_id = _call(api, caller, "summarize", {"text": "t"}).body["call_id"]
    done = wait_for(api, caller, call_id, TERMINAL)
    assert done["state"] == "succeeded" and done["result"] == {"summary": "fixed"}
    assert done["turns"] == 2
    assert any("correction" in line for line in done["progress"])


def test_f6_invalid_result_after_the_correction_fails_with_the_errors(api, stack, agents):
    adapter = copy.deepcopy(CONTRACTS["adapter"])
    adapter["rules"][1] = {"function": "summarize", "result": {"wrong": 1}}
    _crew(api, stack, adapter=adapter)
    caller = agents.connection("caller")["token"]
    call_id = _call(api, caller, "summarize", {"text": "t"}).body["call_id"]
    done = wait_for(api, caller, call_id, TERMINAL)
    assert done["state"] == "failed" and done["turns"] == 2
    assert "summary" in done["errors"][-1]
    assert api("GET", "/v1/crews/contracts", caller).body["running"] == 0


def test_f6_large_result_is_a_file_read_in_pages(api, stack, agents):
    adapter = copy.deepcopy(CONTRACTS["adapter"])
    big = "x" * (300 * 1024)
    adapter["rules"][1] = {
        "function": "summarize",
        "result": {"summary": big},
        "files": {"notes/summary.txt": "Summary of {args.text}"},
    }
    _crew(api, stack, adapter=adapter)
    caller = agents.connection("caller")["token"]
    call_id = _call(api, caller, "summarize", {"text": "the lease"}).body["call_id"]
    done = wait_for(api, caller, call_id, TERMINAL)
    assert done["state"] == "succeeded", done
    assert done["result"] is None and done["result_file"] == "result.json"
    page = api("GET", f"/v1/calls/{call_id}/files", caller, query={"path": "result.json"}).body
    assert page["pages"] == 1 and json.loads(page["content"]) == {"summary": big}
    assert (
        api(
            "GET", f"/v1/calls/{call_id}/files", caller, query={"path": "result.json", "page": 1}
        ).body["content"]
        == ""
    )
    notes = api(
        "GET", f"/v1/calls/{call_id}/files", caller, query={"path": "notes/summary.txt"}
    ).body
    assert notes["content"] == "Summary of the lease"
    assert done["files"] == [{"path": "notes/summary.txt", "size": len("Summary of the lease")}]
    # Unknown paths are unavailable; a swept output answers expired (F8).
    assert (
        api("GET", f"/v1/calls/{call_id}/files", caller, query={"path": "../secrets"}).status == 404
    )
    import boto3

    boto3.client("s3", region_name="us-east-1").delete_object(
        Bucket=stack.settings.outputs_bucket,
        Key=f"calls/{done_crew_id(api, caller)}/{call_id}/notes/summary.txt",
    )
    gone = api("GET", f"/v1/calls/{call_id}/files", caller, query={"path": "notes/summary.txt"})
    assert gone.status == 410 and gone.body["error"]["code"] == "expired"
    assert api("GET", f"/v1/calls/{call_id}", caller).status == 200  # the record stays


def done_crew_id(api, token):
    return api("GET", "/v1/crews/contracts", token).body["crew_id"]


def test_f8_crashed_step_runner_ends_interrupted_with_evidence(api, stack, agents, monkeypatch):
    _crew(api, stack)
    caller = agents.connection("caller")["token"]

    def crash(*_args, **_kwargs):
        raise RuntimeError("the worker died mid-turn")

    monkeypatch.setattr(StepRunner, "_after_turn", crash)
    call_id = _call(api, caller, "summarize", {"text": "t"}).body["call_id"]
    done = wait_for(api, caller, call_id, TERMINAL)
    assert done["state"] == "interrupted"
    assert done["progress"] == ["turn 1 started"]  # saved evidence
    assert "RuntimeError" in done["errors"][-1]
    assert api("GET", "/v1/crews/contracts", caller).body["running"] == 0
    # Reads never start or steer anything.
    before = len(stack_executions(stack))
    for _ in range(3):
        api("GET", f"/v1/calls/{call_id}", caller)
    assert len(stack_executions(stack)) == before


def test_f_adapter_failure_ends_failed(api, stack, agents):
    adapter = copy.deepcopy(CONTRACTS["adapter"])
    adapter["rules"][1] = {"function": "summarize", "fail": "the model is unavailable"}
    _crew(api, stack, adapter=adapter)
    caller = agents.connection("caller")["token"]
    call_id = _call(api, caller, "summarize", {"text": "t"}).body["call_id"]
    done = wait_for(api, caller, call_id, TERMINAL)
    assert done["state"] == "failed" and "unavailable" in done["errors"][-1]


@pytest.mark.parametrize("who", ["other-account", "out-of-bounds", "other-caller", "no-access"])
def test_a4_strangers_cannot_list_call_read_or_reply(api, stack, agents, who):
    _crew(api, stack, access=[])
    caller = agents.connection("caller")["token"]
    call_id = _call(api, caller, "confirm", {"action": "x"}).body["call_id"]
    waiting = wait_for(api, caller, call_id, {"input_required"})
    if who == "other-account":
        token = stack.services.identity.bootstrap("intruder").token
    elif who == "out-of-bounds":
        token = api(
            "POST",
            "/v1/connections",
            stack.admin_token,
            {"name": "bounded", "target_bounds": ["crew:other"]},
        ).body["token"]
    elif who == "other-caller":
        token = agents.connection("neighbour")["token"]
    else:
        outsider = agents.connection("outsider")
        token = outsider["token"]
        restricted = copy.deepcopy(CONTRACTS)
        restricted["access"] = [agents.connection("friend")["connection_id"]]
        assert api("PUT", "/v1/crews/contracts", stack.admin_token, restricted).status == 200
    unknown_status = api("GET", "/v1/calls/call_01ARZ3NDEKTSV4RRFFQ69G5FAV", token)
    status = api("GET", f"/v1/calls/{call_id}", token)
    assert status.status == 404 and status.body == unknown_status.body
    reply = api(
        "POST",
        f"/v1/calls/{call_id}/reply",
        token,
        {"request_id": waiting["pending_inputs"][0]["request_id"], "answer": "yes"},
    )
    assert reply.status == 404
    assert api("GET", f"/v1/calls/{call_id}/files", token, query={"path": "x"}).status == 404
    if who != "other-caller":
        assert api("GET", "/v1/functions", token, query={"target": "crew:contracts"}).status == 404
        assert _call(api, token, "summarize", {"text": "t"}).status == 404
        assert "contracts" not in json.dumps(api("GET", "/v1/crews", token).body)
    # The call is untouched.
    assert api("GET", f"/v1/calls/{call_id}", caller).body["state"] == "input_required"


def test_f2_a_file_reads_in_pages_of_file_page_max_bytes(stack):
    """F2: a file of FILE_PAGE_MAX_BYTES is one page; a byte more is two, the second holding
    that byte; a page past the last is empty."""
    import boto3

    from agentworks import limits
    from agentworks.crews.outputs import OutputStore

    store = OutputStore(
        lambda: boto3.client("s3", region_name="us-east-1"), stack.settings.outputs_bucket
    )
    content = bytes(range(256)) * (limits.FILE_PAGE_MAX_BYTES // 256) + b"!"
    store.put("calls/c/k/", "at.bin", content[:-1])
    store.put("calls/c/k/", "past.bin", content)
    at = store.read_page("calls/c/k/", "at.bin", 0)
    assert (at.pages, at.size, at.content) == (1, limits.FILE_PAGE_MAX_BYTES, content[:-1])
    first = store.read_page("calls/c/k/", "past.bin", 0)
    second = store.read_page("calls/c/k/", "past.bin", 1)
    assert first.pages == second.pages == 2
    assert first.content == content[: limits.FILE_PAGE_MAX_BYTES] and second.content == b"!"
    assert store.read_page("calls/c/k/", "past.bin", 2).content == b""
