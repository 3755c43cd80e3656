"""The MCP tasks extension (`io.modelcontextprotocol/tasks`, 2026-07-28) on the official
client's side, written from the extension's specification with the SDK's ClientExtension
API (the SDK ships no tasks runtime): it declares the extension on every request, claims
`resultType: "task"` results of tools/call, and sends tasks/get, tasks/update and
tasks/cancel. `resolve` is what a host does with a task: poll, put its questions to the
client's elicitation callback, answer with tasks/update, and return the final result.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Literal

import anyio
from mcp.client import ClientSession
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.session import ClientRequestContext
from mcp.types import CallToolResult, ElicitRequest, ElicitResult
from mcp_types import Request, RequestParams, Result
from pydantic import TypeAdapter

TASKS = "io.modelcontextprotocol/tasks"
TERMINAL = {"completed", "failed", "cancelled"}


class TaskIdParams(RequestParams):
    task_id: str


class UpdateParams(TaskIdParams):
    input_responses: dict[str, Any]


class GetTask(Request[TaskIdParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskIdParams
    name_param = "taskId"  # the extension: Mcp-Name carries the taskId


class UpdateTask(Request[UpdateParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    params: UpdateParams
    name_param = "taskId"


class CancelTask(Request[TaskIdParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: TaskIdParams
    name_param = "taskId"


class CreateTaskResult(Result):
    result_type: Literal["task"] = "task"
    task_id: str
    status: str
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None
    poll_interval_ms: int | None = None


class DetailedTask(Result):
    """tasks/get's answer: a Task plus its questions, result or error."""

    result_type: str = "complete"
    task_id: str
    status: str
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None
    poll_interval_ms: int | None = None
    input_requests: dict[str, Any] | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


async def get_task(session: ClientSession, task_id: str) -> DetailedTask:
    request = GetTask(params=TaskIdParams(task_id=task_id))
    return await session.send_request(request, DetailedTask)


async def update_task(session: ClientSession, task_id: str, responses: dict[str, Any]) -> Result:
    request = UpdateTask(params=UpdateParams(task_id=task_id, input_responses=responses))
    return await session.send_request(request, Result)


async def cancel_task(session: ClientSession, task_id: str) -> Result:
    request = CancelTask(params=TaskIdParams(task_id=task_id))
    return await session.send_request(request, Result)


_INPUT_REQUEST: TypeAdapter[Any] = TypeAdapter(ElicitRequest)


async def follow(session: ClientSession, task_id: str, timeout: float = 30) -> DetailedTask:
    """Polls tasks/get until terminal; each question (once per key) goes to the client's
    elicitation callback and its response back with tasks/update."""
    answered: set[str] = set()
    deadline = time.monotonic() + timeout
    while True:
        task = await get_task(session, task_id)
        if task.status in TERMINAL:
            return task
        for key, raw in (task.input_requests or {}).items():
            if key in answered:
                continue  # the extension: deduplicate keys across polls
            request = _INPUT_REQUEST.validate_python(raw)
            context = ClientRequestContext(session=session, request_id=key)
            response = await session.dispatch_input_request(context, request)
            assert isinstance(response, ElicitResult), response
            await update_task(
                session, task_id, {key: response.model_dump(by_alias=True, exclude_none=True)}
            )
            answered.add(key)
        assert time.monotonic() < deadline, task
        await anyio.sleep(min((task.poll_interval_ms or 1000) / 1000, 0.05))


async def _resolve(created: CreateTaskResult, context: ClaimContext) -> CallToolResult:
    task = await follow(context.session, created.task_id)
    assert task.status == "completed", task  # a cancelled or failed task has no tool result
    return CallToolResult.model_validate(task.result)


class TasksClient(ClientExtension):
    identifier = TASKS

    def claims(self) -> Sequence[ResultClaim[Any]]:
        return (ResultClaim(result_type="task", model=CreateTaskResult, resolve=_resolve),)
