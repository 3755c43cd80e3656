"""`mcp_tools`: the MCP tools a Crew, an adapter profile or a Relay may call, and `admit`,
the one rule every call is checked against (issue 28 item 2).

A declaration is a list of `{server: NAME, tools: [tool, …]}`. Tools are named one by one;
`"*"` (every tool of that server) counts only where it is written, never by default. A
tool's presence on a server grants nothing: a call is admitted only by a declaration that
names its server and the tool (or `"*"`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator

from agentworks import limits
from agentworks.errors import InvalidInput
from agentworks.mcp_servers.models import NAME

EVERY_TOOL = "*"


class McpToolGrant(BaseModel):
    """The tools of one attached server that may be called."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    server: str = Field(description="An attached MCP server's name (agentworks mcp-servers).")
    tools: tuple[str, ...] = Field(
        min_length=1,
        max_length=limits.MCP_TOOLS_DECLARED_TOOLS_MAX,
        description='Tool names; "*" for every tool of the server, only when written.',
    )

    @field_validator("server", mode="before")
    @classmethod
    def _server(cls, value: Any) -> str:
        if not isinstance(value, str) or not NAME.match(value.lower()):
            raise ValueError("not an MCP server name (letters, digits, '.', '_', '-')")
        return value.lower()

    @field_validator("tools")
    @classmethod
    def _tools(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for tool in value:
            if not tool or len(tool) > limits.MCP_TOOL_NAME_MAX_CHARS or not tool.isprintable():
                raise ValueError(
                    f"a tool name is 1–{limits.MCP_TOOL_NAME_MAX_CHARS} printable characters"
                )
        if len(set(value)) != len(value):
            raise ValueError("a tool is named twice")
        return value


McpToolsDeclaration = tuple[McpToolGrant, ...]
_DECLARATION: TypeAdapter[McpToolsDeclaration] = TypeAdapter(McpToolsDeclaration)


def parse_declaration(data: Any, field: str = "mcp_tools") -> McpToolsDeclaration:
    """A definition's `mcp_tools` (a list; absent = none) → its grants, or InvalidInput
    saying what is wrong. A server named twice is refused (one grant per server)."""
    if data is None:
        return ()
    if not isinstance(data, list):
        raise InvalidInput(
            f"{field} is a list of {{server, tools}}, e.g. "
            '[{"server": "github", "tools": ["search_issues"]}].',
            field=field,
        )
    if len(data) > limits.MCP_TOOLS_DECLARED_SERVERS_MAX:
        raise InvalidInput(
            f"{field} names at most {limits.MCP_TOOLS_DECLARED_SERVERS_MAX} servers.",
            field=field,
        )
    try:
        grants = _DECLARATION.validate_python(data)
    except ValidationError as invalid:
        first = invalid.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise InvalidInput(
            f"Invalid {field}[{where}]: {first.get('msg', 'invalid')}", field=field
        ) from None
    if duplicate_servers(grants):
        raise InvalidInput(f"{field} names a server twice: one entry per server.", field=field)
    return grants


def duplicate_servers(grants: Sequence[McpToolGrant]) -> bool:
    """Whether a server has two entries (a declaration has one per server)."""
    servers = [g.server for g in grants]
    return len(set(servers)) != len(servers)


def declaration_json(grants: McpToolsDeclaration) -> list[dict[str, Any]]:
    """The declaration as stored and shown."""
    return [{"server": g.server, "tools": list(g.tools)} for g in grants]


def admit(declaration: McpToolsDeclaration, server: str, tool: str) -> bool:
    """Whether `declaration` admits calling `tool` of `server`: only a grant for that server
    naming the tool, or `"*"` written in it."""
    wanted = server.lower()
    return any(
        grant.server == wanted and (tool in grant.tools or EVERY_TOOL in grant.tools)
        for grant in declaration
    )
