"""MCP function: `/mcp`, stateless streamable HTTP with JSON responses (SPEC §10).

Thin: the tools and the transport live in the runtime layer (agentworks.mcp_server).
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.logging import correlation_paths

from agentworks.mcp_server import server
from agentworks.mcp_server.lambda_adapter import handle_event
from agentworks.observability import observed_handler

# Init runs at full CPU and SnapStart snapshots it: build the tool schemas here, not on
# the first request. (No network: AWS clients are still created on first use.)
server.build()


@observed_handler(correlation_paths.API_GATEWAY_HTTP)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return handle_event(event, context)
