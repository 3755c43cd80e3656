"""The official MCP Python client against the local stack's `/mcp` over HTTP (SPEC §10).

Two connections of the bootstrap account register a name each and message each other
through the `messages` tool (M1, M3, M4, M6, M12); the gateway's bearer auth guards the
endpoint (A3).
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import anyio
import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.e2e.conftest import LocalStack, http

pytestmark = pytest.mark.e2e


@pytest.fixture(autouse=True)
def _no_proxy_for_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    # The client's httpx2 honours proxy variables; loopback must never go through one.
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


def admin_token(local_stack: LocalStack) -> str:
    config = json.loads(local_stack.admin_config.read_text())
    assert config["url"].rstrip("/") == local_stack.url.rstrip("/")
    return str(config["token"])


def new_connection(local_stack: LocalStack, name: str) -> str:
    status, body, _ = http(
        "POST",
        f"{local_stack.url}/v1/connections",
        token=admin_token(local_stack),
        body={"name": name, "scopes": ["messages:read", "messages:send"]},
    )
    assert status == 201, body
    return str(body["token"])


def mcp_client(local_stack: LocalStack, token: str | None, mode: str = "auto") -> Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    transport = streamable_http_client(
        f"{local_stack.url}/mcp", http_client=create_mcp_http_client(headers=headers)
    )
    return Client(transport, mode=mode)  # type: ignore[arg-type]


async def call(client: Client, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool("messages", arguments)
    assert result.is_error is False, result.content
    assert result.structured_content is not None
    return result.structured_content


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_two_agents_message_each_other_over_mcp(local_stack: LocalStack, mode: str) -> None:
    """M1/M3/M4/M6/M12 with the official client (auto = 2026-07-28, legacy = handshake)."""
    suffix = uuid.uuid4().hex[:8]
    alice, bob = f"alice-{suffix}", f"bob-{suffix}"
    alice_token = new_connection(local_stack, alice)
    bob_token = new_connection(local_stack, bob)

    async def scenario() -> None:
        async with mcp_client(local_stack, alice_token, mode) as client:
            tools = await client.list_tools()
            (tool,) = [t for t in tools.tools if t.name == "messages"]
            assert "list_agents" in tool.input_schema["properties"]["action"]["enum"]
            assert tool.annotations is not None and tool.annotations.read_only_hint is False
            await call(client, action="register", agent_name=alice, purpose="writes code")
        async with mcp_client(local_stack, bob_token, mode) as client:
            await call(client, action="register", agent_name=bob, purpose="reviews code")
            names = {a["agent_name"] for a in (await call(client, action="list_agents"))["agents"]}
            assert {alice, bob} <= names

        async with mcp_client(local_stack, alice_token, mode) as client:
            sent = await call(
                client,
                action="send",
                agent_name=alice,
                target=f"agent:{bob}",
                message="Could you review PR 42?",
                submission_id=f"sub-{suffix}",
            )
            assert sent["receipt"] == "stored"

        async with mcp_client(local_stack, bob_token, mode) as client:
            result = await client.call_tool(
                "messages", {"action": "read", "agent_name": bob, "wait_seconds": 0}
            )
            assert result.structured_content is not None
            (message,) = result.structured_content["messages"]
            assert message["body"] == "Could you review PR 42?"
            assert message["sender"] == f"agent:{alice}"
            # M12: the text content carries the framed, attributed delivery.
            assert message["delivered_text"] in result.content[0].text  # type: ignore[union-attr]
            await call(
                client,
                action="send",
                agent_name=bob,
                inbox_id=message["reply_address"],
                message="Approved.",
            )
            await call(client, action="ack", message_id=message["message_id"], delivery="processed")

        async with mcp_client(local_stack, alice_token, mode) as client:
            page = await call(client, action="read", agent_name=alice, inbox_id=sent["inbox_id"])
            assert [m["body"] for m in page["messages"]] == ["Approved."]
            state = await call(client, action="state", inbox_id=sent["inbox_id"])
            assert state["delivery_records"][0]["receipt"] == "processed"
            await call(client, action="unregister", agent_name=alice)
        async with mcp_client(local_stack, bob_token, mode) as client:
            await call(client, action="unregister", agent_name=bob)

    anyio.run(scenario)


def test_mcp_without_a_token_is_refused(local_stack: LocalStack) -> None:
    """A3: the MCP function answers 401 with a JSON-RPC error holding the API's error shape."""
    status, body, _ = http(
        "POST",
        f"{local_stack.url}/mcp",
        body={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
    )
    assert status == 401 and body["id"] == 1
    assert body["error"]["data"]["error"]["code"] == "unauthenticated"

    async def scenario() -> None:
        async with mcp_client(local_stack, None) as client:
            await client.list_tools()

    with pytest.raises(BaseExceptionGroup) as refused:
        anyio.run(scenario)
    assert refused.group_contains(MCPError)


def test_sse_get_after_initialize_is_405_not_a_stream_that_never_closes(
    local_stack: LocalStack,
) -> None:
    """SPEC §10 (stateless JSON mode): the GET the TypeScript SDK sends after initialize, to
    open its standalone SSE stream, gets 405 with `Allow: POST` at once over the gateway."""
    token = admin_token(local_stack)
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"}
    with httpx2.Client(timeout=10.0, trust_env=False) as http_client:
        initialized = http_client.post(
            f"{local_stack.url}/mcp",
            headers={**headers, "Content-Type": "application/json"},
            json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "sdk-get-probe", "version": "1"}}},
        )  # fmt: skip
        assert initialized.status_code == 200, initialized.text
        stream = http_client.get(
            f"{local_stack.url}/mcp",
            headers={
                **headers,
                "Accept": "text/event-stream",
                "mcp-protocol-version": "2025-11-25",
            },
        )
    assert stream.status_code == 405 and stream.headers["allow"] == "POST"
    assert stream.headers["content-type"].startswith("application/json")
    assert stream.json()["error"]["code"] == -32600
