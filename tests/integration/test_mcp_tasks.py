"""Function calls as MCP tasks (issue 30 §3), through the official client declaring the
`io.modelcontextprotocol/tasks` extension (tests.support.mcp_tasks_client) behind the
in-process API Gateway, against the MCP function's handler and calls really executing on
Step Functions (moto): a call returns a task, tasks/get follows it to the call's outcome,
its question is answered through tasks/update, tasks/cancel cancels the call, and another
account's (or connection's) task is refused with the bytes of an unknown one.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

import anyio
import boto3
import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import ElicitRequestParams, ElicitResult

from agentworks import limits
from tests.integration.crew_support import CONTRACTS, admit_call_record
from tests.integration.test_mcp_handler import load_handler_module
from tests.integration.test_mcp_official_client import URL, gateway
from tests.support.mcp_tasks_client import (
    CreateTaskResult,
    DetailedTask,
    TasksClient,
    cancel_task,
    follow,
    get_task,
    update_task,
)

MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
INVALID_PARAMS = -32602


class Recorded:
    """The raw response bodies of the JSON-RPC methods the client sent, in order."""

    def __init__(self) -> None:
        self.bodies: list[tuple[str, bytes]] = []


def recording(stack: Any, recorded: Recorded) -> httpx2.MockTransport:
    inner = gateway(stack, load_handler_module().handler, [])

    async def serve(request: httpx2.Request) -> httpx2.Response:
        sent = await request.aread()
        response = await inner.handle_async_request(request)
        body = await response.aread()
        method = json.loads(sent).get("method", "") if sent else ""
        recorded.bodies.append((method, body))
        return httpx2.Response(response.status_code, headers=response.headers, content=body)

    return httpx2.MockTransport(serve)


def client(
    stack: Any,
    token: str,
    *,
    tasks: bool = True,
    answers: list[str] | None = None,
    recorded: Recorded | None = None,
    mode: str = "auto",
) -> Client:
    """The official client as `token`; with the tasks extension unless `tasks=False`;
    `answers` are what its user types into elicitation forms (asked messages are kept)."""
    http = httpx2.AsyncClient(
        transport=recording(stack, recorded or Recorded()),
        headers={"Authorization": f"Bearer {token}"},
    )
    asked: list[str] = []

    async def elicit(_context: Any, params: ElicitRequestParams) -> ElicitResult:
        asked.append(params.message)
        assert answers, "asked more questions than the test answers"
        return ElicitResult(action="accept", content={"answer": answers.pop(0)})

    made = Client(
        streamable_http_client(URL, http_client=http),
        mode=mode,  # type: ignore[arg-type]
        extensions=[TasksClient()] if tasks else None,
        elicitation_callback=elicit if answers is not None else None,
    )
    made.asked = asked  # type: ignore[attr-defined]
    return made


def issue(stack: Any, name: str) -> str:
    admin = stack.principal(stack.admin_token)
    return stack.services.identity.create_connection(admin, name).token


@pytest.fixture
def contracts(stack: Any, api: Any) -> None:
    assert api("POST", "/v1/crews", stack.admin_token, CONTRACTS).status == 201


def execution_status(stack: Any, call_id: str, timeout: float = 30) -> str | None:
    """The call's Step Functions execution status, once it is no longer RUNNING."""
    from agentworks.crews.execution import Executions

    executions = Executions(
        stack.settings.function_call_state_machine_arn,
        boto3.client("stepfunctions", region_name="us-east-1"),
    )
    deadline = time.monotonic() + timeout
    while (status := executions.status_of_call(call_id)) == "RUNNING":
        assert time.monotonic() < deadline, status
        time.sleep(0.05)
    return status


def call_arguments(function: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"action": "call", "target": "crew:contracts", "function": function, "args": args}


async def start_task(session: Any, function: str, args: dict[str, Any]) -> CreateTaskResult:
    created = await session.call_tool(
        "functions", call_arguments(function, args), allow_claimed=True
    )
    assert isinstance(created, CreateTaskResult), created
    return created


async def until(session: Any, task_id: str, status: str, timeout: float = 30) -> DetailedTask:
    deadline = time.monotonic() + timeout
    while True:
        task = await get_task(session, task_id)
        if task.status == status:
            return task
        assert time.monotonic() < deadline, task
        await anyio.sleep(0.05)


