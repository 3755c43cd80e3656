"""The official MCP Python client against the local stack's `/mcp` over HTTP: Crews and
structured functions (F1, F2, F3, F7; SPEC §10). Calls really run on the stack's Step
Functions (moto), whose Lambda tasks run the step runner in-process."""

from __future__ import annotations

import copy
import time
import uuid
from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client
from mcp.types import ElicitRequestParams, ElicitResult

from tests.e2e.conftest import LocalStack, http
from tests.e2e.test_mcp_client import mcp_client
from tests.integration.crew_support import CONTRACTS

pytestmark = pytest.mark.e2e

TIMEOUT = 60.0


@pytest.fixture(autouse=True)
def _no_proxy_for_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    # The client's httpx2 honours proxy variables; loopback must never go through one.
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


def caller_token(local_stack: LocalStack) -> str:
    status, body, _ = http(
        "POST",
        f"{local_stack.url}/v1/connections",
        token=local_stack.admin_token,
        body={
            "name": f"caller-{uuid.uuid4().hex[:8]}",
            "scopes": ["functions:call", "functions:read"],
        },
    )
    assert status == 201, body
    return str(body["token"])


async def ok(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert result.is_error is False, result.content
    assert result.structured_content is not None
    return result.structured_content


async def create_crew(local_stack: LocalStack) -> str:
    """An admin defines a Crew like the product docs' example, through the `crews` tool."""
    name = f"contracts-{uuid.uuid4().hex[:8]}"
    definition = copy.deepcopy(CONTRACTS)
    definition["name"] = name
    async with mcp_client(local_stack, local_stack.admin_token) as admin:
        created = await ok(admin, "crews", action="create", definition=definition)
    assert created["target"] == f"crew:{name}" and created["messaging"] == "on"
    return f"crew:{name}"


async def poll(client: Client, call_id: str, until: set[str]) -> dict[str, Any]:
    """action=status until the state is one of `until` (or terminal)."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        status = await ok(client, "functions", action="status", call_id=call_id)
        if status["state"] in until or status["terminal"]:
            return status
        assert time.monotonic() < deadline, status
        await anyio.sleep(0.2)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_discover_call_and_poll_to_succeeded(local_stack: LocalStack, mode: str) -> None:
    """F2/F3 over MCP: list tools, discover the functions, call summarize, poll status to
    succeeded; the result matches the output schema."""
    token = caller_token(local_stack)

    async def scenario() -> None:
        target = await create_crew(local_stack)
        async with mcp_client(local_stack, token, mode) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert {"messages", "crews", "functions"} <= set(tools)
            assert "call_id" in tools["functions"].input_schema["properties"]
            listed = await ok(client, "functions", action="list", target=target)
            assert [f["name"] for f in listed["functions"]] == ["summarize", "confirm"]
            accepted = await ok(
                client, "functions", action="call", target=target, function="summarize",
                args={"text": "Either party may end it."}, submission_id=uuid.uuid4().hex,
            )  # fmt: skip
            assert accepted["state"] == "accepted" and accepted["terminal"] is False
            done = await poll(client, accepted["call_id"], set())
            assert done["state"] == "succeeded", done
            assert done["result"] == {"summary": "Either party may end it."}
            wrong = await client.call_tool(
                "functions",
                {"action": "call", "target": target, "function": "summarize",
                 "args": {"text": 42}},
            )  # fmt: skip
            assert wrong.is_error is True and wrong.structured_content is not None
            assert wrong.structured_content["error"]["code"] == "invalid_arguments"
            assert wrong.structured_content["error"]["path"] == "args.text"

    anyio.run(scenario)


def test_question_answered_with_reply(local_stack: LocalStack) -> None:
    """F7 (fallback): a handshake-era client sees pending_inputs while polling and answers
    with action=reply and the matching request_id."""
    token = caller_token(local_stack)

    async def scenario() -> dict[str, Any]:
        target = await create_crew(local_stack)
        async with mcp_client(local_stack, token, "legacy") as client:
            accepted = await ok(
                client, "functions", action="call", target=target, function="confirm",
                args={"action": "deploy"},
            )  # fmt: skip
            waiting = await poll(client, accepted["call_id"], {"input_required"})
            assert waiting["state"] == "input_required", waiting
            [question] = waiting["pending_inputs"]
            assert question["question"] == "Proceed with deploy?"
            replied = await ok(
                client, "functions", action="reply", call_id=accepted["call_id"],
                request_id=question["request_id"], answer="yes",
            )  # fmt: skip
            assert replied["pending_inputs"] == []
            return await poll(client, accepted["call_id"], set())

    done = anyio.run(scenario)
    assert done["state"] == "succeeded" and done["result"] == {"confirmed": "yes"}


def test_question_arrives_as_an_elicitation(local_stack: LocalStack) -> None:
    """F7: a 2026-07-28 client with elicitation is asked while it polls status; the
    answer reaches the call (sealed request state across requests) and the call succeeds."""
    token = caller_token(local_stack)
    asked: list[str] = []

    async def elicit(_context: Any, params: ElicitRequestParams) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"answer": "approved"})

    async def scenario() -> dict[str, Any]:
        target = await create_crew(local_stack)
        transport = streamable_http_client(
            f"{local_stack.url}/mcp",
            http_client=create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}),
        )
        async with Client(transport, elicitation_callback=elicit) as client:
            accepted = await ok(
                client, "functions", action="call", target=target, function="confirm",
                args={"action": "release"},
            )  # fmt: skip
            return await poll(client, accepted["call_id"], set())

    done = anyio.run(scenario)
    assert done["state"] == "succeeded" and done["result"] == {"confirmed": "approved"}
    [message] = asked
    assert "Proceed with release?" in message


def test_a_task_over_http_with_its_question_answered(local_stack: LocalStack) -> None:
    """Issue 30 §3 over the local stack's HTTP: a client declaring the tasks extension gets
    a task from action=call (taskId = call_id), and resolving it (tasks/get polls, the
    question put to its user, the answer sent with tasks/update) ends with the call's
    result, which action=status shows as well."""
    from tests.support.mcp_tasks_client import TasksClient

    token = caller_token(local_stack)
    asked: list[str] = []

    async def elicit(_context: Any, params: ElicitRequestParams) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"answer": "as a task"})

    async def scenario() -> tuple[Any, dict[str, Any]]:
        target = await create_crew(local_stack)
        transport = streamable_http_client(
            f"{local_stack.url}/mcp",
            http_client=create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}),
        )
        async with Client(
            transport, elicitation_callback=elicit, extensions=[TasksClient()]
        ) as client:
            arguments = {"action": "call", "target": target, "function": "confirm",
                         "args": {"action": "ship"}}  # fmt: skip
            resolved = await client.call_tool("functions", arguments)
            assert resolved.structured_content is not None
            call_id = resolved.structured_content["call_id"]
            return resolved, await ok(client, "functions", action="status", call_id=call_id)

    resolved, status = anyio.run(scenario)
    assert resolved.is_error is False
    assert resolved.structured_content == status
    assert status["state"] == "succeeded" and status["result"] == {"confirmed": "as a task"}
    [message] = asked
    assert "Proceed with ship?" in message
