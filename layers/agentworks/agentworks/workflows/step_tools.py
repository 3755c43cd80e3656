"""A workflow step's attached MCP tools (issue 28): what a step's session may call, for
whom, and where its calls are recorded.

The admitting declaration is the step's adapter profile's `mcp_tools`. The session calls as
the run's starter, who must still hold `workflows:run` (read again at every call); a run
cancelled meanwhile ends its in-flight calls. Each turn's calls go onto the step's record,
large content beside the step's session, and are counted on the run (its end's usage).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentworks.crews.adapters.base import AdapterError
from agentworks.crews.mcp_tool_use import TimeLeft, TurnMcpTools
from agentworks.identity.models import WORKFLOWS_RUN
from agentworks.workflows.records import RunRecord, StepRecord

if TYPE_CHECKING:
    from agentworks.identity.models import Principal
    from agentworks.mcp_servers.declarations import McpToolsDeclaration
    from agentworks.mcp_servers.service import McpServers
    from agentworks.mcp_servers.token_calls import TokenCalls
    from agentworks.workflows.crew_steps import CrewSteps
    from agentworks.workflows.run_store import RunStore


class StepTools:
    def __init__(
        self,
        servers: McpServers,
        runs: RunStore,
        crew_steps: CrewSteps,
        tokens: TokenCalls | None = None,  # a lambda adapter's agent calls by token
    ) -> None:
        self._servers = servers
        self._runs = runs
        self._crew_steps = crew_steps
        self._tokens = tokens

    def for_turn(
        self,
        run: RunRecord,
        record: StepRecord,
        declaration: McpToolsDeclaration,
        time_left: TimeLeft | None,
    ) -> TurnMcpTools:
        def starter() -> Principal | None:
            try:
                principal: Principal = self._crew_steps.starter(run)
            except AdapterError:
                return None
            return principal

        return TurnMcpTools(
            self._servers,
            declaration,
            starter,
            WORKFLOWS_RUN,
            lambda name, data: self._runs.keep_content(record, name, data),
            time_left=time_left,
            tokens=self._tokens,
            run=f"run:{run.run_id}",
            cancelled=lambda: self._runs.ended(run.run_id),
        )

    def take(self, run: RunRecord, record: StepRecord, tools: TurnMcpTools | None) -> None:
        """The turn's calls onto the step, counted on the run."""
        calls = tools.take_calls() if tools is not None else []
        if calls:
            record.mcp_calls.extend(calls)
            self._runs.add_mcp_calls(run.run_id, len(calls))
