"""Attached MCP tools as one turn of a hosted agent uses them (issue 28 items 2–5): the
`McpToolUse` a Crew's call or a workflow step gives its adapter.

Whose scopes count: the principal the run acts for, read again at every call — a Crew's
call acts for its caller's connection (`functions:call`; a message run for the connection
that sent the message, `messages:send`), a workflow step for the run's starter
(`workflows:run`). A connection revoked or expired since, or one that lost that scope,
makes every later call refused. The admitting declaration is the Crew's `mcp_tools` (a
Crew call) or the adapter profile's (a workflow step); `McpServers.call` checks it before
anything is read or sent, so an unadmitted tool never reaches its server.

Each call is bounded (the server's default timeout, at most the turn's remaining time;
the result's size), recorded (`calls`: server, tool, duration, outcome, result size, the
arguments and the result — large ones kept outside the record by `keep`) and never raises:
a refusal, a server that is down and the tool's own `isError` all come back as an outcome
the agent sees.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentworks import limits
from agentworks.crews.adapters.tool_use import McpTool, McpToolOutcome
from agentworks.errors import AgentWorksError, McpServerFailed, NotAdmitted, Unavailable
from agentworks.mcp_servers.call_records import Keep, call_entry
from agentworks.mcp_servers.cancel_watch import CancelWatch
from agentworks.mcp_servers.declarations import McpToolsDeclaration

if TYPE_CHECKING:
    from agentworks.crews.models import CallRecord
    from agentworks.identity.models import Principal
    from agentworks.mcp_servers.service import McpServers
    from agentworks.mcp_servers.token_calls import TokenCalls


# The seconds the turn has left (the invocation's clock); none given: the longest a call
# may take.
TimeLeft = Callable[[], float]


@dataclass
class TurnMcpTools:
    """One turn's access to the declared tools; `calls` holds its records."""

    servers: McpServers
    declaration: McpToolsDeclaration
    principal: Callable[[], Principal | None]  # the run's acting principal, read per call
    scope: str  # the scope that principal must still hold
    keep: Keep
    time_left: TimeLeft | None = None
    cancel: threading.Event | None = None
    tokens: TokenCalls | None = None  # a lambda adapter's agent calls by token
    run: str = ""  # "call:<id>" or "run:<id>": whose end cancels its token's calls
    # Whether the run was cancelled (read while a call is in flight: a cancel ends it).
    cancelled: Callable[[], bool] | None = None
    calls: list[dict[str, Any]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _token_turns: list[str] = field(default_factory=list, repr=False)  # tokens minted

    def tools(self) -> list[McpTool]:
        """The admitted tools its servers offer now (none while the principal may not call)."""
        principal = self.principal()
        if not self.declaration or _refusal(principal, self.scope) is not None:
            return []
        assert principal is not None
        return [
            McpTool(server, info.name, info.description, info.input_schema)
            for server, info in self.servers.offered(principal, self.declaration)
        ]

    def call_token(self, tools: list[McpTool]) -> str | None:
        """A token for `tools` (admitted ones) valid for the turn's remaining time, for an
        agent outside the platform's process (the `lambda` adapter's function)."""
        principal = self.principal()
        if self.tokens is None or not tools or _refusal(principal, self.scope) is not None:
            return None
        assert principal is not None
        pairs = [(t.server, t.name) for t in tools]
        token, turn = self.tokens.mint(principal, self.scope, pairs, self._seconds_left(), self.run)
        self._token_turns.append(turn)
        return token

    def take_calls(self) -> list[dict[str, Any]]:
        """Every call of the turn once its agent has answered: the ones made here and, read
        once, the ones its agent made with a call token."""
        if self.tokens is not None:
            with self._lock:
                turns, self._token_turns = self._token_turns, []
                for turn in turns:
                    self.calls.extend(self.tokens.made(turn))
        return self.calls

    def call(self, server: str, tool: str, arguments: Any) -> McpToolOutcome:
        started = time.monotonic()
        size = 0
        try:
            principal = self.principal()  # read once per call: revocation counts at once
            refusal = _refusal(principal, self.scope)
            if refusal is not None or principal is None:
                raise NotAdmitted(refusal or "")
            if len(self.calls) >= limits.MCP_CALLS_PER_TURN_MAX:
                raise NotAdmitted(
                    f"A turn makes at most {limits.MCP_CALLS_PER_TURN_MAX} MCP tool calls."
                )
            watch = CancelWatch(self.cancelled, limits.MCP_CANCEL_POLL_SECONDS, self.cancel)
            with watch as cancel:
                result = self.servers.call(
                    principal,
                    server,
                    tool,
                    arguments,
                    declaration=self.declaration,
                    time_left=self._seconds_left(),
                    cancel=cancel,
                )
            outcome = McpToolOutcome(
                "tool_error" if result.is_error else "ok",
                result.content,
                result.structured_content,
            )
            size = result.size
        except Unavailable as missing:
            outcome = _error("refused", _unavailable_message(missing, server, tool))
        except McpServerFailed as failed:
            outcome = _error("failed", failed.message)
        except AgentWorksError as refused:
            outcome = _error("refused", refused.message)
        self._record(server, tool, arguments, outcome, started, size)
        return outcome

    # ---- internals ----

    def _seconds_left(self) -> float:
        return self.time_left() if self.time_left else limits.MCP_CALL_TIMEOUT_MAX_SECONDS

    def _record(
        self,
        server: str,
        tool: str,
        arguments: Any,
        outcome: McpToolOutcome,
        started: float,
        size: int,
    ) -> None:
        with self._lock:
            entry = call_entry(
                len(self.calls) + 1,
                server,
                tool,
                outcome.outcome,
                int((time.monotonic() - started) * 1000),
                size,
                arguments,
                outcome.text,
                self.keep,
            )
            self.calls.append(entry)


def take_mcp_calls(record: CallRecord, tools: TurnMcpTools | None) -> None:
    """A Crew turn's MCP tool calls onto its call's record, counted for usage at the call's
    end."""
    if tools is not None:
        calls = tools.take_calls()
        record.mcp_calls.extend(calls)
        record.mcp_calls_made += len(calls)


def _refusal(principal: Principal | None, scope: str) -> str | None:
    """Why the acting principal may not call at all just now (None when it may)."""
    if principal is None:
        return "The connection this run acts for was revoked or expired: no tool calls."
    if scope not in principal.scopes:
        return f"The connection this run acts for lacks the '{scope}' scope now."
    return None


def _error(kind: str, message: str) -> McpToolOutcome:
    return McpToolOutcome(kind, [{"type": "text", "text": message}])


def _unavailable_message(missing: Unavailable, server: str, tool: str) -> str:
    """A removed (or another account's) server says so; a tool the server no longer offers
    keeps the service's own message."""
    if missing.message != Unavailable().message:
        return missing.message
    return (
        f"No MCP server {str(server)[:64]} is attached to this account (removed?), so "
        f"{str(tool)[:128]} cannot be called."
    )
