"""What a step does when its session asks for input (W3): auto-allow answers it, fail ends
the step, escalate sends a signed webhook and waits until `resolve` answers; notifyUrl
also hears of the run's end, and a failing receiver never holds the run up."""

from __future__ import annotations

import time
from typing import Any

from agentworks.workflows.webhooks import SIGNATURE_HEADER, verify
from tests.integration.workflow_support import TIMED, define, start, step_of, wait_run, wait_step
from tests.support.signature_oracle import documented_signature_matches
from tests.support.webhook_receiver import webhook_receiver


def _asking(policy: str, notify_url: str | None = None) -> dict[str, Any]:
    definition: dict[str, Any] = {
        "workflowId": "asks",
        "stages": [
            {
                "steps": [
                    {
                        "label": "plan",
                        "adapter": "timed",
                        "policy": policy,
                        "prompt": "Plan the fix. ask: Which file first",
                    }
                ]
            }
        ],
    }
    if notify_url:
        definition["notifyUrl"] = notify_url
    return definition


def test_auto_allow_answers_with_the_canned_reply(api, stack) -> None:
    define(api, stack.admin_token, TIMED)
    run = wait_run(api, stack.admin_token, start(api, stack.admin_token, _asking("auto-allow")))
    assert run["status"] == "succeeded", run
    assert "answer: Yes, go ahead." in step_of(run, "plan")["output"]


def test_fail_ends_the_step_and_the_run(api, stack) -> None:
    define(api, stack.admin_token, TIMED)
    run = wait_run(api, stack.admin_token, start(api, stack.admin_token, _asking("fail")))
    assert run["status"] == "failed"
    plan = step_of(run, "plan")
    assert plan["status"] == "failed"
    assert plan["error"] == "the session asked for input (policy fail): Which file first"


def test_escalate_sends_a_signed_webhook_and_resolve_answers(
    api, stack, allow_loopback_webhooks
) -> None:
    define(api, stack.admin_token, TIMED)
    key = api("GET", "/v1/workflows/webhook-key", stack.admin_token).body["key"]
    with webhook_receiver() as receiver:
        run_id = start(api, stack.admin_token, _asking("escalate", receiver.url))
        waiting = wait_step(api, stack.admin_token, run_id, "plan", {"waiting"})
        assert waiting["question"] == "Which file first"
        escalation = receiver.wait_for("escalation")
        assert verify(key, escalation.header(SIGNATURE_HEADER), escalation.body)
        assert not verify(key, escalation.header(SIGNATURE_HEADER), escalation.body + b" ")
        signed = escalation.header(SIGNATURE_HEADER)
        assert documented_signature_matches(key, signed, escalation.body)  # as documented
        assert not documented_signature_matches(key, signed, escalation.body + b" ")
        assert escalation.json["runId"] == run_id and escalation.json["step"] == "plan"
        assert escalation.json["question"] == "Which file first"

        early = api(
            "POST",
            f"/v1/workflows/{run_id}/resolve",
            stack.admin_token,
            {"step": "nope", "answer": "x"},
        )
        assert early.status == 409, early.body
        resolved = api(
            "POST",
            f"/v1/workflows/{run_id}/resolve",
            stack.admin_token,
            {"step": "plan", "answer": "auth.ts"},
        )
        assert resolved.status == 200, resolved.body
        run = wait_run(api, stack.admin_token, run_id)
        assert run["status"] == "succeeded", run
        assert "answer: auth.ts" in step_of(run, "plan")["output"]
        completed = receiver.wait_for("completed")
        assert verify(key, completed.header(SIGNATURE_HEADER), completed.body)
        assert documented_signature_matches(key, completed.header(SIGNATURE_HEADER), completed.body)
        assert completed.json["status"] == "succeeded"
    events = [(n["event"], n["delivered"]) for n in run["notifications"]]
    assert ("escalation", True) in events


