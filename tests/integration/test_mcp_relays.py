"""The `relays` MCP tool through the official MCP client (R1–R3 over MCP, SPEC §10).

The client talks to the MCP function's handler through the in-process gateway of
test_mcp_official_client, so its output-schema validation runs against every answer. Runs
really execute: Step Functions (moto) starts the relay code in a process of its own, which
calls the API back on a real port (`relay_api`).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
from mcp.client import Client

from tests.integration.relay_support import relay_api
from tests.integration.test_mcp_official_client import client_for, issue

__all__ = ["relay_api"]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "relays" / "summarize"
UNKNOWN = {
    "error": {"code": "unavailable", "message": "Not found or not available to this connection."}
}


def example_files() -> dict[str, str]:
    return {p.name: p.read_text() for p in EXAMPLE.iterdir() if p.is_file()}


async def ok(client: Client, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool("relays", arguments)
    assert result.is_error is False, result
    assert result.structured_content is not None
    return result.structured_content


async def error(client: Client, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool("relays", arguments)
    assert result.is_error is True, result
    assert result.structured_content is not None
    return result.structured_content


async def until_terminal(client: Client, run_id: str, timeout: float = 60) -> dict[str, Any]:
    """Polls action=status, as the tool description tells agents to."""
    deadline = time.monotonic() + timeout
    while True:
        status = await ok(client, action="status", run_id=run_id)
        if status["terminal"]:
            return status
        assert time.monotonic() < deadline, status
        await anyio.sleep(0.05)


def test_relays_tool_publishes_lists_runs_and_replays_a_key(stack: Any, relay_api: str) -> None:
    caller = issue(stack, "relay-caller")
    run = {
        "action": "run",
        "relay": "summarize",
        "function": "summarize",
        "input": {"texts": ["One. Two."]},
        "idempotency_key": "mcp-first",
    }

    async def scenario() -> None:
        async with client_for(stack, stack.admin_token, "auto") as admin:
            tools = {t.name: t for t in (await admin.list_tools()).tools}
            schema = tools["relays"].input_schema
            assert set(schema["properties"]["action"]["enum"]) == {
                "publish", "releases", "run", "status", "retry",
            }  # fmt: skip
            assert schema["required"] == ["action"]

            release = await ok(admin, action="publish", files=example_files())
            assert (release["relay"], release["version"]) == ("summarize", 1)
            assert (release["active"], release["created"]) == (True, True)
            again = await ok(admin, action="publish", files=example_files())
            assert (again["version"], again["created"]) == (1, False)

        async with client_for(stack, caller, "auto") as client:
            listed = await ok(client, action="releases", relay="summarize")
            assert listed["active_version"] == 1
            [only] = listed["releases"]
            assert [f["name"] for f in only["functions"]] == ["summarize"]
            relays = await ok(client, action="releases")
            assert [r["relay"] for r in relays["relays"]] == ["summarize"]

            started = await ok(client, **run)
            assert (started["relay"], started["version"]) == ("summarize", 1)
            assert started["replayed"] is False
            done = await until_terminal(client, started["run_id"])
            assert done["status"] == "succeeded", done
            assert done["result"] == {"summaries": [{"summary": "One", "words": 2}]}

            replayed = await client.call_tool("relays", run)
            assert replayed.is_error is False and replayed.structured_content is not None
            assert replayed.structured_content["run_id"] == started["run_id"]
            assert replayed.structured_content["replayed"] is True
            assert replayed.structured_content["result"] == done["result"]
            assert "replayed=true" in replayed.content[0].text  # type: ignore[union-attr]

            # Another input under the same key is a conflict, in the product's error shape.
            other = await error(client, **{**run, "input": {"texts": ["Else."]}})
            assert other["error"]["code"] == "conflict"
            # Nothing to retry in a run that succeeded.
            retried = await error(client, action="retry", run_id=started["run_id"])
            assert retried["error"]["code"] == "conflict"

    anyio.run(scenario)


def test_relays_tool_refuses_in_the_shapes_the_other_tools_use(stack: Any) -> None:
    caller = issue(stack, "relay-caller")

    async def scenario() -> None:
        async with client_for(stack, stack.admin_token, "auto") as admin:
            await ok(admin, action="publish", files=example_files())
        async with client_for(stack, caller, "auto") as client:
            # An unknown Relay reads like an unknown run id, and like another tool's unknown id.
            unknown_call = await client.call_tool(
                "functions", {"action": "status", "call_id": "call_01ARZ3NDEKTSV4RRFFQ69G5FAV"}
            )
            assert unknown_call.structured_content == UNKNOWN
            assert await error(client, action="releases", relay="nope") == UNKNOWN
            assert await error(client, action="status", run_id="rrun_nope") == UNKNOWN
            missing = {"function": "summarize", "input": {"texts": []}, "idempotency_key": "k"}
            assert await error(client, action="run", relay="nope", **missing) == UNKNOWN

            bad = await error(
                client,
                action="run",
                relay="summarize",
                function="summarize",
                input={"texts": "not a list"},
                idempotency_key="k",
            )
            assert (bad["error"]["code"], bad["error"]["path"]) == (
                "invalid_arguments",
                "input.texts",
            )
            needs = await error(client, action="run", relay="summarize", function="summarize")
            assert needs["error"]["code"] == "invalid_request"
            assert "idempotency_key" in needs["error"]["message"]
            stray = await error(client, action="status", run_id="rrun_x", files={"a": "b"})
            assert stray["error"]["code"] == "invalid_request"
            # Publishing is an administrator's call.
            refused = await error(client, action="publish", files=example_files())
            assert refused["error"]["code"] == "forbidden"

    anyio.run(scenario)
