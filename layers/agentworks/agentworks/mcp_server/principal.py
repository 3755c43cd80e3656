"""Who an MCP tool call acts as: set per request by the handler, read by tool code.

A context variable (not a global) so concurrent requests in one process never see each
other's principal; asyncio tasks and anyio worker threads inherit it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

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
        # Only reachable if a tool runs outside handle_event's authenticated block.
        raise Unauthenticated("This endpoint needs 'Authorization: Bearer <token>'.")
    return principal
