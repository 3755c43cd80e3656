"""/v1/webhooks: outbound webhooks for conversation events (C6; account admins)."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body

from agentworks.conversation_webhooks.models import (
    CreateWebhook,
    DeletedWebhook,
    WebhookDeliveries,
    WebhookList,
    WebhookView,
)
from agentworks.http_api.params import PathId
from agentworks.http_api.principal import current_principal
from agentworks.http_api.responses import documented
from agentworks.runtime import services

router = Router()


@router.post(
    "/webhooks",
    summary="Subscribe a URL to conversation events (admin)",
    status_code=201,
    responses=documented(201, 400, 403, 409),
)
def create_webhook(request: Annotated[CreateWebhook, Body()]) -> WebhookView:
    return services().webhooks.create(current_principal(router), request)


@router.get(
    "/webhooks",
    summary="The account's conversation webhooks (admin)",
    responses=documented(200, 403),
)
def list_webhooks() -> WebhookList:
    return services().webhooks.list(current_principal(router))


@router.delete(
    "/webhooks/<webhook_id>",
    summary="Delete a conversation webhook (admin)",
    responses=documented(200, 403, 404),
)
def delete_webhook(webhook_id: PathId) -> DeletedWebhook:
    return services().webhooks.delete(current_principal(router), webhook_id)


@router.get(
    "/webhooks/<webhook_id>/deliveries",
    summary="A webhook's newest deliveries, with each attempt's status (admin)",
    responses=documented(200, 403, 404),
)
def webhook_deliveries(webhook_id: PathId) -> WebhookDeliveries:
    return services().webhooks.deliveries(current_principal(router), webhook_id)
