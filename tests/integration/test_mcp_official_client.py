"""The official MCP Python client against the MCP function's handler, in process.

An httpx2 transport plays API Gateway: it wraps the request in an HTTP API v2 event and
calls the handler, which authenticates the bearer token itself. So the
client's own protocol choices (server/discover probe or initialize handshake) and its
output-schema validation run against the real handler (SPEC §10, A3).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

import anyio
import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.integration.test_mcp_handler import lambda_context, load_handler_module

URL = "https://abc123def4.execute-api.us-east-1.amazonaws.com/mcp"
WORKFLOW_TOOLS = [
    "workflow_start",
    "workflow_run_file",
    "workflow_status",
    "workflow_list",
    "workflow_cancel",
    "workflow_resolve",
    "workflow_retry",
]


def gateway(
    stack: Any, handler: Callable[..., dict[str, Any]], seen: list[str]
) -> httpx2.MockTransport:
    """HTTP API's proxy integration in front of `handler`; `seen` collects the JSON-RPC
    methods that reached the handler."""

    async def serve(request: httpx2.Request) -> httpx2.Response:
        headers = {k.lower(): v for k, v in request.headers.items()}
        body = await request.aread()
        if body:
            seen.append(json.loads(body).get("method", ""))
        event = {
            "version": "2.0",
            "routeKey": "ANY /mcp",
            "rawPath": request.url.path,
            "rawQueryString": request.url.query.decode(),
            "headers": headers,
            "requestContext": {
                "http": {
                    "method": request.method,
                    "path": request.url.path,
                    "protocol": "HTTP/1.1",
                    "sourceIp": "127.0.0.1",
                    "userAgent": headers.get("user-agent", ""),
                },
                "requestId": "local",
                "routeKey": "ANY /mcp",
                "stage": "$default",
            },
            "body": base64.b64encode(body).decode(),
            "isBase64Encoded": True,
        }
        # The handler runs its own event loop (as in Lambda): give it a thread.
        result = await anyio.to_thread.run_sync(handler, event, lambda_context())
        payload = result.get("body") or ""
        content = base64.b64decode(payload) if result.get("isBase64Encoded") else payload.encode()
        return httpx2.Response(result["statusCode"], headers=result.get("headers"), content=content)

    return httpx2.MockTransport(serve)


def client_for(stack: Any, token: str, mode: str, seen: list[str] | None = None) -> Client:
    http = httpx2.AsyncClient(
        transport=gateway(stack, load_handler_module().handler, [] if seen is None else seen),
        headers={"Authorization": f"Bearer {token}"},
    )
    return Client(streamable_http_client(URL, http_client=http), mode=mode)  # type: ignore[arg-type]


def issue(stack: Any, name: str) -> str:
    admin = stack.principal(stack.admin_token)
    return stack.services.identity.create_connection(admin, name).token


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_official_client_registers_sends_and_reads(stack: Any, mode: str) -> None:
    """M1, M3, M4, M6, M12 through the official client, in both protocol eras."""
    worker_token, reviewer_token = issue(stack, "worker"), issue(stack, "reviewer")
    seen: list[str] = []

    async def scenario() -> None:
        async with client_for(stack, worker_token, mode, seen) as worker:
            tools = await worker.list_tools()
            assert [t.name for t in tools.tools] == [
                "messages",
                "crews",
                "functions",
                "adapters",
                "mcp_servers",
                "relays",
                *WORKFLOW_TOOLS,
            ]
            await worker.call_tool("messages", {"action": "register", "agent_name": "worker"})
        async with client_for(stack, reviewer_token, mode) as reviewer:
            await reviewer.call_tool("messages", {"action": "register", "agent_name": "reviewer"})
        async with client_for(stack, worker_token, mode) as worker:
            sent = await worker.call_tool(
                "messages",
                {"action": "send", "agent_name": "worker", "target": "agent:reviewer",
                 "message": "ship it?", "submission_id": "sub-1"},
            )  # fmt: skip
            assert sent.is_error is False
            assert sent.structured_content is not None
            inbox_id = sent.structured_content["inbox_id"]
        async with client_for(stack, reviewer_token, mode) as reviewer:
            # The client validates structured content against the tool's output schema.
            read = await reviewer.call_tool(
                "messages", {"action": "read", "agent_name": "reviewer"}
            )
            assert read.is_error is False and read.structured_content is not None
            (message,) = read.structured_content["messages"]
            assert message["body"] == "ship it?"
            assert message["delivered_text"] in read.content[0].text  # type: ignore[union-attr]
            await reviewer.call_tool(
                "messages",
                {"action": "send", "agent_name": "reviewer",
                 "inbox_id": message["reply_address"], "message": "yes"},
            )  # fmt: skip
        async with client_for(stack, worker_token, mode) as worker:
            back = await worker.call_tool("messages", {"action": "read", "inbox_id": inbox_id})
            assert back.structured_content is not None
            assert [m["body"] for m in back.structured_content["messages"]] == ["yes"]
            refused = await worker.call_tool(
                "messages", {"action": "send", "target": "agent:ghost", "message": "hi"}
            )
            assert refused.is_error is True
            assert refused.structured_content == {
                "error": {"code": "unavailable", "message": json.loads(
                    refused.content[0].text)["error"]["message"]}  # type: ignore[union-attr]
            }  # fmt: skip

    anyio.run(scenario)
    # auto negotiates the 2026-07-28 protocol; legacy does the initialize handshake.
    assert seen[0] == ("server/discover" if mode == "auto" else "initialize")


def test_official_client_with_a_revoked_token_is_refused(stack: Any) -> None:
    """A3: the MCP function refuses a revoked token; the client sees an MCP error."""
    token = issue(stack, "short-lived")
    admin = stack.principal(stack.admin_token)
    stack.services.identity.revoke(admin, stack.principal(token).connection_id)

    async def scenario() -> None:
        async with client_for(stack, token, "legacy") as client:
            await client.list_tools()

    with pytest.raises(BaseExceptionGroup) as refused:
        anyio.run(scenario)
    assert refused.group_contains(MCPError)


def test_official_client_manages_adapter_profiles(stack: Any) -> None:
    """Issue 8: the `adapters` tool through the official client (its output schema checked
    by the client): an admin creates, reads, replaces and deletes; a plain connection sees
    the type only and may not define one."""
    reader = issue(stack, "reader")
    profile = {"name": "claude-code", "type": "scripted", "rules": [{"default": "Done."}]}

    async def scenario() -> None:
        async with client_for(stack, stack.admin_token, "auto") as admin:
            created = await admin.call_tool("adapters", {"action": "create", "definition": profile})
            assert created.is_error is False and created.structured_content is not None
            assert created.structured_content["settings"]["rules"] == [{"default": "Done."}]
            changed = {**profile, "rules": [{"default": "Again."}]}
            updated = await admin.call_tool("adapters", {"action": "update", "definition": changed})
            assert updated.structured_content is not None
            assert updated.structured_content["version"] == 2
        async with client_for(stack, reader, "auto") as plain:
            listed = await plain.call_tool("adapters", {"action": "list"})
            assert listed.structured_content is not None
            [seen] = listed.structured_content["adapters"]
            assert (seen["name"], seen["type"], seen["settings"]) == (
                "claude-code",
                "scripted",
                None,
            )
            refused = await plain.call_tool("adapters", {"action": "create", "definition": profile})
            assert refused.is_error is True and refused.structured_content is not None
            assert refused.structured_content["error"]["code"] == "forbidden"
        async with client_for(stack, stack.admin_token, "auto") as admin:
            gone = await admin.call_tool("adapters", {"action": "delete", "name": "claude-code"})
            assert gone.structured_content == {"name": "claude-code", "deleted": True}
            missing = await admin.call_tool("adapters", {"action": "get", "name": "claude-code"})
            assert missing.is_error is True and missing.structured_content is not None
            assert missing.structured_content["error"]["code"] == "unavailable"

    anyio.run(scenario)


def test_official_client_runs_a_workflow(stack: Any) -> None:
    """W4, W5, W7 through the official client (output schemas checked by the client): the
    seed's JSON as workflow_start's arguments, status until the step waits, resolve, list,
    a WORKFLOW.md run, cancel and retry; the tools' annotations say which only read."""
    import time

    profile = {
        "name": "claude-code",
        "type": "scripted",
        "rules": [
            {
                "when": "Review (\\S+)",
                "ask": "Which part of {match.1}?",
                "reply": "Looked at {answer}.",
            },
            {"default": "Done."},
        ],
    }
    stack.services.crews.adapters.create(stack.principal(stack.admin_token), profile)
    seed = {
        "workflowId": "review-then-fix",
        "stages": [
            {"label": "review", "steps": [{"label": "review-auth", "adapter": "claude-code",
                                           "policy": "escalate",
                                           "prompt": "Review auth.ts for bugs."}]},
            {"label": "fix", "steps": [{"label": "fix-auth", "sessionRef": "review-auth",
                                        "prompt": "Now fix what you found."}]},
        ],
    }  # fmt: skip

    async def until(client: Any, run_id: str, done: Callable[[dict[str, Any]], bool]) -> Any:
        deadline = time.monotonic() + 30
        while True:
            status = await client.call_tool("workflow_status", {"runId": run_id})
            assert status.is_error is False, status
            if done(status.structured_content):
                return status.structured_content
            assert time.monotonic() < deadline, status.structured_content
            await anyio.sleep(0.05)

    def first_step(run: dict[str, Any]) -> dict[str, Any]:
        return dict(run["stages"][0]["steps"][0])

    async def scenario() -> None:
        async with client_for(stack, stack.admin_token, "auto") as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert tools["workflow_status"].annotations.read_only_hint is True
            assert tools["workflow_cancel"].annotations.destructive_hint is True
            assert "workflowId" in tools["workflow_start"].input_schema["properties"]
            started = await client.call_tool("workflow_start", seed)
            assert started.is_error is False, started
            run_id = started.structured_content["runId"]
            waiting = await until(client, run_id, lambda r: first_step(r)["status"] == "waiting")
            assert first_step(waiting)["question"] == "Which part of auth.ts?"
            answer = {"runId": run_id, "step": "review-auth", "answer": "the token check"}
            assert (await client.call_tool("workflow_resolve", answer)).is_error is False
            ended = await until(client, run_id, lambda r: r["status"] == "succeeded")
            assert first_step(ended)["output"] == "Looked at the token check."
            listed = await client.call_tool("workflow_list", {})
            assert [r["runId"] for r in listed.structured_content["runs"]] == [run_id]

            text = "---\nworkflowId: filed\n---\n## only\n### ask\n```yaml\n"
            text += "adapter: claude-code\npolicy: escalate\n```\nReview db.ts\n"
            filed = await client.call_tool("workflow_run_file", {"content": text})
            assert filed.is_error is False, filed
            filed_id = filed.structured_content["runId"]
            await until(client, filed_id, lambda r: first_step(r)["status"] == "waiting")
            cancelled = await client.call_tool("workflow_cancel", {"runId": filed_id})
            assert cancelled.structured_content["status"] == "cancelled"
            retried = await client.call_tool("workflow_retry", {"runId": filed_id})
            assert retried.structured_content["retryOf"] == filed_id
            again = retried.structured_content["runId"]
            await until(client, again, lambda r: first_step(r)["status"] == "waiting")
            await client.call_tool("workflow_cancel", {"runId": again})
            unknown = await client.call_tool("workflow_status", {"runId": "wfrun_nope"})
            assert unknown.is_error is True
            assert unknown.structured_content["error"]["code"] == "unavailable"

    anyio.run(scenario)
