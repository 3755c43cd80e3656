"""The MCP tool calls a `lambda` adapter's agent makes by call token (issue 28 items 3–5):
`POST /v1/mcp-servers/{name}/tools/{tool}:call` with the token its turn's event carried.

The token (call_tokens) admits its tools only, as the run's acting connection read again.
Each call is bounded like one the platform makes inside a turn — at most
MCP_CALLS_PER_TURN_MAX per turn, a timeout no later than the token's expiry, ended when the
run that minted the token ends (read every MCP_CANCEL_POLL_SECONDS while a call is out) —
and recorded for its turn in the same shape (call_records); the turn takes the records onto
the call or step that minted the token when its agent answers, where usage counts them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from agentworks import limits
from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.errors import AgentWorksError, LimitReached, McpServerFailed, Unauthenticated
from agentworks.ids import new_ulid
from agentworks.mcp_servers.call_records import call_entry, result_text
from agentworks.mcp_servers.cancel_watch import CancelWatch

if TYPE_CHECKING:
    from agentworks.identity.models import McpGrant, Principal
    from agentworks.mcp_servers.call_tokens import McpCallTokens
    from agentworks.mcp_servers.client import ToolResult
    from agentworks.mcp_servers.service import McpServers
    from agentworks.mcp_servers.turn_call_store import TurnCallStore


class TokenCalls:
    def __init__(
        self,
        tokens: McpCallTokens,
        servers: McpServers,
        store: TurnCallStore,
        clock: Clock = SYSTEM_CLOCK,
        run_ended: Callable[[str], bool] | None = None,  # "call:<id>" | "run:<id>" → ended?
    ) -> None:
        self._tokens = tokens
        self._servers = servers
        self._store = store
        self._clock = clock
        self._run_ended = run_ended

    def mint(
        self,
        principal: Principal,
        scope: str,
        tools: Sequence[tuple[str, str]],
        seconds: float,
        run: str = "",
    ) -> tuple[str, str]:
        """A token for a new turn of `run` to call `tools`, and the turn its calls are
        recorded under."""
        turn = new_ulid(self._clock)
        return self._tokens.mint(principal, scope, tools, seconds, turn, run), turn

    def authenticate(self, token: str) -> Principal:
        return self._tokens.authenticate(token)

    def call(
        self,
        principal: Principal,
        server: str,
        tool: str,
        arguments: Any,
        timeout: float | None = None,
        time_left: float | None = None,
    ) -> ToolResult:
        """One call by the token `principal` came from; `time_left`: what the answering
        function has left (seconds)."""
        grant = principal.mcp_grant
        if grant is None:  # the route sends only call tokens here
            raise Unauthenticated("Send the turn's mcp_call_token as the bearer token.")
        index = self._store.reserve(grant.turn, limits.MCP_CALLS_PER_TURN_MAX, grant.expires_at)
        if index is None:
            raise LimitReached(
                f"A turn makes at most {limits.MCP_CALLS_PER_TURN_MAX} MCP tool calls."
            )
        token_left = grant.expires_at - self._clock.now()
        started = time.monotonic()
        outcome, text, size = "failed", "", 0
        watch = CancelWatch(self._ended(grant), limits.MCP_CANCEL_POLL_SECONDS)
        try:
            with watch as cancel:
                result = self._servers.call(
                    principal,
                    server,
                    tool,
                    arguments,
                    timeout=timeout,
                    time_left=token_left if time_left is None else min(time_left, token_left),
                    cancel=cancel,
                )
            outcome = "tool_error" if result.is_error else "ok"
            text = result_text(result.content, result.structured_content)
            size = result.size
            return result
        except McpServerFailed:
            if cancel.is_set():
                failed = McpServerFailed(
                    f"The run ended while {tool[:128]} was in flight; the call was cancelled."
                )
            outcome, text = "failed", failed.message
            raise failed from None
        except AgentWorksError as error:
            outcome, text = "refused", error.message
            raise
        finally:
            self._record(grant, index, server, tool, arguments, outcome, text, size, started)

    def _ended(self, grant: McpGrant) -> Callable[[], bool] | None:
        if self._run_ended is None or not grant.run:
            return None
        ended, run = self._run_ended, grant.run
        return lambda: ended(run)

    def made(self, turn: str) -> list[dict[str, Any]]:
        """The records of the calls made with `turn`'s token, in order."""
        return self._store.calls(turn)

    def _record(
        self,
        grant: McpGrant,
        index: int,
        server: str,
        tool: str,
        arguments: Any,
        outcome: str,
        text: str,
        size: int,
        started: float,
    ) -> None:
        entry = call_entry(
            index,
            server,
            tool,
            outcome,
            int((time.monotonic() - started) * 1000),
            size,
            arguments,
            text,
            lambda name, data: self._store.keep(grant.turn, name, data),
        )
        self._store.put(grant.turn, index, entry, grant.expires_at)
