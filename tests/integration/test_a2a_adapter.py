"""Issue 30 §2: a Crew's function and a workflow step hand their turns to an external A2A
agent (the a2a-sdk's own server, tests/support/a2a_test_agent.py) through the `a2a`
adapter: the task completes, asks (its question is the call's, the answer goes back to the
same task), fails, hangs past the adapter's timeout (cancelled at the agent), and is
cancelled with the run. The agent's headers come from Secrets Manager, never stored."""

from __future__ import annotations

import contextlib
import copy
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import boto3
import pytest
from a2a.helpers.proto_helpers import get_data_parts

from agentworks import runtime
from tests.integration.crew_support import wait_for
from tests.integration.workflow_support import define, start, step_of, wait_run, wait_step
from tests.support.a2a_test_agent import A2aTestAgent
from tests.support.handlers import LambdaContext, load_handler

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
            {
                "name": "later",
                "input_schema": TEXT,
                "output_schema": {"type": "object", "properties": {"summary": {}}},
            },
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


def tick() -> dict[str, int]:
    return dict(load_handler("tick").handler({"source": "aws.events"}, LambdaContext()))


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


# -- a task that outlasts its turn: the call or step waits on a token, the tick follows --


def _waits(stack: Any) -> list[dict[str, Any]]:
    """The waits on external tasks in the work table (what the AwaitTask state wrote)."""
    from agentworks.dynamo import from_item

    found = stack.client.scan(
        TableName=stack.settings.work_table,
        FilterExpression="begins_with(pk, :p)",
        ExpressionAttributeValues={":p": {"S": "EXTWAITS#"}},
    )["Items"]
    return [json.loads(from_item(item)["record"]) for item in found]


