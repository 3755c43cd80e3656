"""A tool whose every failure has the product's error shape.

The SDK reports argument-schema violations and crashes as bare text; this `Tool`
subclass turns them into `invalid_request` / `internal` error results like the HTTP
API's, and never lets a traceback or an exception's text reach the caller.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.tools import Tool
from mcp.types import ToolAnnotations
from pydantic import ValidationError

from agentworks.errors import AgentWorksError
from agentworks.mcp_server.results import error_result, invalid_arguments
from agentworks.observability import logger


class InternalError(AgentWorksError, status=500, code="internal"):
    pass


def transient(cause: BaseException | None) -> AgentWorksError | None:
    """Throttling that outlasted the retries is the caller's to retry, not a crash."""
    from botocore.exceptions import ClientError

    from agentworks.dynamo import retry_later

    return retry_later(cause) if isinstance(cause, ClientError) else None


class DomainTool(Tool):
    async def run(
        self, arguments: dict[str, Any], context: Any, convert_result: bool = False
    ) -> Any:
        try:
            return await super().run(arguments, context, convert_result=convert_result)
        except UnexpectedToolError as crash:
            transient_error = transient(crash.__cause__)
            if transient_error is not None:
                return error_result(transient_error)
            # The log has the cause; the caller gets a generic message (never the text).
            logger.exception("tool crashed", extra={"tool": self.name}, exc_info=crash.__cause__)
            return error_result(InternalError("Internal error; retry later."))
        except ToolError as refused:
            if isinstance(refused.__cause__, ValidationError):
                return error_result(invalid_arguments(refused.__cause__))
            if isinstance(refused.__cause__, AgentWorksError):
                return error_result(refused.__cause__)
            raise


def domain_tool(
    function: Callable[..., Any],
    name: str,
    title: str,
    description: str,
    destructive: bool | None = None,
    read_only: bool = False,
) -> Tool:
    """A tool as every AgentWorks tool is built: structured output, the product's error
    shape, and annotations saying it acts (not idempotent) on this account only (not open
    world); `destructive` when an action replaces or deletes what was there, `read_only`
    when it only reads."""
    return DomainTool.from_function(
        function,
        name=name,
        title=title,
        description=description,
        annotations=ToolAnnotations(
            title=title,
            read_only_hint=read_only,
            destructive_hint=destructive,
            idempotent_hint=False,
            open_world_hint=False,
        ),
        structured_output=True,
    )
