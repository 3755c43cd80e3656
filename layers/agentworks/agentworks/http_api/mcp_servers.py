"""/v1/mcp-servers: the account's attached MCP servers (issue 28) — attach, list, show with
their tools, update (rotates the secret), remove, and call one of their tools. The rules
live in `McpServers`; no answer ever carries a header's value."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body, Path, Query

from agentworks.http_api.principal import current_principal
from agentworks.http_api.responses import documented
from agentworks.mcp_servers.views import (
    McpServerList,
    McpServerRemoved,
    McpServerView,
    McpToolCallResult,
)
from agentworks.runtime import services

router = Router()

_NAME = Path(max_length=64)
_TOOL = Path(max_length=128)


def _view(found: Any, shown: Any = None) -> McpServerView:
    from agentworks.mcp_servers.presentation import server_view

    return server_view(found, shown)


@router.post(
    "/mcp-servers",
    summary="Attach an MCP server: name, url and the headers to send (account admin)",
    status_code=201,
    responses=documented(201, 400, 403, 409),
)
def add_mcp_server(definition: Annotated[dict[str, Any], Body()]) -> McpServerView:
    return _view(services().mcp_servers.add(current_principal(router), definition))


@router.get(
    "/mcp-servers",
    summary="The account's attached MCP servers (account admin)",
    responses=documented(200, 403),
)
def list_mcp_servers() -> McpServerList:
    found = services().mcp_servers.list(current_principal(router))
    return McpServerList(mcp_servers=[_view(s) for s in found])


@router.get(
    "/mcp-servers/<name>",
    summary="One attached MCP server with its tools (account admin)",
    responses=documented(200, 400, 403, 404),
)
def show_mcp_server(name: Annotated[str, _NAME]) -> McpServerView:
    shown = services().mcp_servers.show(current_principal(router), name)
    return _view(shown.server, shown)


@router.patch(
    "/mcp-servers/<name>",
    summary="Change an MCP server's url and/or headers (new headers rotate its secret)",
    responses=documented(200, 400, 403, 404, 409),
)
def update_mcp_server(
    name: Annotated[str, _NAME], change: Annotated[dict[str, Any], Body()]
) -> McpServerView:
    return _view(services().mcp_servers.update(current_principal(router), name, change))


@router.delete(
    "/mcp-servers/<name>",
    summary="Remove an attached MCP server and its secret (account admin)",
    responses=documented(200, 400, 403, 404),
)
def remove_mcp_server(name: Annotated[str, _NAME]) -> McpServerRemoved:
    removed = services().mcp_servers.remove(current_principal(router), name)
    return McpServerRemoved(name=removed.name, removed=True)


@router.post(
    "/mcp-servers/<name>/tools/<tool>:call",
    summary="Call a tool of an attached MCP server (account admin with mcp-servers:call, "
    "relay code whose Relay's mcp_tools admits the tool, or a lambda adapter's agent with "
    "its turn's call token)",
    responses=documented(200, 400, 403, 404, 409, 502),
)
def call_mcp_tool(
    name: Annotated[str, _NAME],
    tool: Annotated[str, _TOOL],
    arguments: Annotated[dict[str, Any], Body()],
    timeout: Annotated[float | None, Query(gt=0)] = None,
    step: Annotated[str | None, Query(max_length=100)] = None,
) -> McpToolCallResult:
    context = router.lambda_context
    remaining = context.get_remaining_time_in_millis() / 1000 if context is not None else None
    principal = current_principal(router)
    relay_calls = services().relays.mcp_calls
    if principal.relay_run is not None and relay_calls is not None:
        # Relay code with its run's credential: admitted by the run's release, recorded on it.
        result = relay_calls.call(
            principal, name, tool, arguments, timeout=timeout, step=step, time_left=remaining
        )
    elif principal.mcp_grant is not None:
        # A lambda adapter's agent with its turn's call token: recorded for that turn.
        result = services().mcp_token_calls.call(
            principal, name, tool, arguments, timeout=timeout, time_left=remaining
        )
    else:
        result = services().mcp_servers.call(
            principal, name, tool, arguments, timeout=timeout, time_left=remaining
        )
    return McpToolCallResult(
        server=name.lower(),
        tool=tool,
        is_error=result.is_error,
        content=result.content,
        structured_content=result.structured_content,
    )
