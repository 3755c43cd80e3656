"""The platform's HTTP API with this run's credential (standard library only).

Every call is authenticated anew: a revoked caller's run is refused at its next call
(PlatformError with status 401), whatever its code does.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import os
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any


class PlatformError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"the platform answered {status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message


class McpCallError(PlatformError):
    """A tool call of an attached MCP server that did not give a result: refused (the
    Relay's `mcp_tools` does not admit it: `not_admitted`; no such server or tool:
    `unavailable`) or failed (the server is down, slow, refused the credentials, answered
    too much, or the run ended meanwhile: `mcp_server_failed`). A tool that ran and
    reported its own error is no exception: its result has `is_error` True."""


@dataclass(frozen=True)
class McpResult:
    """A tool's result as the server gave it (MCP `CallToolResult`)."""

    is_error: bool
    content: list[dict[str, Any]] = field(default_factory=list)
    structured_content: dict[str, Any] | None = None

    @property
    def text(self) -> str:
        """The text items of `content`, joined by newlines."""
        return "\n".join(str(c.get("text", "")) for c in self.content if c.get("type") == "text")


# The durable step the code is inside (set by `step`), sent with each tool call so the
# call is recorded on it.
current_step: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "agentworks_current_step", default=None
)

# The run's credential, handed over by relay_child.py from its standard input: never in the
# environment, where another process of the same user could read it.
_run_credential = ""


def receive_credential(credential: str) -> None:
    global _run_credential
    _run_credential = credential


class Platform:
    def __init__(self, api_url: str | None = None, credential: str | None = None) -> None:
        self._url = (api_url or os.environ.get("AGENTWORKS_API_URL", "")).rstrip("/")
        self._own_credential = credential

    @property
    def _credential(self) -> str:
        return self._own_credential or _run_credential

    def request(self, method: str, path: str, body: Any = None, timeout: float = 30) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            self._url + path,
            data=data,
            method=method,
            headers={
                "Authorization": f"Bearer {self._credential}",
                "Content-Type": "application/json",
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                text = response.read()
        except urllib.error.HTTPError as error:
            raw = error.read()
            try:
                problem = json.loads(raw).get("error", {})
            except ValueError:
                problem = {}
            raise PlatformError(
                error.code,
                str(problem.get("code", "error")),
                str(problem.get("message", raw[:200])),
            ) from None
        return json.loads(text) if text else None

    # -- the two contracts: messages and functions ---------------------------------------

    def send(
        self,
        message: str,
        target: str | None = None,
        inbox_id: str | None = None,
        agent_name: str | None = None,
        submission_id: str | None = None,
    ) -> dict[str, Any]:
        body = {
            "message": message,
            "target": target,
            "inbox_id": inbox_id,
            "agent_name": agent_name,
            "submission_id": submission_id,
        }
        return dict(self.request("POST", "/v1/messages", _present(body)))

    def call(
        self,
        target: str,
        function: str,
        args: dict[str, Any] | None = None,
        submission_id: str | None = None,
    ) -> dict[str, Any]:
        body = {
            "target": target,
            "function": function,
            "args": args or {},
            "submission_id": submission_id,
        }
        return dict(self.request("POST", "/v1/calls", _present(body)))

    def call_status(self, call_id: str) -> dict[str, Any]:
        return dict(self.request("GET", f"/v1/calls/{urllib.parse.quote(call_id)}"))

    # -- attached MCP servers (issue 28) ------------------------------------------------

    def mcp(self, server: str) -> McpServer:
        """An attached MCP server, by name: `await platform.mcp("github").call(TOOL, args)`.
        The platform calls it with the server's credentials; relay code never holds them."""
        return McpServer(self, server)

    # -- durable steps (agentworks_relay._steps) -----------------------------------------

    def _step_path(self, name: str, verb: str) -> str:
        relay = os.environ.get("AGENTWORKS_RELAY", "")
        run = os.environ.get("AGENTWORKS_RUN_ID", "")
        return f"/api/relays/{relay}/runs/{run}/steps/{urllib.parse.quote(name, safe='')}/{verb}"

    def start_step(self, name: str, safe: bool) -> dict[str, Any]:
        return dict(self.request("POST", self._step_path(name, "start"), {"safe": safe}))

    def finish_step(self, name: str, result: Any) -> None:
        self.request("POST", self._step_path(name, "finish"), {"result": result})

    def abandon_step(self, name: str) -> None:
        self.request("POST", self._step_path(name, "abandon"), {})


class McpServer:
    """An attached MCP server as relay code calls it (only the tools the Relay's
    `mcp_tools` in relay.yaml admits)."""

    def __init__(self, client: Platform, name: str) -> None:
        self._client = client
        self.name = name

    async def call(
        self, tool: str, args: dict[str, Any] | None = None, timeout: float | None = None
    ) -> McpResult:
        """Calls `tool` with `args`; waits at most `timeout` seconds (60 by default, never
        past the run's remaining time). A tool's own error is a result with `is_error`;
        a refusal or failure raises McpCallError."""
        return await asyncio.to_thread(self.call_sync, tool, args, timeout)

    def call_sync(
        self, tool: str, args: dict[str, Any] | None = None, timeout: float | None = None
    ) -> McpResult:
        """`call` for legacy `run(INPUT, ctx)` code."""
        query: dict[str, Any] = {}
        if timeout is not None:
            query["timeout"] = timeout
        step_name = current_step.get()
        if step_name:
            query["step"] = step_name
        path = (
            f"/v1/mcp-servers/{urllib.parse.quote(self.name, safe='')}"
            f"/tools/{urllib.parse.quote(tool, safe='')}:call"
        )
        if query:
            path += "?" + urllib.parse.urlencode(query)
        wait = (timeout if timeout is not None else 60.0) + 10  # the platform answers first
        try:
            answer = self._client.request("POST", path, args or {}, timeout=wait)
        except PlatformError as error:
            raise McpCallError(error.status, error.code, error.message) from None
        return McpResult(
            is_error=bool(answer.get("is_error")),
            content=list(answer.get("content") or []),
            structured_content=answer.get("structured_content"),
        )


def _present(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if v is not None}


platform = Platform()
