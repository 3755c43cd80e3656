"""Attached MCP servers as reads show them (HTTP, MCP, CLI): names of headers, never their
values."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from agentworks.mcp_servers.server_store import McpServer
from agentworks.mcp_servers.views import McpServerView, McpToolView


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds")


def server_view(server: McpServer, shown: Any = None) -> McpServerView:
    """`shown` (service.Shown) adds the tools, or why they could not be fetched."""
    tools = None
    if shown is not None and shown.tools is not None:
        tools = [
            McpToolView(name=t.name, description=t.description, input_schema=t.input_schema)
            for t in shown.tools
        ]
    return McpServerView(
        name=server.name,
        url=server.url,
        header_names=list(server.header_names),
        version=server.version,
        created_at=_iso(server.created_at),
        updated_at=_iso(server.updated_at),
        tools=tools,
        tools_error=shown.tools_error if shown is not None else None,
    )
