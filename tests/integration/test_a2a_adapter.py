"""Issue 30 §2: a Crew's function and a workflow step hand their turns to an external A2A
agent (the a2a-sdk's own server, tests/support/a2a_test_agent.py) through the `a2a`
adapter: the task completes, asks (its question is the call's, the answer goes back to the
same task), fails, hangs past the adapter's timeout (cancelled at the agent), and is
cancelled with the run. The agent's headers come from Secrets Manager, never stored."""

from __future__ import annotations

import copy
import json
import time
from typing import Any

import boto3
import pytest
from a2a.helpers.proto_helpers import get_data_parts

from tests.integration.crew_support import wait_for
from tests.integration.workflow_support import define, start, step_of, wait_run
from tests.support.a2a_test_agent import A2aTestAgent

TEXT = {"type": "object", "properties": {"text": {"type": "string"}}}


def _crew(agent: A2aTestAgent, **settings: Any) -> dict[str, Any]:
    return {
        "name": "partner",
        "instructions": "Hand the work to the partner agent.",
        "adapter": {
            "type": "a2a",
            "card_url": agent.card_url,
            "auth_secret": "partner",
            "timeout_seconds": 30,
            **settings,
        },
        "functions": [
            {
                "name": "summarize",
                "input_schema": TEXT,
                "output_schema": {
                    "type": "object",
                    "properties": {"summary": {"type": "string"}},
                    "required": ["summary"],
                },
            },
            {"name": "confirm", "input_schema": TEXT, "output_schema": {"type": "object"}},
            {"name": "broken", "input_schema": TEXT},
            {"name": "slow", "input_schema": TEXT},
        ],
    }


def _store_headers(api: Any, stack: Any, agent: A2aTestAgent) -> None:
    account = api("GET", "/v1/whoami", stack.admin_token).body["account_id"]
    boto3.client("secretsmanager", region_name="us-east-1").create_secret(
        Name=f"{stack.settings.a2a_secret_prefix}{account}/partner",
        SecretString=json.dumps({"Authorization": f"Bearer {agent.token}"}),
    )


@pytest.fixture
def partner(api: Any, stack: Any, a2a_agent: A2aTestAgent) -> A2aTestAgent:
    _store_headers(api, stack, a2a_agent)
    created = api("POST", "/v1/crews", stack.admin_token, _crew(a2a_agent))
    assert created.status == 201, created.body
    return a2a_agent


def _call(api: Any, token: str, function: str, text: str = "x") -> str:
    accepted = api(
        "POST",
        "/v1/calls",
        token,
        {"target": "crew:partner", "function": function, "args": {"text": text}},
    )
    assert accepted.status == 202, accepted.body
    return str(accepted.body["call_id"])


ENDED = {"succeeded", "failed", "interrupted", "cancelled"}


def test_a_completed_task_is_the_calls_result(api, stack, partner) -> None:
    call_id = _call(api, stack.admin_token, "summarize", "the contract")
    done = wait_for(api, stack.admin_token, call_id, ENDED)
    assert done["state"] == "succeeded", done
    assert done["result"] == {"summary": "the contract"}
    assert done["final_text"] == "Summarized: the contract"
    [sent] = partner.messages
    [data] = get_data_parts(sent.parts)
    assert data == {"function": "summarize", "args": {"text": "the contract"}}
    assert "the contract" in sent.parts[0].text  # the task in words, then its data part
    assert partner.unauthorized == 0  # the card and every request carried the secret's header


def test_the_agents_question_is_the_calls_and_the_answer_goes_to_the_same_task(
    api, stack, partner
) -> None:
    admin = stack.admin_token
    call_id = _call(api, admin, "confirm")
    asked = wait_for(api, admin, call_id, {"input_required"} | ENDED)
    assert asked["state"] == "input_required", asked
    [question] = asked["pending_inputs"]
    assert question["question"] == "Which environment?"
    reply = {"request_id": question["request_id"], "answer": "staging"}
    assert api("POST", f"/v1/calls/{call_id}/reply", admin, reply).status == 200
    done = wait_for(api, admin, call_id, ENDED)
    assert done["state"] == "succeeded", done
    assert done["result"] == {"confirmed": "staging"}
    first, answer = partner.messages
    assert answer.task_id == first.task_id and answer.parts[0].text == "staging"


