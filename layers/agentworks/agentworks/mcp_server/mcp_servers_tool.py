"""The `mcp_servers` MCP tool: the account's attached MCP servers (issue 28).

Same shape as `adapters`: one `action` argument, each action a row of `ACTIONS`; the rules
(account-wide admin, own token to store a credential, one secret per server, no header's
value in any answer) live in `McpServers`, exactly as behind `/v1/mcp-servers`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal, get_args

from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult
from pydantic import ConfigDict, Field, RootModel

from agentworks.errors import InvalidInput
from agentworks.identity.models import Principal
from agentworks.mcp_server.actions import ActionSpec, run_action, services
from agentworks.mcp_server.tooling import domain_tool
from agentworks.mcp_servers.views import McpServerList, McpServerRemoved, McpServerView

Action = Literal["add", "update", "show", "list", "remove"]

TOOL_NAME = "mcp_servers"
TOOL_TITLE = "AgentWorks attached MCP servers"

DESCRIPTION = """\
MCP servers attached to this AgentWorks account, whose tools Crews, adapter profiles and
Relays may be admitted to call (admin without target bounds). Pick an `action`:

- list: the account's servers (name, url, the names of the headers sent).
- show: one server by `name`, with its tools (fetched from the server).
- add: `definition` = {"name": "github", "url": "https://…/mcp",
  "headers": {"Authorization": "Bearer …"}}; the headers go to the server's secret and
  are never shown again.
- update: `name` and `definition` = {"url": …} and/or {"headers": {…}} (rotates the secret).
- remove: detach the server by `name` (its secret is deleted).

Errors come back as is_error results with {"error": {"code", "message"}}; `unavailable`
means no such server; `invalid_request` says what is wrong (e.g. a refused URL).
"""


class McpServersOutput(RootModel[McpServerView | McpServerList | McpServerRemoved]):
    """One JSON object per action (the same bodies the HTTP API returns)."""

    model_config = ConfigDict(json_schema_extra={"type": "object"})


@dataclass(frozen=True)
class McpServersCall:
    action: Action
    name: str | None = None
    definition: dict[str, Any] | None = None


def _view(server: Any, shown: Any = None) -> McpServerView:
    from agentworks.mcp_servers.presentation import server_view

    return server_view(server, shown)


def _add(principal: Principal, call: McpServersCall) -> McpServerView:
    return _view(services().mcp_servers.add(principal, call.definition))


def _update(principal: Principal, call: McpServersCall) -> McpServerView:
    if not call.name:
        raise InvalidInput("action=update needs the server's name.", field="name")
    return _view(services().mcp_servers.update(principal, call.name, call.definition))


def _show(principal: Principal, call: McpServersCall) -> McpServerView:
    shown = services().mcp_servers.show(principal, str(call.name))
    return _view(shown.server, shown)


def _list(principal: Principal, call: McpServersCall) -> McpServerList:
    found = services().mcp_servers.list(principal)
    return McpServerList(mcp_servers=[_view(s) for s in found])


def _remove(principal: Principal, call: McpServersCall) -> McpServerRemoved:
    removed = services().mcp_servers.remove(principal, str(call.name))
    return McpServerRemoved(name=removed.name, removed=True)


ACTIONS: dict[str, ActionSpec[McpServersCall]] = {
    "add": ActionSpec(_add, frozenset({"definition"}), required=("definition",)),
    "update": ActionSpec(
        _update, frozenset({"definition", "name"}), required=("name", "definition")
    ),
    "show": ActionSpec(_show, frozenset({"name"}), required=("name",)),
    "list": ActionSpec(_list),
    "remove": ActionSpec(_remove, frozenset({"name"}), required=("name",)),
}
assert set(ACTIONS) == set(get_args(Action)), "every action needs a row in ACTIONS"


def run_mcp_servers(call: McpServersCall) -> CallToolResult:
    result = run_action(call, ACTIONS[call.action])
    assert isinstance(result, CallToolResult)  # no action here asks the user
    return result


def mcp_servers(
    action: Annotated[
        Action,
        Field(description="What to do: list, show, add, update or remove (see the description)."),
    ],
    name: Annotated[
        str | None,
        Field(
            description="show/update/remove: the server's name.",
            json_schema_extra={"maxLength": 64},
        ),
    ] = None,
    definition: Annotated[
        dict[str, Any] | None,
        Field(description="add: name, url, headers. update: url and/or headers."),
    ] = None,
) -> Annotated[CallToolResult, McpServersOutput]:
    return run_mcp_servers(McpServersCall(action=action, name=name, definition=definition))


def build_tool() -> Tool:
    # remove and update replace what was there
    return domain_tool(mcp_servers, TOOL_NAME, TOOL_TITLE, DESCRIPTION, destructive=True)
