"""What reads of attached MCP servers return (HTTP, MCP and CLI alike): never a header's
value, only the names of the headers that are sent."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class McpToolView(BaseModel):
    name: str
    description: str
    input_schema: dict[str, Any]


class McpServerView(BaseModel):
    name: str
    url: str
    header_names: list[str] = Field(
        description="The headers sent with every request; their values are never shown."
    )
    version: int
    created_at: str = Field(description="ISO 8601, UTC")
    updated_at: str = Field(description="ISO 8601, UTC")
    tools: list[McpToolView] | None = Field(
        default=None, description="show only: the server's tools, fetched just now or cached."
    )
    tools_error: str | None = Field(
        default=None, description="show only: why the tools could not be fetched."
    )


class McpServerList(BaseModel):
    mcp_servers: list[McpServerView]


class McpServerRemoved(BaseModel):
    name: str
    removed: bool


class McpToolCallResult(BaseModel):
    """A tool's result as the server gave it; `is_error` is the tool's own error, for the
    model to read (a platform failure is an error response instead)."""

    server: str
    tool: str
    is_error: bool
    content: list[dict[str, Any]]
    structured_content: dict[str, Any] | None = None
