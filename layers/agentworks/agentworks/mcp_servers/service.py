"""Attached MCP servers as a principal may use them (issue 28 items 1, 2, 5).

Attaching, changing and removing one is account-wide administration with the connection's
own token (it stores a credential). Reading them takes the same admin; calling a tool takes
`mcp-servers:call` too, or an `mcp_tools` declaration that admits the tool (checked before
anything is read or sent). Another account's server looks exactly like none.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from agentworks import limits
from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.errors import (
    Conflict,
    InvalidInput,
    LimitReached,
    McpServerFailed,
    NotAdmitted,
    Unavailable,
)
from agentworks.identity.models import MCP_SERVERS_CALL, Principal
from agentworks.ids import new_ulid
from agentworks.mcp_servers import client as mcp_client
from agentworks.mcp_servers.declarations import McpToolGrant, McpToolsDeclaration, admit
from agentworks.mcp_servers.models import NAME, parse_change, parse_definition
from agentworks.mcp_servers.secret_store import McpSecretStore, SecretMissing
from agentworks.mcp_servers.server_store import McpServer, McpServerStore, ServerExists
from agentworks.observability import logger

Tools = list[mcp_client.ToolInfo]
Offered = list[tuple[str, mcp_client.ToolInfo]]  # (server, tool)

# What is kept back of the caller's remaining time for answering after the call.
_ANSWER_MARGIN_SECONDS = 1.0


@dataclass(frozen=True)
class Shown:
    """A server with its tools (or why they could not be fetched)."""

    server: McpServer
    tools: list[mcp_client.ToolInfo] | None
    tools_error: str | None


@dataclass
class _ToolCache:
    """Tool lists per server version, for `MCP_TOOLS_CACHE_SECONDS` (per container)."""

    entries: dict[tuple[str, str, int], tuple[float, list[mcp_client.ToolInfo]]] = field(
        default_factory=dict
    )
    lock: threading.Lock = field(default_factory=threading.Lock)


class McpServers:
    def __init__(
        self,
        store: McpServerStore,
        secrets: McpSecretStore,
        clock: Clock = SYSTEM_CLOCK,
        connector: Any = mcp_client,
    ) -> None:
        self._store = store
        self._secrets = secrets
        self._clock = clock
        # The MCP client (list_tools, call_tool); tests may give another.
        self._client = connector
        self._cache = _ToolCache()

    def _now_ms(self) -> int:
        return int(self._clock.now() * 1000)

    # ---- administration ----

    def add(self, principal: Principal, data: Any) -> McpServer:
        principal.require_account_admin()
        principal.require_own_token()  # it stores a credential
        definition = parse_definition(data)
        account = principal.account_id
        if self._store.get(account, definition.name) is not None:
            raise _exists(definition.name)
        if len(self._store.list_all(account)) >= limits.MCP_SERVERS_PER_ACCOUNT:
            raise LimitReached(f"At most {limits.MCP_SERVERS_PER_ACCOUNT} MCP servers per account.")
        secret_id = self._secrets.secret_id(account, definition.name, new_ulid(self._clock))
        self._secrets.create(secret_id, definition.headers)
        now = self._now_ms()
        server = McpServer(
            account,
            definition.name,
            definition.url,
            tuple(sorted(definition.headers)),
            secret_id,
            1,
            now,
            now,
        )
        try:
            self._store.create(server)
        except ServerExists:
            self._secrets.delete(secret_id)  # added meanwhile by another request
            raise _exists(definition.name) from None
        except BaseException:
            self._secrets.delete(secret_id)
            raise
        logger.info("mcp server added", extra={"mcp_server": server.name})
        return server

    def update(self, principal: Principal, name: str, data: Any) -> McpServer:
        """A new URL and/or new headers; new headers rotate the secret's value."""
        principal.require_account_admin()
        principal.require_own_token()
        server = self._found(principal, name)
        url, headers = parse_change(data)
        if headers is not None:
            self._secrets.rotate(server.secret_id, headers)
        names = tuple(sorted(headers)) if headers is not None else server.header_names
        if not self._store.replace(server, url or server.url, names, self._now_ms()):
            raise Conflict("The MCP server changed meanwhile; get it again and retry.")
        logger.info("mcp server updated", extra={"mcp_server": server.name})
        return self._found(principal, name)

    def remove(self, principal: Principal, name: str) -> McpServer:
        principal.require_account_admin()
        server = self._found(principal, name)
        self._store.delete(server)
        self._secrets.delete(server.secret_id)
        logger.info("mcp server removed", extra={"mcp_server": server.name})
        return server

    def list(self, principal: Principal) -> list[McpServer]:
        principal.require_account_admin()
        return sorted(self._store.list_all(principal.account_id), key=lambda s: s.name)

    def show(self, principal: Principal, name: str) -> Shown:
        """The server and its tools, fetched with the MCP client (or cached)."""
        principal.require_account_admin()
        server = self._found(principal, name)
        try:
            return Shown(server, self._tools(server), None)
        except mcp_client.ServerFailure as failure:
            return Shown(server, None, failure.message)

    # ---- calls ----

    def offered(self, principal: Principal, declaration: McpToolsDeclaration) -> Offered:
        """(server, tool) for every tool the declaration admits that its server offers now,
        as a hosted agent is shown them; a server that is gone or cannot be reached is left
        out (calling one of its tools says why)."""
        found: Offered = []
        for grant in declaration:
            server = self._store.get(principal.account_id, grant.server)
            if server is None:
                continue
            try:
                tools = self._tools(server)
            except mcp_client.ServerFailure:
                continue
            found.extend((server.name, t) for t in tools if admit(declaration, server.name, t.name))
        return found

    def call(
        self,
        principal: Principal,
        name: str,
        tool: str,
        arguments: Any,
        declaration: McpToolsDeclaration | None = None,
        timeout: float | None = None,
        time_left: float | None = None,
        cancel: threading.Event | None = None,
    ) -> mcp_client.ToolResult:
        """One tool call. With `declaration` (a Crew's, a profile's, a Relay's) the call is
        admitted by it; without, by the caller's `mcp-servers:call` scope as an account
        admin. Either is checked before anything is read or sent."""
        if principal.mcp_grant is not None:
            # A call token (call_tokens): its own tools only; others look like none.
            asked = (name.lower() if isinstance(name, str) else "", tool)
            if asked not in principal.mcp_grant.tools:
                raise Unavailable()
            declaration = (McpToolGrant(server=name, tools=(tool,)),)
        if declaration is not None:
            if not admit(declaration, name, tool):
                raise NotAdmitted(
                    f"No mcp_tools declaration admits tool {tool[:128]} of MCP server "
                    f"{name[:64]}; add it to the definition's mcp_tools to call it."
                )
        else:
            principal.require(MCP_SERVERS_CALL)
            principal.require_account_admin()
        if not isinstance(arguments, dict):
            raise InvalidInput("A tool's arguments are a JSON object.", field="arguments")
        seconds = _call_seconds(timeout, time_left)
        server = self._found(principal, name)
        try:
            offered: Tools = self._tools(server)
        except mcp_client.ServerFailure as failure:
            raise McpServerFailed(f"MCP server {server.name}: {failure.message}") from None
        if all(t.name != tool for t in offered):
            shown = ", ".join(t.name for t in offered[:20]) or "none"
            raise Unavailable(
                f"The MCP server {server.name} offers no tool {tool[:128]} (its tools: {shown})."
            )
        started = time.monotonic()
        try:
            result = self._client.call_tool(
                self._endpoint(server),
                tool,
                arguments,
                seconds,
                limits.MCP_RESULT_MAX_BYTES,
                cancel,
            )
        except mcp_client.ServerFailure as failure:
            self._log_call(server, tool, "failed", started)
            raise McpServerFailed(f"MCP server {server.name}: {failure.message}") from None
        except mcp_client.Cancelled:
            self._log_call(server, tool, "cancelled", started)
            raise McpServerFailed(f"The call of {tool} was cancelled.") from None
        self._log_call(server, tool, "tool error" if result.is_error else "ok", started)
        return result

    # ---- internals ----

    def _tools(self, server: McpServer) -> Tools:
        key = (server.account_id, server.name, server.version)
        now = self._clock.now()
        with self._cache.lock:
            cached = self._cache.entries.get(key)
            if cached is not None and cached[0] > now:
                return cached[1]
        tools: Tools = self._client.list_tools(
            self._endpoint(server), limits.MCP_LIST_TIMEOUT_SECONDS
        )
        with self._cache.lock:
            self._cache.entries = {
                k: v for k, v in self._cache.entries.items() if v[0] > now and k[:2] != key[:2]
            }
            self._cache.entries[key] = (now + limits.MCP_TOOLS_CACHE_SECONDS, tools)
        return tools

    def _endpoint(self, server: McpServer) -> mcp_client.Endpoint:
        try:
            headers = self._secrets.read(server.secret_id)
        except SecretMissing:
            raise mcp_client.ServerFailure(
                "Its credentials are gone (the secret was deleted); give them again: "
                f"agentworks mcp-servers update {server.name} --header …"
            ) from None
        return mcp_client.Endpoint(server.url, headers)

    def _found(self, principal: Principal, name: str) -> McpServer:
        lowered = name.lower() if isinstance(name, str) else ""
        server = self._store.get(principal.account_id, lowered) if NAME.match(lowered) else None
        if server is None:
            raise Unavailable()  # another account's server looks exactly like none
        return server

    def _log_call(self, server: McpServer, tool: str, outcome: str, started: float) -> None:
        logger.info(
            "mcp tool call",
            extra={
                "mcp_server": server.name,
                "mcp_tool": tool[:128],
                "outcome": outcome,
                "duration_ms": int((time.monotonic() - started) * 1000),
            },
        )


def _call_seconds(timeout: float | None, time_left: float | None) -> float:
    """A call's timeout: asked for or the default, at most the bound and the caller's
    remaining time (less a moment to answer)."""
    if timeout is not None and not 0 < timeout <= limits.MCP_CALL_TIMEOUT_MAX_SECONDS:
        raise InvalidInput(
            f"timeout is 0–{limits.MCP_CALL_TIMEOUT_MAX_SECONDS:g} seconds.", field="timeout"
        )
    seconds = timeout if timeout is not None else limits.MCP_CALL_TIMEOUT_DEFAULT_SECONDS
    if time_left is not None:
        seconds = min(seconds, time_left - _ANSWER_MARGIN_SECONDS)
    if seconds <= 0:
        raise McpServerFailed("No time is left for the call.")
    return seconds


def _exists(name: str) -> Conflict:
    return Conflict(
        f"The MCP server {name} is attached already; change it with: "
        f"agentworks mcp-servers update {name} …"
    )
