"""/v1/agents, /v1/messages and /v1/inboxes (M1–M8)."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.api_gateway import Response, Router
from aws_lambda_powertools.event_handler.openapi.params import Body, Path, Query

from agentworks import limits
from agentworks.conversations.messages_view_models import NamedConversationList
from agentworks.http_api.params import AfterCursor, PathId
from agentworks.http_api.principal import current_principal
from agentworks.http_api.responses import documented, new_or_replayed, or_replayed
from agentworks.messaging.models import (
    AckMessage,
    AckResult,
    AgentList,
    AgentUnregistered,
    AgentView,
    InboxState,
    ReadPage,
    RegisterAgent,
    SendMessage,
    SendReceipt,
)
from agentworks.runtime import services

router = Router()


@router.post(
    "/agents",
    summary="Register (or re-register) a named agent address",
    responses=documented(200, 400, 403, 404, 409, 413),
)
def register_agent(request: Annotated[RegisterAgent, Body()]) -> AgentView:
    return services().directory.register(current_principal(router), request)


@router.get(
    "/agents",
    summary="The account's directory of named agents",
    responses=documented(200, 403),
)
def list_agents(
    listening: Annotated[bool, Query(description="Say which names have a listener.")] = False,
) -> AgentList:
    listeners = services().push.listening.is_listening if listening else None
    return AgentList(agents=services().directory.list(current_principal(router), listeners))


@router.get(
    "/agents/conversations",
    summary="The account's conversations with a named agent, newest first (C5 the Messages "
    "view): bodies only to a connection that acts as one of its names",
    responses=documented(200, 400, 403),
)
def list_named_conversations(
    before: AfterCursor = None,
    limit: Annotated[int | None, Query(ge=1, le=limits.NAMED_CONVERSATIONS_PAGE_MAX)] = None,
) -> NamedConversationList:
    return services().crews.messages_view.listing(current_principal(router), before, limit)


@router.delete(
    "/agents/<agent_name>",
    summary="Unregister a named agent",
    responses=documented(200, 400, 403, 404),
)
def unregister_agent(agent_name: Annotated[str, Path(max_length=200)]) -> AgentUnregistered:
    services().directory.unregister(current_principal(router), agent_name)
    return AgentUnregistered(agent_name=agent_name, unregistered=True)


@router.post(
    "/messages",
    summary="Send a message (first contact or into an inbox)",
    responses=or_replayed(
        documented(201, 400, 403, 404, 409, 410, 413, 429, description="Sent"), "receipt"
    ),
)
def send_message(request: Annotated[SendMessage, Body()]) -> Response[SendReceipt]:
    receipt = services().messaging.send(current_principal(router), request)
    return new_or_replayed(receipt, 201)


@router.get(
    "/messages",
    summary="Read an inbox (inbox_id) or a name's mailbox (agent_name)",
    responses=documented(200, 400, 403, 404, 410),
)
def read_messages(
    inbox_id: Annotated[str | None, Query(max_length=64)] = None,
    agent_name: Annotated[str | None, Query(max_length=200)] = None,
    after: Annotated[str | None, Query(max_length=512)] = None,
    wait_seconds: Annotated[float | None, Query()] = None,
    limit: Annotated[int | None, Query()] = None,
) -> ReadPage:
    return services().messaging.read(
        current_principal(router),
        inbox_id=inbox_id,
        agent_name=agent_name,
        after=after,
        wait_seconds=wait_seconds,
        limit=limit,
    )


@router.post(
    "/messages/<message_id>/ack",
    summary="Move a received message's receipt forward",
    responses=documented(200, 400, 403, 404, 409, 413),
)
def ack_message(message_id: PathId, request: Annotated[AckMessage, Body()]) -> AckResult:
    return services().messaging.ack(current_principal(router), message_id, request.delivery)


@router.get(
    "/inboxes/<inbox_id>/state",
    summary="An inbox's state and delivery records",
    responses=documented(200, 400, 403, 404),
)
def inbox_state(
    inbox_id: PathId,
    agent_name: Annotated[str | None, Query(max_length=200)] = None,
) -> InboxState:
    return services().messaging.inbox_state(current_principal(router), inbox_id, agent_name)
