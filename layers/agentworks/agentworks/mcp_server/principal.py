"""Who an MCP tool call acts as: set per request by the handler, read by tool code.

A context variable (not a global) so concurrent requests in one process never see each
other's principal; asyncio tasks and anyio worker threads inherit it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from agentworks.errors import Unauthenticated
from agentworks.identity.models import Principal

_current: ContextVar[Principal | None] = ContextVar("agentworks_mcp_principal", default=None)


@contextmanager
def acting_as(principal: Principal) -> Iterator[Principal]:
    """Tool calls made inside this block act as `principal`."""
    token = _current.set(principal)
    try:
        yield principal
    finally:
        _current.reset(token)


def acting_principal() -> Principal | None:
    """The principal of this request, or None outside one."""
    return _current.get()


def current_principal() -> Principal:
    principal = _current.get()
    if principal is None:
        # Only reachable if the endpoint is wired without the authorizer.
        raise Unauthenticated("This endpoint needs 'Authorization: Bearer <token>'.")
    return principal


def principal_from_event(event: dict[str, Any]) -> Principal | None:
    """The principal the HTTP API Lambda authorizer put in an API Gateway v2 event, if any."""
    request_context = event.get("requestContext") or {}
    authorizer = request_context.get("authorizer") or {}
    context = authorizer.get("lambda") or {}
    if not isinstance(context, dict):
        return None
    if not context.get("account_id") or not context.get("connection_id"):
        return None
    try:
        return Principal.from_context(context)
    except (KeyError, TypeError, ValueError, json.JSONDecodeError):
        return None