def test_a_call_returns_a_task_and_tasks_get_follows_it(
    stack: Any, api: Any, contracts: None
) -> None:
    """taskId = call_id; tasks/get ends `completed` with the tool result action=status
    gives at the end, read from the same record GET /v1/calls/{id} reads."""
    token = issue(stack, "tasker")

    async def scenario() -> tuple[CreateTaskResult, DetailedTask, Any]:
        async with client(stack, token) as tasker:
            created = await start_task(tasker.session, "summarize", {"text": "hello"})
            done = await follow(tasker.session, created.task_id)
            # A host that lets the client resolve the task transparently gets the result.
            resolved = await tasker.call_tool(
                "functions", call_arguments("summarize", {"text": "again"})
            )
            return created, done, resolved

    created, done, resolved = anyio.run(scenario)
    assert created.status == "working" and created.ttl_ms is None
    assert created.poll_interval_ms == limits.MCP_TASK_POLL_INTERVAL_MS
    over_http = api("GET", f"/v1/calls/{created.task_id}", token)
    assert over_http.status == 200 and over_http.body["state"] == "succeeded"
    assert done.status == "completed" and done.result is not None
    assert done.result["isError"] is False
    assert done.result["structuredContent"] == over_http.body
    assert done.result["structuredContent"]["result"] == {"summary": "hello"}
    assert done.last_updated_at == over_http.body["updated_at"]
    assert resolved.is_error is False and resolved.structured_content["result"] == {
        "summary": "again"
    }


@pytest.mark.parametrize(
    ("state", "status", "is_error"),
    [("accepted", "working", None), ("failed", "completed", True),
     ("interrupted", "completed", True)],
)  # fmt: skip
def test_a_calls_state_is_its_tasks_status(
    stack: Any, api: Any, contracts: None, state: str, status: str, is_error: bool | None
) -> None:
    """The extension's statuses: a call that failed or was interrupted ran to its end
    without a protocol error, so its task is `completed` with an isError result."""
    token = issue(stack, "reader")
    call_id = admit_call_record(stack, token, state)

    async def scenario() -> DetailedTask:
        async with client(stack, token) as reader:
            return await get_task(reader.session, call_id)

    task = anyio.run(scenario)
    assert task.task_id == call_id and task.status == status
    if is_error is None:
        assert task.result is None
    else:
        assert task.result is not None and task.result["isError"] is is_error
        assert task.result["structuredContent"] == api("GET", f"/v1/calls/{call_id}", token).body


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_clients_without_the_extension_keep_todays_behaviour(
    stack: Any, contracts: None, mode: str
) -> None:
    """No declaration, no task: action=call answers with the call's status as before, and
    tasks/* are refused with -32021 (missing required client capability)."""
    token = issue(stack, "plain")

    async def scenario() -> tuple[Any, MCPError | None]:
        async with client(stack, token, tasks=False, mode=mode) as plain:
            accepted = await plain.call_tool(
                "functions", call_arguments("summarize", {"text": "x"})
            )
            refused = None
            if mode == "auto":
                with pytest.raises(MCPError) as caught:
                    await get_task(plain.session, accepted.structured_content["call_id"])
                refused = caught.value
            return accepted, refused

    accepted, refused = anyio.run(scenario)
    assert accepted.is_error is False and accepted.structured_content["call_id"].startswith("call")
    assert accepted.structured_content["state"] in {"accepted", "running", "succeeded"}
    if refused is not None:
        assert refused.code == MISSING_REQUIRED_CLIENT_CAPABILITY


def test_a_tasks_question_is_answered_through_elicitation(
    stack: Any, api: Any, contracts: None
) -> None:
    """F7 on a task: input_required with the question in inputRequests (keyed by the call's
    request_id), put to the client's user, answered with tasks/update; the call succeeds
    with the answer. A key that is not outstanding is ignored."""
    token = issue(stack, "asked")

    async def scenario() -> tuple[str, DetailedTask, dict[str, Any], DetailedTask, list[str]]:
        async with client(stack, token, answers=["ship it"]) as asked:
            created = await start_task(asked.session, "confirm", {"action": "deploy"})
            waiting = await until(asked.session, created.task_id, "input_required")
            over_http = api("GET", f"/v1/calls/{created.task_id}", token).body
            await update_task(
                asked.session,
                created.task_id,
                {"req_never_asked": {"action": "accept", "content": {"answer": "no"}}},
            )
            ignored = await get_task(asked.session, created.task_id)
            assert ignored.status == "input_required", ignored
            done = await follow(asked.session, created.task_id)
            return created.task_id, waiting, over_http, done, asked.asked  # type: ignore[attr-defined]

    task_id, waiting, over_http, done, questions = anyio.run(scenario)
    [pending] = over_http["pending_inputs"]
    assert waiting.input_requests is not None
    [(key, request)] = waiting.input_requests.items()
    assert key == pending["request_id"]
    assert request["method"] == "elicitation/create"
    assert request["params"]["requestedSchema"]["required"] == ["answer"]
    assert "Proceed with deploy?" in request["params"]["message"]
    assert "Proceed with deploy?" in (waiting.status_message or "")
    [message] = questions
    assert "Proceed with deploy?" in message and "crew:contracts" in message
    assert done.status == "completed" and done.result is not None
    assert done.result["structuredContent"]["result"] == {"confirmed": "ship it"}
    assert api("GET", f"/v1/calls/{task_id}", token).body["state"] == "succeeded"


