"""/v1/conversations: pause, resume, close and delete a conversation with a Crew (C4)."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body, Path

from agentworks.crews.models import ConversationControl, ConversationStatusView
from agentworks.http_api.principal import current_principal
from agentworks.http_api.responses import documented
from agentworks.runtime import services

router = Router()

_INBOX = Annotated[str, Path(max_length=64)]


@router.post(
    "/conversations/<inbox_id>/pause",
    summary="Pause a conversation: no new runs start in it until it resumes",
    responses=documented(200, 400, 403, 404, 409),
)
def pause(
    inbox_id: _INBOX, request: Annotated[ConversationControl, Body()]
) -> ConversationStatusView:
    return services().crews.controls.pause(current_principal(router), inbox_id, request.agent_name)


@router.post(
    "/conversations/<inbox_id>/resume",
    summary="Resume a paused conversation: what arrived meanwhile starts its runs",
    responses=documented(200, 400, 403, 404, 409),
)
def resume(
    inbox_id: _INBOX, request: Annotated[ConversationControl, Body()]
) -> ConversationStatusView:
    return services().crews.controls.resume(current_principal(router), inbox_id, request.agent_name)


@router.post(
    "/conversations/<inbox_id>/close",
    summary="Close a conversation for good: its open requests are cancelled",
    responses=documented(200, 400, 403, 404, 409),
)
def close(
    inbox_id: _INBOX, request: Annotated[ConversationControl, Body()]
) -> ConversationStatusView:
    return services().crews.controls.close(current_principal(router), inbox_id, request.agent_name)


@router.delete(
    "/conversations/<inbox_id>",
    summary="Delete a conversation (account admins): closed, then its messages deleted",
    responses=documented(200, 400, 403, 404),
)
def delete(inbox_id: _INBOX) -> ConversationStatusView:
    return services().crews.controls.delete(current_principal(router), inbox_id)
