"""The MCP tasks extension (`io.modelcontextprotocol/tasks`, 2026-07-28) over function calls.

A client that declares the extension on its request gets a task from `functions
action=call` on a Crew (`resultType: "task"`, taskId = call_id) and follows it with
`tasks/get`, answers its questions with `tasks/update`, ends it with `tasks/cancel`. Every
method reads and writes the call through `FunctionCalls`, as the tool and `/v1/calls` do:
the same principal, scopes, bounds and refusals (another account's call id is refused with
the very bytes of an unknown one). Clients that do not declare it keep the tool's
behaviour; a request for `tasks/*` without the declaration is refused with -32021.

A task's question is asked in its `inputRequests` (the elicitation form of action=status,
keyed by the question's request_id, unique over the call's life) and answered through
`tasks/update`, which holds no state of its own: the call record says what is outstanding.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from mcp.server.extension import Extension, MethodBinding
from mcp.server.mcpserver import require_client_extension
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult
from mcp_types import CallToolRequestParams, RequestParams
from mcp_types.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import Field

from agentworks import limits
from agentworks.crews.models import ReplyToCall
from agentworks.errors import AgentWorksError, Conflict, InvalidInput
from agentworks.identity.models import Principal
from agentworks.mcp_server import call_tasks
from agentworks.mcp_server.functions_tool import TOOL_NAME, calls
from agentworks.mcp_server.principal import current_principal
from agentworks.mcp_server.questions import accepted_answer
from agentworks.mcp_server.results import build_model
from agentworks.mcp_server.tooling import InternalError, transient
from agentworks.observability import logger

if TYPE_CHECKING:
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

TASKS = "io.modelcontextprotocol/tasks"


class TaskParams(RequestParams):
    """`tasks/get` and `tasks/cancel`: which task (its length checked by `_as_principal`,
    so the refusal has the product's error shape)."""

    task_id: str


class UpdateTaskParams(TaskParams):
    """`tasks/update`: answers to the task's `inputRequests`, keyed as they were asked."""

    input_responses: dict[str, Any] = Field(default_factory=dict)


def declared(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Whether this request's client declared the extension (per request, 2026-07-28)."""
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return False
    capabilities = ctx.session.client_capabilities
    return bool(capabilities and capabilities.extensions and TASKS in capabilities.extensions)


def _as_principal(task_id: str, run: Callable[[Principal], dict[str, Any]]) -> dict[str, Any]:
    """Runs `run` as the request's principal on `task_id`; a refusal becomes a JSON-RPC
    error whose data is the product's error body (an unknown task and another's: the same
    -32602 bytes)."""
    try:
        principal = current_principal()
        if not 1 <= len(task_id) <= limits.MCP_TASK_ID_MAX_CHARS:
            raise InvalidInput(
                f"taskId is 1–{limits.MCP_TASK_ID_MAX_CHARS} characters.", field="taskId"
            )
        return run(principal)
    except AgentWorksError as refused:
        raise _rpc_error(refused) from None
    except Exception as crash:
        retry = transient(crash)
        if retry is not None:
            raise _rpc_error(retry) from None
        # The log has the cause; the caller gets a generic message (never the text).
        logger.exception("tasks request failed")
        raise _rpc_error(InternalError("Internal error; retry later.")) from None


def _rpc_error(error: AgentWorksError) -> MCPError:
    code = INTERNAL_ERROR if error.status >= 500 else INVALID_PARAMS
    return MCPError(code, error.message, error.to_body())


def _get(principal: Principal, task_id: str) -> dict[str, Any]:
    return call_tasks.detailed(calls().status(principal, task_id))


def _update(principal: Principal, task_id: str, responses: dict[str, Any]) -> dict[str, Any]:
    """Accepted answers to outstanding questions go to `reply` (as action=reply's); keys
    not outstanding (never asked, answered already) and declined forms are ignored."""
    status = calls().status(principal, task_id)  # refuses an unknown or foreign task first
    for pending in status["pending_inputs"]:
        answer = accepted_answer(responses.get(pending["request_id"]))
        if answer is None:
            continue
        request = build_model(ReplyToCall, request_id=pending["request_id"], answer=answer)
        try:
            calls().reply(principal, task_id, request)
        except Conflict:
            # Answered or ended meanwhile: tasks/get shows what the call is now.
            logger.info("task answer not needed", extra={"call_id": task_id})
    return {}


def _cancel(principal: Principal, task_id: str) -> dict[str, Any]:
    try:
        calls().cancel(principal, task_id)
    except Conflict:
        calls().status(principal, task_id)  # ended already: acknowledged, if it is theirs
    return {}


async def get_task(ctx: ServerRequestContext[Any, Any], params: TaskParams) -> HandlerResult:
    require_client_extension(ctx, TASKS)
    return _as_principal(params.task_id, lambda principal: _get(principal, params.task_id))


async def update_task(
    ctx: ServerRequestContext[Any, Any], params: UpdateTaskParams
) -> HandlerResult:
    require_client_extension(ctx, TASKS)
    return _as_principal(
        params.task_id,
        lambda principal: _update(principal, params.task_id, params.input_responses),
    )


async def cancel_task(ctx: ServerRequestContext[Any, Any], params: TaskParams) -> HandlerResult:
    require_client_extension(ctx, TASKS)
    return _as_principal(params.task_id, lambda principal: _cancel(principal, params.task_id))


def _calls_a_crew(params: CallToolRequestParams) -> bool:
    arguments = params.arguments or {}
    target = arguments.get("target")
    return (
        params.name == TOOL_NAME
        and arguments.get("action") == "call"
        and isinstance(target, str)
        and target.strip().startswith("crew:")  # a workflow's or a Relay's run is no task
    )


class FunctionCallTasks(Extension):
    identifier = TASKS

    def methods(self) -> Sequence[MethodBinding]:
        versions = frozenset(MODERN_PROTOCOL_VERSIONS)
        return (
            MethodBinding("tasks/get", TaskParams, get_task, versions),
            MethodBinding("tasks/update", UpdateTaskParams, update_task, versions),
            MethodBinding("tasks/cancel", TaskParams, cancel_task, versions),
        )

    async def intercept_tool_call(
        self,
        params: CallToolRequestParams,
        ctx: ServerRequestContext[Any, Any],
        call_next: CallNext,
    ) -> HandlerResult:
        """`functions action=call` on a Crew, for a declaring client: the accepted call as
        a task. Refusals stay the tool's error results (no task was created)."""
        if not (_calls_a_crew(params) and declared(ctx)):
            return await call_next(ctx)
        result = await call_next(ctx)
        if isinstance(result, CallToolResult) and not result.is_error and result.structured_content:
            return call_tasks.created(result.structured_content)
        return result
