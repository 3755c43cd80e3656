"""Workflow functions (F9, W10): a registered workflow's function trigger is called like a
Crew's function (target=workflow:NAME) — typed input, an accepted call per run, the call's
status the run's outcome with its steps as evidence — and its caller allow-list names
connections and workflows: workflow A's step may call B's function, an unlisted caller
(a connection or workflow C) finds nothing."""

from __future__ import annotations

import time
from typing import Any

from agentworks import limits
from tests.integration.workflow_support import CLAUDE_CODE, define, start, step_of, wait_run


def _b(callers: list[str]) -> str:
    listed = ", ".join(callers)
    return f"""---
workflowId: reviewer
triggers:
  - kind: function
    name: review
    description: Review a repository
    inputSchema:
      type: object
      properties: {{REPO: {{type: string}}}}
      required: [REPO]
    callers: [{listed}]
---
## review
### look
```yaml
adapter: claude-code
```
Review {{{{REPO}}}} for bugs.
"""


def _until_terminal(api: Any, token: str, call_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while True:
        status = api("GET", f"/v1/calls/{call_id}", token)
        assert status.status == 200, status.body
        if status.body["terminal"]:
            return dict(status.body)
        assert time.monotonic() < deadline, status.body
        time.sleep(0.05)


def test_a_workflow_function_is_called_like_a_crews(api, stack, agents) -> None:
    define(api, stack.admin_token, CLAUDE_CODE)
    listed = agents.connection("listed")
    unlisted = agents.connection("unlisted")["token"]
    registered = api(
        "PUT", "/v1/workflow-definitions", stack.admin_token,
        {"content": _b([listed["connection_id"], "workflow:nightly"])},
    )  # fmt: skip
    assert registered.status == 200, registered.body
    functions = api("GET", "/v1/functions", listed["token"], query={"target": "workflow:reviewer"})
    assert functions.status == 200, functions.body
    assert [f["name"] for f in functions.body["functions"]] == ["review"]
    assert functions.body["functions"][0]["input_schema"]["required"] == ["REPO"]

    call = {"target": "workflow:reviewer", "function": "review", "args": {"REPO": "acme/api"},
            "submission_id": "review-1"}  # fmt: skip
    accepted = api("POST", "/v1/calls", listed["token"], call)
    assert accepted.status == 202, accepted.body
    assert accepted.body["call_id"].startswith("wcall_")
    done = _until_terminal(api, listed["token"], accepted.body["call_id"])
    assert done["state"] == "succeeded" and done["final_text"] == "Found 2 bugs in acme/api."
    assert any(line.endswith("review/look: succeeded") for line in done["progress"])
    again = api("POST", "/v1/calls", listed["token"], call)
    assert again.status == 200 and again.body["replayed"] is True
    assert again.body["call_id"] == accepted.body["call_id"]

    refused = api("POST", "/v1/calls", unlisted, {**call, "submission_id": None})
    unknown = api("POST", "/v1/calls", unlisted, {**call, "target": "workflow:nobody",
                                                  "submission_id": None})  # fmt: skip
    assert (refused.status, refused.body) == (404, unknown.body)
    # Nor does its listing show it: an unlisted caller learns nothing of the function.
    hidden = api("GET", "/v1/functions", unlisted, query={"target": "workflow:reviewer"})
    assert hidden.status == 200 and hidden.body["functions"] == [], hidden.body
    bad = api("POST", "/v1/calls", listed["token"], {**call, "args": {"REPO": 7},
                                                     "submission_id": None})  # fmt: skip
    assert bad.status == 422 and "input schema" in bad.body["error"]["message"]
    foreign = api("GET", f"/v1/calls/{accepted.body['call_id']}", unlisted)
    assert foreign.status == 404


def test_workflow_a_calls_bs_function_and_an_unlisted_workflow_is_refused(api, stack) -> None:
    define(api, stack.admin_token, CLAUDE_CODE)
    token = stack.admin_token
    assert api("PUT", "/v1/workflow-definitions", token,
               {"content": _b(["workflow:nightly"])}).status == 200  # fmt: skip

    def caller(workflow_id: str) -> dict[str, Any]:
        step = {"label": "delegate", "workflow": "reviewer", "function": "review",
                "args": {"REPO": "acme/db"}}  # fmt: skip
        return {"workflowId": workflow_id, "stages": [{"steps": [step]}]}

    a = wait_run(api, token, start(api, token, caller("nightly")))
    assert a["status"] == "succeeded", a
    assert step_of(a, "delegate")["output"] == "Found 2 bugs in acme/db."
    c = wait_run(api, token, start(api, token, caller("intruder")))
    assert c["status"] == "failed"
    assert step_of(c, "delegate")["error"].startswith("workflow:reviewer refused the call: Not")
    # Only the listed workflow's call started a run of the reviewer.
    reviewer_runs = [r for r in api("GET", "/v1/workflows", token).body["runs"]
                     if r["workflowId"] == "reviewer"]  # fmt: skip
    assert len(reviewer_runs) == 1


CALLER = {
    "name": "caller",
    "type": "scripted",
    "rules": [
        {"when": "Summarize (.+)",
         "call": {"target": "crew:contracts", "function": "summarize",
                  "args": {"text": "{match.1}"}},
         "reply": "Summary: {call.result.summary}"},
        {"when": "Review (\\S+)",
         "call": {"target": "workflow:reviewer", "function": "review",
                  "args": {"REPO": "{match.1}"}},
         "reply": "Reviewer said: {call.final_text}"},
    ],
}  # fmt: skip


def test_a_steps_session_calls_functions_as_the_source_workflow(api, stack) -> None:
    from tests.integration.crew_support import CONTRACTS

    define(api, stack.admin_token, CLAUDE_CODE, CALLER)
    token = stack.admin_token
    assert api("POST", "/v1/crews", token, CONTRACTS).status == 201
    assert api("PUT", "/v1/workflow-definitions", token,
               {"content": _b(["workflow:nightly"])}).status == 200  # fmt: skip

    def asking(workflow_id: str, prompt: str) -> dict[str, Any]:
        step = {"label": "agent", "adapter": "caller", "prompt": prompt}
        return {"workflowId": workflow_id, "stages": [{"steps": [step]}]}

    crew = wait_run(api, token, start(api, token, asking("nightly", "Summarize the lease")))
    assert step_of(crew, "agent")["output"] == "Summary: the lease", crew
    listed = wait_run(api, token, start(api, token, asking("nightly", "Review acme/x")))
    assert step_of(listed, "agent")["output"] == "Reviewer said: Found 2 bugs in acme/x."
    unlisted = wait_run(api, token, start(api, token, asking("intruder", "Review acme/x")))
    assert unlisted["status"] == "failed"
    assert step_of(unlisted, "agent")["error"].startswith("the function call was refused: Not")


def test_a_steps_session_lists_calls_and_reads_a_call(api, stack) -> None:
    lister = {"name": "lister", "type": "scripted",
              "entrypoint": "tests.support.workflow_agents:uses_functions"}  # fmt: skip
    define(api, stack.admin_token, CLAUDE_CODE, lister)
    token = stack.admin_token
    assert api("PUT", "/v1/workflow-definitions", token,
               {"content": _b(["workflow:nightly"])}).status == 200  # fmt: skip
    step = {"label": "agent", "adapter": "lister", "prompt": "Use the reviewer"}
    run = wait_run(api, token, start(api, token, {"workflowId": "nightly",
                                                  "stages": [{"steps": [step]}]}))  # fmt: skip
    assert step_of(run, "agent")["output"] == (
        "functions: review; state: succeeded; said: Found 2 bugs in acme/z."
    ), run


def test_cancelling_a_run_cancels_the_run_its_step_called(api, stack) -> None:
    define(api, stack.admin_token, {**CLAUDE_CODE, "name": "asker", "rules": [
        {"when": "Review", "ask": "Which part?", "reply": "Looked at {answer}."}]})  # fmt: skip
    token = stack.admin_token
    waiting = _b(["workflow:nightly"]).replace("adapter: claude-code",
                                               "adapter: asker\npolicy: escalate")  # fmt: skip
    assert api("PUT", "/v1/workflow-definitions", token, {"content": waiting}).status == 200
    step = {"label": "delegate", "workflow": "reviewer", "function": "review",
            "args": {"REPO": "acme/w"}}  # fmt: skip
    run_id = start(api, token, {"workflowId": "nightly", "stages": [{"steps": [step]}]})
    deadline = time.monotonic() + 30
    while True:
        called = [r for r in api("GET", "/v1/workflows", token).body["runs"]
                  if r["workflowId"] == "reviewer"]  # fmt: skip
        if called and step_of(api("GET", f"/v1/workflows/{called[0]['runId']}", token).body,
                              "look")["status"] == "waiting":  # fmt: skip
            break
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert api("POST", f"/v1/workflows/{run_id}/cancel", token).status == 200
    assert wait_run(api, token, called[0]["runId"])["status"] == "cancelled"


def test_a_functions_caller_list_holds_its_bound_and_no_more(api, stack, agents) -> None:
    """W10: WORKFLOW_CALLERS_MAX callers, the last of them the one that calls, registers and
    lets it call; one more is refused and the registration stays as it was."""
    define(api, stack.admin_token, CLAUDE_CODE)
    last = agents.connection("last")
    one_more = agents.connection("one-more")
    fillers = [f"workflow:w{i}" for i in range(limits.WORKFLOW_CALLERS_MAX - 1)]
    at_bound = [*fillers, last["connection_id"]]
    registered = api(
        "PUT", "/v1/workflow-definitions", stack.admin_token, {"content": _b(at_bound)}
    )
    assert registered.status == 200, registered.body
    # A call with args its schema refuses starts nothing: a listed caller is told about the
    # args (422), an unlisted one learns nothing of the function (404).
    call = {"target": "workflow:reviewer", "function": "review", "args": {"REPO": 7}}
    assert api("POST", "/v1/calls", last["token"], call).status == 422
    assert api("POST", "/v1/calls", one_more["token"], call).status == 404

    past = api(
        "PUT",
        "/v1/workflow-definitions",
        stack.admin_token,
        {"content": _b([*at_bound, one_more["connection_id"]])},
    )
    assert past.status == 400 and past.body["error"]["code"] == "invalid_request"
    assert "callers" in past.body["error"]["message"]
    # Not stored: the version is the first, and the 51st caller still finds nothing.
    listed = api("GET", "/v1/workflow-definitions", stack.admin_token).body["workflows"]
    assert [(w["workflowId"], w["version"]) for w in listed] == [("reviewer", 1)]
    assert api("POST", "/v1/calls", one_more["token"], call).status == 404
    assert api("POST", "/v1/calls", last["token"], call).status == 422
