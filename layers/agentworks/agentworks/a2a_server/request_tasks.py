"""A text message to a Crew is a request in a conversation with it (C1), read as an A2A
Task (issue 30 §1): one record, the request's delivery, no second store.

Task.id is the request's message id; the context is the caller's inbox (a follow-up with
that contextId continues the conversation); the Crew's reply is the `reply` artifact; a
question its run waits on is the status message, answered as a call's is.
"""

from __future__ import annotations

from a2a.helpers.proto_helpers import new_text_part
from a2a.types.a2a_pb2 import Artifact, Message, Task, TaskState, TaskStatus

from agentworks.a2a_server.parts import agent_message, question_message, struct
from agentworks.conversations.inbox_models import ConversationDetail, PendingQuestion
from agentworks.conversations.models import RequestView
from agentworks.ids import parse_message_id

STATES: dict[str, TaskState] = {
    "waiting_for_review": TaskState.TASK_STATE_SUBMITTED,
    "received": TaskState.TASK_STATE_SUBMITTED,
    "in_progress": TaskState.TASK_STATE_WORKING,
    "answered": TaskState.TASK_STATE_COMPLETED,
    "declined": TaskState.TASK_STATE_REJECTED,
    "couldnt_complete": TaskState.TASK_STATE_FAILED,
    "expired": TaskState.TASK_STATE_FAILED,
    "cancelled": TaskState.TASK_STATE_CANCELED,
}
REPLY_ARTIFACT = "reply"


def asker_inbox(message_id: str) -> str:
    """The inbox the request was sent from (its id names the side it went to)."""
    return parse_message_id(message_id).inbox.peer.inbox_id


def request_of(detail: ConversationDetail, message_id: str) -> RequestView | None:
    return next((r for r in detail.requests if r.message_id == message_id), None)


def question_of(detail: ConversationDetail, request: RequestView) -> PendingQuestion | None:
    """The question the request's run waits on, if the caller may answer it."""
    if request.run_id is None:
        return None
    return next((q for q in detail.questions if q.run_id == request.run_id), None)


def request_task(detail: ConversationDetail, request: RequestView) -> Task:
    task_id, context_id = request.message_id, asker_inbox(request.message_id)
    asked = question_of(detail, request)
    state = STATES[request.state]
    message: Message | None = None
    if asked is not None and request.state == "in_progress":
        state = TaskState.TASK_STATE_INPUT_REQUIRED
        message = question_message(task_id, context_id, {asked.request_id: asked.question})
    elif request.reason and request.state != "answered":
        message = agent_message(task_id, context_id, request.state, [request.reason])
    task = Task(
        id=task_id,
        context_id=context_id,
        status=TaskStatus(state=state, message=message),
    )
    task.status.timestamp.FromJsonString(request.updated_at)
    replies = [m.body for m in detail.messages if m.in_reply_to == task_id]
    if replies:
        task.artifacts.append(
            Artifact(
                artifact_id=REPLY_ARTIFACT,
                name=REPLY_ARTIFACT,
                parts=[new_text_part(r) for r in replies],
            )
        )
    raw = {
        "state": request.state,
        "label": request.label,
        "conversation_id": detail.conversation_id,
        "deadline_at": request.deadline_at,
        "run_id": request.run_id,
    }
    task.metadata.CopyFrom(struct({"agentworks": raw}))
    return task
