"""/v1/requests: requests in conversations with a Crew and where they stand (C1, C2).

Requests, replies and notes are sent with POST /v1/messages (`kind`); these routes show
and cancel them.
"""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body, Query

from agentworks.conversations.models import CancelRequest, RequestList, RequestView
from agentworks.http_api.params import PathId
from agentworks.http_api.principal import current_principal
from agentworks.http_api.responses import documented
from agentworks.runtime import services

router = Router()


@router.get(
    "/requests",
    summary="The requests of a conversation with a Crew, newest first, with their states",
    responses=documented(200, 400, 403, 404, 410),
)
def list_requests(
    inbox_id: Annotated[str, Query(max_length=64)],
    agent_name: Annotated[str | None, Query(max_length=200)] = None,
) -> RequestList:
    return services().crews.requests.of_inbox(current_principal(router), inbox_id, agent_name)


@router.post(
    "/requests/<message_id>/cancel",
    summary="Cancel a request you sent that is still open",
    responses=documented(200, 400, 403, 404, 409, 410),
)
def cancel_request(
    message_id: PathId,
    request: Annotated[CancelRequest, Body()],
) -> RequestView:
    return services().crews.requests.cancel(
        current_principal(router), message_id, request.agent_name
    )
