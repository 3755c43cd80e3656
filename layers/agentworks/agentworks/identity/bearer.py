"""Bearer authentication inside the functions (A3): the one middleware of the api and mcp
functions.

An HTTP API Lambda authorizer cannot give its denial a body of ours (clients would get
API Gateway's `{"message": "Forbidden"}`), and costs a second Lambda invocation per request.
So each function resolves the token itself: one GetItem of the connection, no caching,
so a revocation counts on the very next request.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentworks.errors import Unauthenticated
from agentworks.identity.models import Principal
from agentworks.observability import count, logger

PUBLIC_PATHS = frozenset({"/v1/openapi.json"})
# Webhook triggers (W11): the sender signs the body with the trigger's secret instead.
PUBLIC_PREFIXES = ("/v1/hooks/",)


def bearer_token(headers: Mapping[str, Any] | None) -> str:
    """The token of an `Authorization: Bearer <token>` header ("" when there is none).

    API Gateway lower-cases header names in payload 2.0; any case is accepted anyway."""
    for name, value in (headers or {}).items():
        if str(name).lower() == "authorization" and isinstance(value, str):
            scheme, _, token = value.strip().partition(" ")
            return token.strip() if scheme.lower() == "bearer" else ""
    return ""


def authenticate_event(event: Mapping[str, Any]) -> Principal:
    """The principal of an API Gateway v2 event, or `Unauthenticated` (one message for a
    missing, malformed, unknown, expired or revoked token: which one is not told)."""
    from agentworks.relays.credentials import is_run_credential
    from agentworks.runtime import identity_only, run_credentials

    token = bearer_token(event.get("headers"))
    try:
        if is_run_credential(token):  # relay code calling back, as its run's caller
            principal = run_credentials().authenticate(token)
        else:
            principal = identity_only().authenticate(token)
    except Unauthenticated:
        count("AuthenticationRefused")
        raise
    logger.append_keys(account_id=principal.account_id, connection_id=principal.connection_id)
    return principal
