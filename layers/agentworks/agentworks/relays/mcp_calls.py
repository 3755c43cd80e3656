"""Tool calls of attached MCP servers from relay code (issue 28): `platform.mcp(NAME)
.call(TOOL, args)` reaches here with the run's credential.

The run is read again on the server side: its pinned release's `mcp_tools` is the
declaration every call is admitted by (never anything the code sends), checked before
anything is read from the server or sent to it. The call's timeout is at most the
attempt's remaining time; while it is in flight the run is re-read every
RELAY_MCP_RUN_WATCH_SECONDS, and a run that ended or moved to another attempt cancels it.
Each call is recorded on the run (and the step that made it, when the code says which),
with its arguments and result, and counted in the account's usage. The server's headers
stay in its secret: nothing here returns or records them.
"""

from __future__ import annotations

import json
import threading
import time
from typing import TYPE_CHECKING, Any

from agentworks import limits
from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.errors import AgentWorksError, InvalidInput, McpServerFailed, Unavailable
from agentworks.ids import new_ulid
from agentworks.mcp_servers.cancel_watch import CancelWatch
from agentworks.mcp_servers.declarations import parse_declaration
from agentworks.observability import count
from agentworks.relays.records import McpCall, McpCallOutcome, RelayRun
from agentworks.relays.steps import STEP_NAME
from agentworks.usage.counts import Counts

if TYPE_CHECKING:
    from agentworks.identity.models import Principal
    from agentworks.mcp_servers.client import ToolResult
    from agentworks.mcp_servers.declarations import McpToolsDeclaration
    from agentworks.mcp_servers.service import McpServers
    from agentworks.relays.mcp_call_store import McpCallStore
    from agentworks.relays.releases import RelayReleases
    from agentworks.relays.run_store import RelayRunStore

# Outcomes that reached for the server (and are counted in usage); "refused" did not.
_COUNTED: frozenset[str] = frozenset({"ok", "tool_error", "failed", "cancelled"})


class RelayMcpCalls:
    def __init__(
        self,
        runs: RelayRunStore,
        releases: RelayReleases,
        calls: McpCallStore,
        servers: McpServers,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._runs = runs
        self._releases = releases
        self._calls = calls
        self._servers = servers
        self._clock = clock

    def call(
        self,
        principal: Principal,
        server: str,
        tool: str,
        arguments: Any,
        timeout: float | None = None,
        step: str | None = None,
        time_left: float | None = None,
    ) -> ToolResult:
        """One call by the run whose credential `principal` is; `time_left`: what the
        answering function has left (seconds)."""
        run = self._live_run(principal)
        _check_step(step)
        declaration = self._declaration(run)
        now_ms = int(self._clock.now() * 1000)
        ends_at = run.attempt_ends_at(limits.RELAY_RUN_TIMEOUT_SECONDS)
        if ends_at is not None:
            run_left = (ends_at - now_ms) / 1000
            time_left = run_left if time_left is None else min(time_left, run_left)
        started = time.monotonic()
        # The run re-read while the call is out: ended, or moved to another attempt, cancels it.
        cancel = threading.Event()
        watch = CancelWatch(
            lambda: self._runs.state(run.run_id) != ("running", run.attempt),
            limits.RELAY_MCP_RUN_WATCH_SECONDS,
            cancel,
        )
        outcome: McpCallOutcome = "failed"
        error: str | None = None
        result: ToolResult | None = None
        try:
            with watch:
                result = self._servers.call(
                    principal,
                    server,
                    tool,
                    arguments,
                    declaration=declaration,
                    timeout=timeout,
                    time_left=time_left,
                    cancel=cancel,
                )
            outcome = "tool_error" if result.is_error else "ok"
            return result
        except McpServerFailed as failed:
            ended = failed
            if cancel.is_set():
                outcome = "cancelled"
                ended = McpServerFailed(
                    f"Run {run.run_id} ended (or moved to another attempt) while {tool[:128]} "
                    "was in flight; the call was cancelled."
                )
            error = ended.message
            raise ended from None
        except Unavailable as unknown:
            outcome = "refused"
            if unknown.message == Unavailable().message:  # the server, not the tool
                unknown = Unavailable(
                    f"No MCP server named {server[:64]} is attached to this account (it may "
                    "have been removed): see agentworks mcp-servers list."
                )
            error = unknown.message
            raise unknown from None
        except AgentWorksError as refused:
            outcome, error = "refused", refused.message
            raise
        finally:
            self._record(
                principal,
                run,
                server,
                tool,
                step,
                arguments,
                result,
                outcome,
                error,
                now_ms,
                started,
            )

    # ---- internals ----

    def _live_run(self, principal: Principal) -> RelayRun:
        """The credential's run, read again: still running the credential's attempt."""
        run_id = principal.relay_run
        found = self._runs.get(run_id) if run_id else None
        if found is None:
            raise Unavailable()
        run = found[0]
        if run.status != "running" or run.attempt != principal.relay_attempt:
            raise Unavailable(f"Run {run.run_id} is {run.status}; its code can call no tool.")
        return run

    def _declaration(self, run: RelayRun) -> McpToolsDeclaration:
        """The pinned release's `mcp_tools` (none when the release is gone or has none)."""
        release = self._releases.release(run.account_id, run.relay, run.version)
        return parse_declaration(release.mcp_tools or None) if release else ()

    def _record(
        self,
        principal: Principal,
        run: RelayRun,
        server: str,
        tool: str,
        step: str | None,
        arguments: Any,
        result: ToolResult | None,
        outcome: McpCallOutcome,
        error: str | None,
        started_at: int,
        started: float,
    ) -> None:
        result_json = None
        if result is not None:
            result_json = _compact(
                {
                    "is_error": result.is_error,
                    "content": result.content,
                    "structured_content": result.structured_content,
                }
            )
        call = McpCall(
            call_id=new_ulid(self._clock),
            run_id=run.run_id,
            attempt=principal.relay_attempt,
            step=step,
            server=server.lower()[:64] if isinstance(server, str) else "",
            tool=tool[:128],
            started_at=started_at,
            duration_ms=int((time.monotonic() - started) * 1000),
            outcome=outcome,
            result_bytes=result.size if result is not None else 0,
            error=error[:2000] if error else None,
            arguments_json=_compact(arguments) if isinstance(arguments, dict) else None,
            result_json=result_json,
        )
        usage = Counts(relay_mcp_tool_calls=1) if outcome in _COUNTED else None
        self._calls.put(call, run.account_id, usage)
        count("RelayMcpToolCalls")


def _check_step(step: str | None) -> None:
    if step is None:
        return
    if not (0 < len(step) <= limits.RELAY_STEP_NAME_MAX_CHARS) or not STEP_NAME.match(step):
        raise InvalidInput(
            f"step is a durable step's name: 1–{limits.RELAY_STEP_NAME_MAX_CHARS} letters, "
            "digits and '_.-'.",
            field="step",
        )


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