def test_a_failing_receiver_is_recorded_and_the_run_goes_on(
    api, stack, allow_loopback_webhooks
) -> None:
    define(api, stack.admin_token, TIMED)
    with webhook_receiver() as receiver:
        receiver.failing = True
        run_id = start(api, stack.admin_token, _asking("auto-allow", receiver.url))
        run = wait_run(api, stack.admin_token, run_id)
        assert run["status"] == "succeeded", run
        receiver.wait_for("completed")
        deadline = time.monotonic() + 30
        # The run records the delivery after its last attempt: the receiver stays up until
        # then (a retry after it stopped would read "connection failed").
        while True:
            done = wait_run(api, stack.admin_token, run_id)
            notes = [n for n in done["notifications"] if n["event"] == "completed"]
            if notes or time.monotonic() > deadline:
                break
            time.sleep(0.05)
    (note,) = notes
    assert note["delivered"] is False and note["statusCode"] == 500
    assert note["error"] == "HTTP 500"
    assert note["attempts"] == 3  # retried with a doubling pause, then recorded


def test_a_notify_url_that_redirects_is_recorded_never_followed(
    api, stack, allow_loopback_webhooks
) -> None:
    """Issue 24 §3: a receiver answering 302 to another (both on this machine, allowed by
    the local stack's option). The run records `HTTP 302`; the second receives nothing."""
    define(api, stack.admin_token, TIMED)
    with webhook_receiver() as target, webhook_receiver() as first:
        first.redirect = target.url
        run_id = start(api, stack.admin_token, _asking("auto-allow", first.url))
        deadline = time.monotonic() + 30
        while True:  # the run records the delivery after its last attempt
            done = wait_run(api, stack.admin_token, run_id)
            notes = [n for n in done["notifications"] if n["event"] == "completed"]
            if notes or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        (note,) = notes
        assert (note["statusCode"], note["error"], note["delivered"]) == (302, "HTTP 302", False)
        assert len(first.received) == note["attempts"]
        assert target.received == []  # every attempt had returned before the record


def test_an_unanswered_escalation_fails_its_step_after_the_timeout(api, stack) -> None:
    """The Await state's TimeoutSeconds is the limit; its Catch hands States.Timeout to the
    `interrupted` task, which fails the step (24 h are not waited for here)."""
    import json
    from pathlib import Path

    from agentworks import limits

    asl = json.loads(
        (
            Path(__file__).resolve().parents[2] / "statemachines" / "workflow_run.asl.json"
        ).read_text()
    )
    stages = asl["States"]["Items"]["ItemProcessor"]["States"]["Stages"]
    steps = stages["ItemProcessor"]["States"]["Steps"]["ItemProcessor"]["States"]
    assert steps["AwaitAnswer"]["TimeoutSeconds"] == limits.WORKFLOW_ESCALATION_TIMEOUT_SECONDS
    assert steps["AwaitAnswer"]["Catch"][0]["Next"] == "StepInterrupted"

    define(api, stack.admin_token, TIMED)
    run_id = start(api, stack.admin_token, _asking("escalate"))
    wait_step(api, stack.admin_token, run_id, "plan", {"waiting"})
    event = {"action": "interrupted", "run_id": run_id, "item": 0, "stage": 0, "step": 0,
             "error": {"Error": "States.Timeout", "Cause": None}}  # fmt: skip
    stack.services.workflows.engine.handle(event)
    plan = step_of(api("GET", f"/v1/workflows/{run_id}", stack.admin_token).body, "plan")
    assert (plan["status"], plan["error"]) == ("failed", "no answer within 24 h")
    assert api("POST", f"/v1/workflows/{run_id}/cancel", stack.admin_token).status == 200


def test_a_session_that_never_finishes_ends_after_workflow_step_turns_max_turns(api, stack) -> None:
    """A session auto-allow keeps answering and that keeps asking takes
    WORKFLOW_STEP_TURNS_MAX turns, then its step fails; no turn more is taken."""
    from agentworks import limits
    from tests.support import workflow_agents

    workflow_agents.reset()
    define(api, stack.admin_token, TIMED)
    definition = _asking("auto-allow")
    definition["stages"][0]["steps"][0]["prompt"] = "Plan forever. ask always: And then"
    run = wait_run(api, stack.admin_token, start(api, stack.admin_token, definition))
    assert run["status"] == "failed", run
    plan = step_of(run, "plan")
    assert plan["error"] == (
        f"the session used {limits.WORKFLOW_STEP_TURNS_MAX} turns without finishing"
    )
    assert len(workflow_agents.turns_for("Plan forever")) == limits.WORKFLOW_STEP_TURNS_MAX
