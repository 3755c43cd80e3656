"""The authenticated principal of the current HTTP request (set by the authorizer)."""

from __future__ import annotations

from aws_lambda_powertools.event_handler.api_gateway import Router

from agentworks.errors import Unauthenticated
from agentworks.identity.models import Principal


def current_principal(router: Router) -> Principal:
    context = router.current_event.request_context.authorizer.get_lambda or {}
    if "account_id" not in context:
        raise Unauthenticated("This route needs 'Authorization: Bearer <token>'.")
    return Principal.from_context(context)