def _wait_for_a_wait(stack: Any, timeout: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while not (waits := _waits(stack)):
        assert time.monotonic() < deadline, "the turn never handed its task to the tick"
        time.sleep(0.05)
    [wait] = waits
    return wait


def _history(stack: Any, call_id: str) -> list[dict[str, Any]]:
    machine = stack.settings.function_call_state_machine_arn
    arn = f"{machine.replace(':stateMachine:', ':execution:', 1)}:{call_id}"
    sfn = boto3.client("stepfunctions", region_name="us-east-1")
    return list(sfn.get_execution_history(executionArn=arn, maxResults=1000)["events"])


def test_a_task_that_outlasts_the_turn_waits_on_a_token_while_the_tick_reads_it(
    api, stack, partner, clock
) -> None:
    admin = stack.admin_token
    call_id = _call(api, admin, "later")
    wait = _wait_for_a_wait(stack)
    assert wait["owner"] == f"call:{call_id}" and wait["pause_s"] == 15
    assert wait["deadline_ms"] == wait["due_ms"] - 15_000 + 30 * 1000  # timeout_seconds: 30
    waiting = api("GET", f"/v1/calls/{call_id}", admin).body
    assert waiting["state"] == "running"
    assert any("waiting for it to end" in line for line in waiting["progress"])
    events = len(_history(stack, call_id))

    assert tick()["external_tasks_read"] == 0  # not due yet: read 15 s after the turn
    clock.advance(15)
    report = tick()
    assert (report["external_tasks_read"], report["external_waits_resumed"]) == (1, 0)
    [again] = _waits(stack)
    assert (again["due_ms"], again["pause_s"]) == (wait["due_ms"] + 15_000, 30)  # doubled
    assert len(_history(stack, call_id)) == events  # waiting entered no state, ran nothing

    partner.release.set()
    clock.advance(15)
    assert tick()["external_waits_resumed"] == 1
    done = wait_for(api, admin, call_id, ENDED)
    assert done["state"] == "succeeded", done
    assert done["result"] == {"summary": "later"}
    assert _waits(stack) == []
    assert len(partner.messages) == 1  # the next turn read the task; it sent nothing again
    assert partner.unauthorized == 0  # the tick's reads carried the secret's header too


def test_a_waiting_calls_cancel_cancels_its_task_at_the_agent(api, stack, partner, clock) -> None:
    admin = stack.admin_token
    call_id = _call(api, admin, "slow")
    _wait_for_a_wait(stack)
    services = runtime.services()  # what MCP's tasks/cancel and A2A's CancelTask call
    services.crews.calls.cancel(services.identity.authenticate(admin), call_id)
    assert wait_for(api, admin, call_id, ENDED)["state"] == "cancelled"
    clock.advance(15)
    assert tick()["external_tasks_cancelled"] == 1
    assert partner.wait_cancelled() and _waits(stack) == []


def test_a_waiting_task_past_its_time_is_cancelled_and_fails_the_call(
    api, stack, partner, clock
) -> None:
    admin = stack.admin_token
    call_id = _call(api, admin, "slow")
    _wait_for_a_wait(stack)
    clock.advance(31)  # past timeout_seconds: the tick wakes the call without reading
    report = tick()
    assert (report["external_tasks_read"], report["external_waits_resumed"]) == (0, 1)
    done = wait_for(api, admin, call_id, ENDED)
    assert done["state"] == "failed", done
    assert any("did not finish within 30 s; it was cancelled" in e for e in done["errors"])
    assert partner.wait_cancelled() and _waits(stack) == []


def test_a_workflow_step_waits_for_its_task_and_carries_its_question_over(
    api, stack, a2a_agent, clock
) -> None:
    _store_headers(api, stack, a2a_agent)
    admin = stack.admin_token
    profile = {"name": "partner", "type": "a2a", "card_url": a2a_agent.card_url,
               "auth_secret": "partner"}  # fmt: skip
    define(api, admin, profile)
    # The second step asks; its policy escalates the question to a person (resolve).
    ask = {"label": "ask", "adapter": "partner", "prompt": "confirm please", "policy": "escalate"}
    flow = {
        "workflowId": "handoff",
        "stages": [
            {"steps": [{"label": "later", "adapter": "partner", "prompt": "later please"}]},
            {"steps": [ask]},
        ],
    }
    run_id = start(api, admin, flow)
    wait = _wait_for_a_wait(stack)
    assert wait["owner"].startswith(f"step:{run_id}:")
    a2a_agent.release.set()
    clock.advance(15)
    assert tick()["external_waits_resumed"] == 1
    wait_step(api, admin, run_id, "ask", {"waiting"})
    assert step_of(api("GET", f"/v1/workflows/{run_id}", admin).body, "later")["output"] == (
        "Done later"
    )
    answer = {"step": "ask", "answer": "staging"}
    assert api("POST", f"/v1/workflows/{run_id}/resolve", admin, answer).status == 200
    run = wait_run(api, admin, run_id)
    assert run["status"] == "succeeded", run
    _later, asked, answered = a2a_agent.messages
    assert answered.task_id == asked.task_id and answered.parts[0].text == "staging"


@contextlib.contextmanager
def _platform_url(api: Any) -> Iterator[str]:
    """The HTTP API as an external agent reaches it: a server on 127.0.0.1 handing each
    request to the function template.yaml routes it to."""

    class Forward(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            reply = api(
                "POST",
                self.path,
                raw_body=body.decode(),
                headers=[(k.lower(), v) for k, v in self.headers.items()],
            )
            forwarded.append((self.path, reply.status))
            self.send_response(reply.status)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    forwarded: list[tuple[str, int]] = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Forward)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


def test_the_agents_push_notification_resumes_the_waiting_call_without_the_tick(
    api, stack, partner, monkeypatch
) -> None:
    from agentworks.platform_url import PlatformUrl

    admin = stack.admin_token
    with _platform_url(api) as url:
        monkeypatch.setattr(PlatformUrl, "__call__", lambda self: url)
        call_id = _call(api, admin, "later")
        wait = _wait_for_a_wait(stack)
        deadline = time.monotonic() + 30  # the wait is stored, then the agent asked
        while not partner.registered:
            assert time.monotonic() < deadline, "no push notification config was registered"
            time.sleep(0.05)
        [config] = partner.registered
        assert config.task_id == wait["task_id"]
        assert config.url == f"{url}/a2a-callbacks/{wait['account_id']}/call%3A{call_id}"
        assert config.token == wait["watch_token"]
        partner.release.set()  # the agent's next change of the task calls the platform back
        done = wait_for(api, admin, call_id, ENDED)
    assert done["state"] == "succeeded" and done["result"] == {"summary": "later"}
    assert _waits(stack) == []  # settled by the notice: no tick ran in this test


def test_a_notice_without_the_waits_token_looks_like_no_wait_and_changes_nothing(
    api, stack, partner
) -> None:
    call_id = _call(api, stack.admin_token, "later")
    wait = _wait_for_a_wait(stack)
    path = f"/a2a-callbacks/{wait['account_id']}/call%3A{call_id}"
    notice = json.dumps({"task": {"id": wait["task_id"]}})
    wrong = api("POST", path, raw_body=notice,
                headers=[("x-a2a-notification-token", "not-the-token")])  # fmt: skip
    unknown = api("POST", path.replace(call_id, "call_nobody"), raw_body=notice,
                  headers=[("x-a2a-notification-token", wait["watch_token"])])  # fmt: skip
    tokenless = api("POST", path, raw_body=notice)
    assert wrong.status == unknown.status == tokenless.status == 404
    assert wrong.body == unknown.body == tokenless.body
    assert _waits(stack) == [wait]  # nothing read, moved or resumed
    assert api("GET", f"/v1/calls/{call_id}", stack.admin_token).body["state"] == "running"
