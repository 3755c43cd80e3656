"""A real MCP server for the attached-MCP-server tests (issue 28): the official SDK's
`MCPServer` over streamable HTTP on 127.0.0.1, behind a bearer check, with a log of every
request that reached it (before the bearer check, so a refused one is logged too).

Tools: `echo` (the text back), `slow` (waits `seconds`, or until the test releases it),
`fails` (an `isError` result) and `big` (a text of `BIG_BYTES` bytes).

It listens on loopback, which outbound URLs may reach only with the local stack's option: a
test using it asks for the `allow_loopback_webhooks` fixture too (tests/conftest.py).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest
import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import CallToolResult, TextContent
from starlette.types import ASGIApp, Receive, Scope, Send

BIG_BYTES = 1024 * 1024
TOOL_NAMES = ("echo", "slow", "fails", "big")


@dataclass(frozen=True)
class Seen:
    """One HTTP request that reached the server."""

    method: str
    path: str
    authorization: str  # the header as sent ("" without one)
    authorized: bool
    rpc_method: str  # the JSON-RPC method ("" for none)
    tool: str  # for tools/call: the tool's name


@dataclass
class McpTestServer:
    url: str  # the MCP endpoint (…/mcp)
    token: str  # the bearer token it accepts
    redirect_url: str  # answers 307 to `url`
    requests: list[Seen] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)  # ends `slow` early
    slow_started: threading.Event = field(default_factory=threading.Event)
    slow_cancelled: threading.Event = field(default_factory=threading.Event)

    def calls(self, tool: str | None = None) -> list[Seen]:
        """The tools/call requests that reached the server (of `tool` only, if given)."""
        return [s for s in self.requests if s.rpc_method == "tools/call" and tool in (None, s.tool)]

    def wait_for_call(self, tool: str, timeout: float = 10) -> Seen:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.calls(tool)
            if found:
                return found[-1]
            time.sleep(0.01)
        raise AssertionError(f"no tools/call of {tool} in {timeout} s: {self.requests}")


def _server(state: McpTestServer) -> MCPServer:
    server = MCPServer(name="test-tools", version="1.0.0")

    @server.tool(description="Returns the text it was given.")
    def echo(text: str) -> str:
        return text

    @server.tool(description="Waits `seconds` (or until released), then says so.")
    async def slow(seconds: float = 30.0) -> str:
        state.slow_started.set()
        try:
            with anyio.move_on_after(seconds):
                while not state.release.is_set():
                    await anyio.sleep(0.01)
        except BaseException:
            state.slow_cancelled.set()
            raise
        return f"waited up to {seconds} s"

    @server.tool(description="Always fails: an isError result.")
    def fails() -> CallToolResult:
        return CallToolResult(
            content=[TextContent(type="text", text="the tool failed on purpose")], is_error=True
        )

    @server.tool(description="A text of 1 MiB.")
    def big() -> str:
        return "x" * BIG_BYTES

    return server


class _Gate:
    """Logs every request, refuses a wrong or missing bearer token with 401, answers 307
    on /redirect; the rest goes to the MCP app."""

    def __init__(self, app: ASGIApp, state: McpTestServer) -> None:
        self.app, self.state = app, state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        rpc_method, tool = "", ""
        try:
            parsed: Any = json.loads(body) if body else {}
            if isinstance(parsed, dict):
                rpc_method = str(parsed.get("method", ""))
                tool = str((parsed.get("params") or {}).get("name", ""))
        except ValueError:
            pass
        authorization = headers.get("authorization", "")
        authorized = authorization == f"Bearer {self.state.token}"
        self.state.requests.append(
            Seen(scope["method"], scope["path"], authorization, authorized, rpc_method, tool)
        )
        if scope["path"] == "/redirect":
            await _answer(send, 307, b"", [(b"location", self.state.url.encode())])
            return
        if not authorized:
            await _answer(
                send, 401, b'{"error":"invalid_token"}', [(b"www-authenticate", b"Bearer")]
            )
            return
        if scope["method"] == "GET":  # no SSE stream: it would never close
            await _answer(send, 405, b"", [(b"allow", b"POST")])
            return
        sent = False

        async def replay() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


async def _answer(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), *headers],
        }
    )
    await send({"type": "http.response.body", "body": body})


@contextmanager
def mcp_test_server(token: str = "test-mcp-bearer-7f3a9c") -> Iterator[McpTestServer]:
    """Starts the server on a free port of 127.0.0.1; stops it on exit."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    state = McpTestServer(url=f"{base}/mcp", token=token, redirect_url=f"{base}/redirect")
    app = _server(state).streamable_http_app(
        streamable_http_path="/mcp",
        stateless_http=True,
        json_response=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    config = uvicorn.Config(_Gate(app, state), log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test MCP server did not start")
        time.sleep(0.01)
    try:
        yield state
    finally:
        state.release.set()
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@pytest.fixture
def mcp_server(allow_loopback_webhooks: None) -> Iterator[McpTestServer]:
    """The test MCP server, reachable by the handlers (loopback allowed as `agentworks dev
    --allow-loopback-webhooks` allows it)."""
    with mcp_test_server() as server:
        yield server