def test_a_failed_task_fails_the_call_with_the_agents_words(api, stack, partner) -> None:
    done = wait_for(api, stack.admin_token, _call(api, stack.admin_token, "broken"), ENDED)
    assert done["state"] == "failed", done
    assert any("The A2A agent failed: the agent broke" in e for e in done["errors"])


def test_a_task_past_the_timeout_is_cancelled_at_the_agent(api, stack, a2a_agent) -> None:
    _store_headers(api, stack, a2a_agent)
    crew = _crew(a2a_agent, timeout_seconds=1)
    assert api("POST", "/v1/crews", stack.admin_token, crew).status == 201
    started = time.monotonic()
    done = wait_for(api, stack.admin_token, _call(api, stack.admin_token, "slow"), ENDED)
    assert done["state"] == "failed", done
    assert any("did not finish within 1 s; it was cancelled" in e for e in done["errors"])
    assert a2a_agent.wait_cancelled() and time.monotonic() - started < 20


def test_cancelling_the_run_cancels_its_steps_task_at_the_agent(api, stack, a2a_agent) -> None:
    _store_headers(api, stack, a2a_agent)
    admin = stack.admin_token
    profile = {"name": "partner", "type": "a2a", "card_url": a2a_agent.card_url,
               "auth_secret": "partner", "timeout_seconds": 60}  # fmt: skip
    define(api, admin, profile)
    flow = {
        "workflowId": "handoff",
        "stages": [{"steps": [{"label": "wait", "adapter": "partner", "prompt": "slow please"}]}],
    }
    run_id = start(api, admin, flow)
    assert a2a_agent.slow_started.wait(20), "the step's task never reached the agent"
    cancelled_at = time.monotonic()
    assert api("POST", f"/v1/workflows/{run_id}/cancel", admin).status == 200
    a2a_agent.wait_cancelled(timeout=20)
    assert time.monotonic() - cancelled_at < 15  # noticed within a few polls, not at 60 s
    assert wait_run(api, admin, run_id)["status"] == "cancelled"


def test_a_workflow_steps_turn_completes_at_the_agent(api, stack, a2a_agent) -> None:
    _store_headers(api, stack, a2a_agent)
    admin = stack.admin_token
    profile = {"name": "partner", "type": "a2a", "card_url": a2a_agent.card_url,
               "auth_secret": "partner"}  # fmt: skip
    define(api, admin, profile)
    flow = {
        "workflowId": "handoff",
        "stages": [{"steps": [{"label": "ask", "adapter": "partner", "prompt": "broken"}]}],
    }
    run = wait_run(api, admin, start(api, admin, flow))
    assert run["status"] == "failed", run
    assert "the agent broke" in json.dumps(step_of(run, "ask"))


def test_the_adapter_refuses_a_url_the_outbound_rules_refuse(api, stack) -> None:
    crew = copy.deepcopy(_crew(A2aTestAgent(url="http://10.0.0.1:8080", token="x")))
    refused = api("POST", "/v1/crews", stack.admin_token, crew)
    assert refused.status == 400, refused.body
    assert "card_url' is refused" in refused.body["error"]["message"]


def test_a_missing_secret_fails_the_call_saying_where_it_goes(api, stack, a2a_agent) -> None:
    crew = _crew(a2a_agent, auth_secret="nobody")
    assert api("POST", "/v1/crews", stack.admin_token, crew).status == 201
    done = wait_for(api, stack.admin_token, _call(api, stack.admin_token, "summarize"), ENDED)
    assert done["state"] == "failed"
    assert any("auth_secret 'nobody' was not found" in e for e in done["errors"])
    assert a2a_agent.messages == []
