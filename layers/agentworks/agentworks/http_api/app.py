"""The /v1 resolver: route groups, one error shape, body-size bound and the OpenAPI document."""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from botocore.exceptions import ClientError

from agentworks import json_input, limits
from agentworks.dynamo import retry_later
from agentworks.errors import AgentWorksError, Unauthenticated
from agentworks.http_api.openapi import openapi_json
from agentworks.http_api.principal import authenticate
from agentworks.http_api.resolver import Resolver
from agentworks.observability import count_refusal, logger
from agentworks.settings import push_url
from agentworks.web import pages

# No routes yet: each group loads on the first request for one of its paths (groups.py).
app = Resolver(enable_validation=True)

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
    return error_response(error.status, error.code, error.message, **error.details)


@app.exception_handler(ClientError)
def handle_store_error(error: ClientError) -> Response[Any]:
    """Throttling that outlasted the retries is the caller's to retry (503), not a crash."""
    transient = retry_later(error)
    if transient is None:
        raise error
    return handle_domain_error(transient)


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
    event = app.current_event
    allowed = app.allowed_methods(event.path)
    if allowed:
        # The path exists: the method is what is wrong (TRACE, HEAD, PUT …).
        message = f"{event.http_method} is not allowed here; use {', '.join(allowed)}."
        return Response(
            status_code=405,
            content_type=_JSON,
            body={"error": {"code": "method_not_allowed", "message": message}},
            headers={"Allow": ", ".join(allowed)},
        )
    return error_response(404, "not_found", "No such route. See /v1/openapi.json for the API.")


@app.get("/v1/openapi.json", include_in_schema=False)
def openapi_document() -> Response[str]:
    return Response(status_code=200, content_type=_JSON, body=openapi_json(app))


def _plain(status: int, code: str, message: str) -> dict[str, Any]:
    """An error answered before the resolver runs, in the same shape as every other."""
    return {
        "statusCode": status,
        "headers": {"Content-Type": _JSON},
        "body": json.dumps({"error": {"code": code, "message": message}}),
    }


def _unsupported_media(event: dict[str, Any]) -> dict[str, Any] | None:
    """A 415 for a body declared as anything but JSON (a form, multipart without its
    boundary, XML …): powertools would parse forms and multipart itself, and answer in
    a shape of its own or fail."""
    headers = event.get("headers") or {}
    given = next((v for k, v in headers.items() if k.lower() == "content-type"), None)
    method = str(event.get("requestContext", {}).get("http", {}).get("method", "")).upper()
    if not (event.get("body") or method in ("POST", "PUT", "PATCH")):
        return None
    if json_input.is_json_media_type(given):
        # Powertools compares the header case-sensitively: give it the canonical name.
        if given:
            event["headers"] = {k: v for k, v in headers.items() if k.lower() != "content-type"}
            event["headers"]["content-type"] = json_input.JSON_MEDIA_TYPE
        return None
    count_refusal("Request", "unsupported_media_type")
    return _plain(
        415,
        "unsupported_media_type",
        f"The API takes JSON bodies; send Content-Type: {json_input.JSON_MEDIA_TYPE}.",
    )


def _invalid_body(event: dict[str, Any]) -> dict[str, Any] | None:
    """A 400 for a body that is not strict JSON (json_input), before powertools parses it."""
    if not event.get("body"):
        return None
    try:
        json_input.loads(json_input.body_text(event))
    except json_input.InvalidJson as invalid:
        count_refusal("Request", "invalid_request")
        return _plain(400, "invalid_request", str(invalid))
    return None


def resolve(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Entry point: refuses oversized bodies before reading them, authenticates (A3: in
    the function, so a refusal has the API's error shape), refuses bodies that are not
    strict JSON, then routes."""
    # The Inbox, Messages and Runs pages (C5): public shells, no data.
    page = None
    if pages.is_page_path(str(event.get("rawPath") or "")):
        page = pages.serve(event, push_url())
    if page is not None:
        return page
    if json_input.body_too_large(event):
        return _plain(
            413,
            "payload_too_large",
            f"Request bodies are limited to {limits.REQUEST_BODY_MAX_BYTES // 1024} KiB.",
        )
    try:
        # Authenticated first: a caller without a valid token learns nothing about bodies.
        authenticate(app, event)
        invalid = _unsupported_media(event) or _invalid_body(event)
        if invalid is not None:
            app.clear_context()
            return invalid
        return app.resolve(event, context)
    except Unauthenticated as refused:
        count_refusal("Request", refused.code)
        app.clear_context()
        return _plain(refused.status, refused.code, refused.message)
    except Exception:
        # Never a stack trace to the caller; the log has it (without bodies or tokens).
        logger.exception("unhandled error")
        return _plain(500, "internal", "Internal error; retry later.")
