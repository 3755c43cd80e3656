"""HTTP API Lambda authorizer (simple responses): bearer token → principal context (A3).

Its one read of the connection also carries the names the connection may act as
(`acting_as`, M5), so handlers authorize a named side without reading a registration.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.logging import correlation_paths

from agentworks.errors import Unauthenticated
from agentworks.identity.service import IdentityService
from agentworks.observability import count, logger, metrics, tracer


def _identity() -> IdentityService:
    from agentworks.runtime import identity_only

    return identity_only()


def _bearer(event: dict[str, Any]) -> str:
    headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
    value = headers.get("authorization", "")
    scheme, _, token = value.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    try:
        principal = _identity().authenticate(_bearer(event))
    except Unauthenticated:
        logger.info("token refused")
        count("AuthorizerRefused")
        return {"isAuthorized": False}
    logger.append_keys(account_id=principal.account_id, connection_id=principal.connection_id)
    return {"isAuthorized": True, "context": principal.to_context()}
