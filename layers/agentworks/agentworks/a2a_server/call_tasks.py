"""A function call read as an A2A Task (issue 30 §1): one record, no second store.

Task.id is the call_id; the call's state maps to the task's, the raw state rides in the
task's metadata, a succeeded call's outcome is the `result` artifact, and a pending question
is the status message (a2a_server.parts: a data part `{request_id: question}`, answered by
a data part `{request_id: answer}` sent to the same task).
"""

from __future__ import annotations

from typing import Any

from a2a.helpers.proto_helpers import new_data_part, new_text_part
from a2a.types.a2a_pb2 import Artifact, Message, Part, Task, TaskState, TaskStatus

from agentworks.a2a_server.parts import agent_message, question_message, struct

STATES: dict[str, TaskState] = {
    "accepted": TaskState.TASK_STATE_SUBMITTED,
    "running": TaskState.TASK_STATE_WORKING,
    "input_required": TaskState.TASK_STATE_INPUT_REQUIRED,
    "succeeded": TaskState.TASK_STATE_COMPLETED,
    "failed": TaskState.TASK_STATE_FAILED,
    "interrupted": TaskState.TASK_STATE_FAILED,
    "cancelled": TaskState.TASK_STATE_CANCELED,
}
# The A2A states a ListTasks filter may name, back to the calls' states.
CALL_STATES_OF: dict[TaskState, frozenset[str]] = {
    task_state: frozenset(s for s, t in STATES.items() if t == task_state)
    for task_state in set(STATES.values())
}
RESULT_ARTIFACT = "result"


def task_state(status: dict[str, Any]) -> TaskState:
    """A call that ended failed before any turn ran was refused before it started."""
    if status["state"] == "failed" and not status.get("turns"):
        return TaskState.TASK_STATE_REJECTED
    return STATES[status["state"]]


def call_task(status: dict[str, Any], include_artifacts: bool = True) -> Task:
    """The Task of one call, from its status (crews.calls.call_status)."""
    call_id = status["call_id"]
    task = Task(
        id=call_id,
        context_id=call_id,
        status=TaskStatus(state=task_state(status), message=_status_message(status)),
    )
    if status.get("updated_at"):
        task.status.timestamp.FromJsonString(status["updated_at"])
    if include_artifacts and status["state"] == "succeeded":
        task.artifacts.append(_result_artifact(status))
    task.metadata.CopyFrom(struct({"agentworks": _raw(status)}))
    return task


def _status_message(status: dict[str, Any]) -> Message | None:
    call_id = status["call_id"]
    asked = status.get("pending_inputs") or []
    if status["state"] == "input_required" and asked:
        return question_message(call_id, call_id, {p["request_id"]: p["question"] for p in asked})
    if status["state"] in ("failed", "interrupted", "cancelled") and status.get("errors"):
        return agent_message(call_id, call_id, status["state"], list(status["errors"]))
    return None


def _result_artifact(status: dict[str, Any]) -> Artifact:
    parts: list[Part] = []
    if status.get("result") is not None:
        parts.append(new_data_part(status["result"], media_type="application/json"))
    if status.get("final_text"):
        parts.append(new_text_part(status["final_text"]))
    artifact = Artifact(artifact_id=RESULT_ARTIFACT, name=RESULT_ARTIFACT, parts=parts)
    files = list(status.get("files") or [])
    if files or status.get("result_file"):
        # Read with GET /v1/calls/{call_id}/files?path=… (a page of 2 MiB at a time).
        artifact.metadata.CopyFrom(
            struct({"files": files, "result_file": status.get("result_file")})
        )
    return artifact


def _raw(status: dict[str, Any]) -> dict[str, Any]:
    return {
        "state": status["state"],
        "target": status["target"],
        "function": status["function"],
        "turns": status.get("turns", 0),
        "cost_usd": status.get("cost_usd", 0.0),
        "created_at": status.get("created_at"),
    }
