"""The authenticated principal of the current HTTP request.

`authenticate` runs in `app.resolve` before routing and before request validation, so an
unauthenticated caller learns nothing about routes or bodies: every path but the public
ones (`identity.bearer.PUBLIC_PATHS`) needs a token that resolves to a principal.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_lambda_powertools.event_handler.api_gateway import BaseRouter, Router

from agentworks.authentication import authenticate_event
from agentworks.errors import Unauthenticated
from agentworks.identity.bearer import PUBLIC_PATHS, PUBLIC_PREFIXES
from agentworks.identity.models import Principal

_KEY = "principal"


def authenticate(resolver: BaseRouter, event: Mapping[str, Any]) -> None:
    """Puts the event's principal in the resolver's context (cleared after each request);
    raises `Unauthenticated` when the path needs one and the token resolves to none."""
    path = str(event.get("rawPath") or "")
    if path not in PUBLIC_PATHS and not path.startswith(PUBLIC_PREFIXES):
        resolver.append_context(**{_KEY: authenticate_event(event)})


def current_principal(router: Router) -> Principal:
    principal = router.context.get(_KEY)
    if not isinstance(principal, Principal):
        # Only reachable for a public path whose route still asks who is calling.
        raise Unauthenticated("This route needs 'Authorization: Bearer <token>'.")
    return principal
