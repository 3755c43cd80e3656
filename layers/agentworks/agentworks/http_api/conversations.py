"""/v1/conversations: the conversations you may see (C5, the Inbox), and pause, resume, close
and delete a conversation with a Crew (C4)."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.api_gateway import Response, Router
from aws_lambda_powertools.event_handler.openapi.params import Body, Query

from agentworks import limits
from agentworks.conversations.inbox_models import ConversationDetail, ConversationList, Tab
from agentworks.conversations.models import ConversationControl, ConversationStatusView
from agentworks.conversations.stepping_in import AnswerForAgent
from agentworks.http_api.params import AfterCursor, PathId
from agentworks.http_api.principal import current_principal
from agentworks.http_api.responses import documented, new_or_replayed, or_replayed
from agentworks.messaging.models import SendReceipt
from agentworks.runtime import services

router = Router()

_Control = Annotated[ConversationControl, Body()]


@router.get(
    "/conversations",
    summary="The conversations you may see, newest first, in the Inbox's tabs (C5)",
    responses=documented(200, 400, 403),
)
def list_conversations(
    tab: Annotated[Tab | None, Query()] = None,
    agent: Annotated[str | None, Query(max_length=200)] = None,
    after: AfterCursor = None,
    limit: Annotated[int | None, Query(ge=1, le=limits.CONVERSATIONS_PAGE_MAX)] = None,
) -> ConversationList:
    return services().crews.inbox.listing(current_principal(router), tab, agent, after, limit)


@router.get(
    "/conversations/<conversation_id>",
    summary="One conversation: its messages, requests and what waits for you (C5)",
    responses=documented(200, 400, 403, 404),
)
def show_conversation(conversation_id: PathId) -> ConversationDetail:
    return services().crews.inbox.show(current_principal(router), conversation_id)


@router.post(
    "/conversations/<inbox_id>/pause",
    summary="Pause a conversation: no new runs start in it until it resumes",
    responses=documented(200, 400, 403, 404, 409),
)
def pause(inbox_id: PathId, request: _Control) -> ConversationStatusView:
    return services().crews.controls.pause(current_principal(router), inbox_id, request.agent_name)


@router.post(
    "/conversations/<inbox_id>/resume",
    summary="Resume a paused conversation: what arrived meanwhile starts its runs",
    responses=documented(200, 400, 403, 404, 409),
)
def resume(inbox_id: PathId, request: _Control) -> ConversationStatusView:
    return services().crews.controls.resume(current_principal(router), inbox_id, request.agent_name)


@router.post(
    "/conversations/<inbox_id>/close",
    summary="Close a conversation for good: its open requests are cancelled",
    responses=documented(200, 400, 403, 404, 409),
)
def close(inbox_id: PathId, request: _Control) -> ConversationStatusView:
    return services().crews.controls.close(current_principal(router), inbox_id, request.agent_name)


@router.delete(
    "/conversations/<inbox_id>",
    summary="Delete a conversation (account admins): closed, then its messages deleted",
    responses=documented(200, 400, 403, 404),
)
def delete(inbox_id: PathId) -> ConversationStatusView:
    return services().crews.controls.delete(current_principal(router), inbox_id)


@router.post(
    "/conversations/<inbox_id>/answer",
    summary="Answer for a Crew you can edit: a note, request or reply marked as written by you",
    responses=or_replayed(
        documented(201, 400, 403, 404, 409, 413, 429, description="Sent"), "receipt"
    ),
)
def answer_for_agent(
    inbox_id: PathId, request: Annotated[AnswerForAgent, Body()]
) -> Response[SendReceipt]:
    receipt = services().crews.stepping_in.answer_for(current_principal(router), inbox_id, request)
    return new_or_replayed(receipt, 201)
