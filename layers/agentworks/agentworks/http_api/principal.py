"""The authenticated principal of the current HTTP request (set by the authorizer)."""

from __future__ import annotations

from typing import cast

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEventV2

from agentworks.errors import Unauthenticated
from agentworks.identity.models import Principal


def current_principal(router: Router) -> Principal:
    event = cast(APIGatewayProxyEventV2, router.current_event)
    context = event.request_context.authorizer.get_lambda or {}
    if "account_id" not in context:
        raise Unauthenticated("This route needs 'Authorization: Bearer <token>'.")
    return Principal.from_context(context)
