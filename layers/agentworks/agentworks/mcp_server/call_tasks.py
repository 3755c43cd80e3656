"""A function call as an MCP task (the `io.modelcontextprotocol/tasks` extension).

The task is the call record, read as `action=status` reads it: taskId = call_id, and its
status, result and questions are derived from the same status body on every read, so a
task and the call's status over HTTP, MCP or the CLI never disagree (there is no second
store). Wire shapes (camelCase) as the extension's 2026-07-28 specification gives them.
"""

from __future__ import annotations

from typing import Any

from mcp.types import CallToolResult, TextContent

from agentworks import limits
from agentworks.mcp_server.functions_tool import status_text
from agentworks.mcp_server.questions import elicitation

# The call's states as task statuses. A call that failed or was interrupted ran to its
# end without a protocol error: per the extension it is `completed`, its result isError.
_STATUS = {
    "accepted": "working",
    "running": "working",
    "input_required": "input_required",
    "succeeded": "completed",
    "failed": "completed",
    "interrupted": "completed",
    "cancelled": "cancelled",
}


def task_status(status: dict[str, Any]) -> str:
    """The task status of a call's status body."""
    if status["state"] == "input_required" and not status["pending_inputs"]:
        return "working"  # answered a moment ago: nothing is outstanding any more
    return _STATUS[status["state"]]


def _message(status: dict[str, Any]) -> str:
    state = status["state"]
    if state == "input_required" and status["pending_inputs"]:
        return "Waiting for an answer: " + status["pending_inputs"][0]["question"]
    if status["errors"] and state != "succeeded":
        return f"{state}: " + "; ".join(status["errors"])
    if status["progress"] and not status["terminal"]:
        return str(status["progress"][-1])
    return f"{status['target']} {status['function']}: {state}"


def task(status: dict[str, Any]) -> dict[str, Any]:
    """The `Task` of a call (what `tools/call` returns as its CreateTaskResult)."""
    return {
        "taskId": status["call_id"],
        "status": task_status(status),
        "statusMessage": _message(status)[:1000],
        "createdAt": status["created_at"],
        "lastUpdatedAt": status["updated_at"],
        # The call record is kept for good (its files for 7 days): no TTL to announce.
        "ttlMs": None,
        "pollIntervalMs": limits.MCP_TASK_POLL_INTERVAL_MS,
    }


def created(status: dict[str, Any]) -> dict[str, Any]:
    """`tools/call`'s CreateTaskResult for an accepted (or replayed) call."""
    return {"resultType": "task", **task(status)}


def detailed(status: dict[str, Any]) -> dict[str, Any]:
    """`tasks/get`'s DetailedTask: the questions of an `input_required` task, the final
    `CallToolResult` of a `completed` one (what action=status returns at the end)."""
    shown = task(status)
    if shown["status"] == "input_required":
        shown["inputRequests"] = {
            p["request_id"]: elicitation(status, p).model_dump(
                by_alias=True, mode="json", exclude_none=True
            )
            for p in status["pending_inputs"]
        }
    elif shown["status"] == "completed":
        result = CallToolResult(
            content=[TextContent(type="text", text=status_text(status))],
            structured_content=status,
            is_error=status["state"] != "succeeded",
        )
        shown["result"] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    return shown
