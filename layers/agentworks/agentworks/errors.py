"""Domain errors. Each maps once to one error shape on every surface (HTTP, MCP, CLI)."""

from __future__ import annotations

from typing import Any


class AgentWorksError(Exception):
    """Base error: `code` is stable for scripts, `message` says what to do."""

    status = 400
    code = "invalid_request"

    def __init_subclass__(
        cls, *, status: int | None = None, code: str | None = None, **kwargs: Any
    ) -> None:
        # A subclass declares its status and code in its header: one line says what it is.
        super().__init_subclass__(**kwargs)
        if status is not None:
            cls.status = status
        if code is not None:
            cls.code = code

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def to_body(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message, **self.details}}


class InvalidInput(AgentWorksError, status=400, code="invalid_request"):
    pass


class Unauthenticated(AgentWorksError, status=401, code="unauthenticated"):
    pass


class MissingScope(AgentWorksError, status=403, code="forbidden"):
    """The connection lacks a scope. Says nothing about any target, so it leaks nothing."""


class Unavailable(AgentWorksError, status=404, code="unavailable"):
    """Unknown and unauthorized look the same (A5)."""

    def __init__(self, message: str = "Not found or not available to this connection.") -> None:
        super().__init__(message)


class Expired(AgentWorksError, status=410, code="expired"):
    pass


class Conflict(AgentWorksError, status=409, code="conflict"):
    pass


class InboxFull(AgentWorksError, status=409, code="inbox_full"):
    pass


class LimitReached(AgentWorksError, status=409, code="limit_reached"):
    pass


class Retryable(AgentWorksError):
    """Refused for now: the same request may succeed after `retry_after` seconds (every
    surface shows it; HTTP adds a Retry-After header)."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message, retry_after=retry_after)
        self.retry_after = retry_after


class RateLimited(Retryable, status=429, code="rate_limited"):
    pass


class SchemaViolation(AgentWorksError, status=422, code="invalid_arguments"):
    """Arguments don't match the function's input schema (F3)."""


class Busy(AgentWorksError, status=429, code="busy"):
    """A Crew's execution slots are all taken (F5): retry later, nothing was queued."""


class TryAgain(Retryable, status=503, code="unavailable_retry"):
    """The store throttled or could not commit after its retries: send the same request
    again after `retry_after` seconds (with the same submission_id it is not stored twice)."""

    def __init__(self, message: str, retry_after: int = 1) -> None:
        super().__init__(message, retry_after)


class NotAdmitted(AgentWorksError):
    """An MCP tool call no `mcp_tools` declaration admits (issue 28): refused before any
    request leaves for the server."""

    status = 403
    code = "not_admitted"


class McpServerFailed(AgentWorksError):
    """An attached MCP server failed a tool call: down, too slow, refused the credentials,
    answered garbage or a result past the bound. The message says which, never a secret."""

    status = 502
    code = "mcp_server_failed"
