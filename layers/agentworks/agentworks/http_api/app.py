"""The /v1 resolver: routers, one error shape, body-size bound and the OpenAPI document."""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError

from agentworks import limits
from agentworks.errors import AgentWorksError, RateLimited
from agentworks.http_api import connections, crews, messages, wakeups
from agentworks.observability import count_refusal, logger

app = APIGatewayHttpResolver(enable_validation=True)
app.include_router(connections.router, prefix="/v1")
app.include_router(messages.router, prefix="/v1")
app.include_router(crews.router, prefix="/v1")
app.include_router(wakeups.router, prefix="/v1")

_JSON = "application/json"


def error_response(status: int, code: str, message: str, **details: Any) -> Response[Any]:
    body = {"error": {"code": code, "message": message, **details}}
    headers = {"Retry-After": str(details["retry_after"])} if "retry_after" in details else None
    return Response(status_code=status, content_type=_JSON, body=body, headers=headers)


def _operation() -> str:
    path = app.current_event.path
    return (
        "Send"
        if path.endswith("/messages") and app.current_event.http_method == "POST"
        else ("Request")
    )


@app.exception_handler(AgentWorksError)
def handle_domain_error(error: AgentWorksError) -> Response[Any]:
    count_refusal(_operation(), error.code)
    if isinstance(error, RateLimited):
        return error_response(
            error.status, error.code, error.message, retry_after=error.retry_after
        )
    return error_response(error.status, error.code, error.message, **error.details)


@app.exception_handler(RequestValidationError)
def handle_validation_error(error: RequestValidationError) -> Response[Any]:
    problems = []
    for item in error.errors():
        where = ".".join(str(p) for p in item.get("loc", ()) if p not in ("body", "query"))
        problems.append(f"{where or 'body'}: {item.get('msg', 'invalid')}")
    count_refusal(_operation(), "invalid_request")
    return error_response(400, "invalid_request", "; ".join(problems)[:1000] or "Invalid request.")


@app.not_found
def handle_not_found(_: Exception) -> Response[Any]:
    return error_response(404, "not_found", "No such route. See /v1/openapi.json for the API.")


@app.get("/v1/openapi.json", include_in_schema=False)
def openapi_document() -> Response[str]:
    document = app.get_openapi_json_schema(
        title="AgentWorks API",
        version="0.1.0",
        description="Direct messages between agents, Crews and their typed functions. "
        "Authenticate with 'Bearer <token>'.",
    )
    return Response(status_code=200, content_type=_JSON, body=document)


def resolve(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Entry point: refuses oversized bodies before parsing them, then routes."""
    body = event.get("body") or ""
    if len(body) > limits.REQUEST_BODY_MAX_BYTES * (4 / 3 if event.get("isBase64Encoded") else 1):
        return {
            "statusCode": 413,
            "headers": {"Content-Type": _JSON},
            "body": json.dumps(
                {
                    "error": {
                        "code": "payload_too_large",
                        "message": f"Request bodies are limited to "
                        f"{limits.REQUEST_BODY_MAX_BYTES // 1024} KiB.",
                    }
                }
            ),
        }
    try:
        return app.resolve(event, context)
    except Exception:
        # Never a stack trace to the caller; the log has it (without bodies or tokens).
        logger.exception("unhandled error")
        return {
            "statusCode": 500,
            "headers": {"Content-Type": _JSON},
            "body": json.dumps(
                {"error": {"code": "internal", "message": "Internal error; retry later."}}
            ),
        }
