"""What the OpenAPI document says each operation answers: its success code and the error
codes it really returns, every error in the one error shape."""

from __future__ import annotations

from typing import Any, Protocol, TypeVar

from aws_lambda_powertools.event_handler.api_gateway import Response
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse
from pydantic import BaseModel, ConfigDict, Field

_JSON = "application/json"

# Why each status is returned, as the document tells it (one text per code, every route).
_ERRORS: dict[int, str] = {
    400: "Invalid request (invalid_request): a parameter or the body is malformed.",
    401: "Missing, invalid, expired or revoked token (unauthenticated).",
    403: "The connection lacks the scope this operation needs (forbidden).",
    404: "Unknown, or not available to this connection (unavailable): the two look the same.",
    409: "Conflict with the current state (conflict, inbox_full, limit_reached, messaging_off).",
    410: "Expired: the inbox or output is gone (expired).",
    413: "The request body is over the size limit (payload_too_large).",
    422: "The arguments or result don't match the function's schema (invalid_arguments).",
    429: "Rate limited or busy: retry after `retry_after` seconds (rate_limited, busy).",
    502: "An attached MCP server failed the tool call: down, too slow, refused the "
    "credentials, answered garbage or a result past the bound (mcp_server_failed).",
    503: "The store is throttled or busy right now; nothing was changed: retry after "
    "`retry_after` seconds (unavailable_retry).",
}
# Every authenticated operation can answer these: a malformed request (a body that is not
# strict JSON is refused before routing), a refused token, a store throttled past retries.
_ALWAYS = (400, 401, 503)


class ErrorDetail(BaseModel):
    """`code` is stable for scripts; `message` says what to do; some errors add details
    (`field`, `scope`, `retry_after`, `path`, …)."""

    model_config = ConfigDict(extra="allow")

    code: str
    message: str


class ErrorResponse(BaseModel):
    """The one error shape of every surface: `{"error": {"code", "message", …}}`."""

    error: ErrorDetail = Field(description="What went wrong and what to do about it.")


def documented(success: int, *errors: int, description: str = "Success") -> dict[int, Any]:
    """The `responses=` of a route: `success` (schema from the route's return type) and
    the error codes it returns besides those of every operation (_ALWAYS), all with the
    error schema."""
    responses: dict[int, OpenAPIResponse] = {success: {"description": description}}
    for code in sorted({*_ALWAYS, *errors}):
        responses[code] = {
            "description": _ERRORS[code],
            "content": {_JSON: {"model": ErrorResponse}},
        }
    return responses


def or_replayed(responses: dict[int, Any], what: str) -> dict[int, Any]:
    """`responses` of a submission, and the 200 of its retry with the same submission_id,
    which answers with the original `what` (the same body)."""
    replayed = f"A retry with the same submission_id: the original {what} (replayed)"
    return {**responses, 200: {"description": replayed}}


class _Submitted(Protocol):
    replayed: bool


Submitted = TypeVar("Submitted", bound=_Submitted)


def new_or_replayed(answer: Submitted, status: int) -> Response[Submitted]:
    """`status` for a new submission, 200 for a retry that replayed the original."""
    return Response(status_code=200 if answer.replayed else status, content_type=_JSON, body=answer)