def test_tasks_cancel_cancels_the_call(stack: Any, api: Any, contracts: None) -> None:
    """tasks/cancel is the call's cancel: the call ends `cancelled` (over HTTP too), its
    Crew slot is given back, its question can no longer be answered; a second cancel is
    acknowledged."""
    token = issue(stack, "canceller")

    async def scenario() -> tuple[str, DetailedTask, DetailedTask]:
        async with client(stack, token) as canceller:
            created = await start_task(canceller.session, "confirm", {"action": "drop"})
            waiting = await until(canceller.session, created.task_id, "input_required")
            assert api("GET", "/v1/crews/contracts", stack.admin_token).body["running"] == 1
            await cancel_task(canceller.session, created.task_id)
            cancelled = await get_task(canceller.session, created.task_id)
            [key] = waiting.input_requests or {}
            late = {key: {"action": "accept", "content": {"answer": "too late"}}}
            await update_task(canceller.session, created.task_id, late)
            await cancel_task(canceller.session, created.task_id)
            return created.task_id, cancelled, await get_task(canceller.session, created.task_id)

    task_id, cancelled, after = anyio.run(scenario)
    assert cancelled.status == "cancelled" and after.status == "cancelled"
    status = api("GET", f"/v1/calls/{task_id}", token).body
    assert status["state"] == "cancelled" and status["terminal"] is True
    assert status["pending_inputs"] == [] and "cancelled by the caller" in status["errors"]
    crew = api("GET", "/v1/crews/contracts", stack.admin_token).body
    assert crew["running"] == 0
    assert execution_status(stack, task_id) == "ABORTED"  # the execution was stopped


def test_another_accounts_task_looks_exactly_like_an_unknown_one(
    stack: Any, contracts: None
) -> None:
    """A5 on every tasks method: another account's task and another connection's (same
    account, not an admin) are refused with the bytes an unknown taskId gets (the JSON-RPC
    id aside), and nothing happens to the owner's call."""
    owner = issue(stack, "owner")
    neighbour = issue(stack, "neighbour")
    intruder = stack.services.identity.bootstrap("intruder").token
    unknown = "call_01KB0000000000000000000000"

    async def scenario() -> tuple[str, dict[str, list[bytes]], DetailedTask]:
        async with client(stack, owner) as own:
            created = await start_task(own.session, "confirm", {"action": "keep"})
            await until(own.session, created.task_id, "input_required")
        refusals: dict[str, list[bytes]] = {}
        for name, token in (("intruder", intruder), ("neighbour", neighbour)):
            recorded = Recorded()
            async with client(stack, token, recorded=recorded) as other:
                for task_id in (created.task_id, unknown):
                    for send in (get_task, cancel_task):
                        with pytest.raises(MCPError) as refused:
                            await send(other.session, task_id)
                        assert refused.value.code == INVALID_PARAMS
                    answer = {"req": {"action": "accept", "content": {"answer": "x"}}}
                    with pytest.raises(MCPError):
                        await update_task(other.session, task_id, answer)
            refusals[name] = [
                re.sub(rb'"id":\s*\d+', b'"id":0', body)
                for method, body in recorded.bodies
                if method.startswith("tasks/")
            ]
        async with client(stack, owner) as own:
            still = await get_task(own.session, created.task_id)
            longest = "call_" + "0" * (limits.MCP_TASK_ID_MAX_CHARS - 5)
            with pytest.raises(MCPError) as at_the_bound:  # looked up: nothing there
                await get_task(own.session, longest)
            assert at_the_bound.value.data["error"]["code"] == "unavailable"
            with pytest.raises(MCPError) as too_long:  # refused before any read
                await get_task(own.session, longest + "0")
            assert too_long.value.data["error"]["code"] == "invalid_request"
        return created.task_id, refusals, still

    _task_id, refusals, still = anyio.run(scenario)
    for bodies in refusals.values():
        assert len(bodies) == 6
        assert bodies[:3] == bodies[3:], bodies  # the owner's id answers as an unknown one
    assert refusals["intruder"] == refusals["neighbour"]
    error = json.loads(refusals["intruder"][0])["error"]
    assert error["data"] == {"error": {"code": "unavailable", "message": error["message"]}}
    assert still.status == "input_required"
