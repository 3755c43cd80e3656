"""The seam through which an adapter uses attached MCP servers' tools in a turn (issue 28
item 3): what it may offer the model, and one call at a time.

The platform gives a turn an `McpToolUse` (TurnRequest.mcp_tools). An adapter never checks
admission itself: every call goes through `call`, which the platform checks against the
admitting declaration and the caller's scopes at call time, bounds, records and counts. A
refused or failed call is an outcome the agent sees (`is_error`), never an exception: the
agent decides what to do next.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from agentworks.mcp_servers.call_records import result_text


@dataclass(frozen=True)
class McpTool:
    """An admitted tool as its server describes it (the input schema as given)."""

    server: str
    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True)
class McpToolOutcome:
    """What came of one call: the tool's result, its own error (`isError`), or why the
    platform refused or failed it (`outcome` says which; `is_error` for all but "ok")."""

    outcome: str  # ok | tool_error | refused | failed
    content: list[dict[str, Any]]
    structured_content: dict[str, Any] | None = None

    @property
    def is_error(self) -> bool:
        return self.outcome != "ok"

    @property
    def text(self) -> str:
        """The result as the model reads it: text items joined, other items as JSON."""
        return result_text(self.content, self.structured_content)


class McpToolUse(Protocol):
    """The attached MCP tools a turn may use (crews.mcp_tool_use builds it)."""

    def tools(self) -> list[McpTool]:
        """The admitted tools the servers offer now (a server that cannot be reached is
        left out)."""
        ...

    def call(self, server: str, tool: str, arguments: Any) -> McpToolOutcome:
        """One call, checked, bounded and recorded; never raises for a refusal or failure."""
        ...

    def call_token(self, tools: list[McpTool]) -> str | None:
        """A short-lived token for POST /v1/mcp-servers/{name}/tools/{tool}:call that admits
        these tools, for an agent running outside the platform (None: it may call none)."""
        ...
