"""The OpenAPI document of /v1: generated from every group's routes (loaded for it if no
request has loaded them yet), with the bearer scheme that every operation needs and only
the status codes the API really answers."""

from __future__ import annotations

import json
import threading
from functools import lru_cache
from typing import Any

from agentworks.http_api.resolver import Resolver

BEARER = "bearer"
# Powertools documents a 422 with its own validation-error schema on every operation; this
# API answers invalid requests with a 400 in the one error shape instead (see app.py).
_POWERTOOLS_VALIDATION = "#/components/schemas/HTTPValidationError"
_UNSUPPORTED_MEDIA = (
    "The body is declared as something other than JSON (unsupported_media_type); send "
    "Content-Type: application/json."
)


# Powertools' schema generation is not safe to run twice at once over one resolver: the
# first requests after a start asking for the document together all failed (a KeyError in
# its field mapping, a 500). One thread builds it; the others wait for it.
_GENERATING = threading.Lock()


def openapi_json(app: Resolver) -> str:
    """The document as JSON text (built once per resolver)."""
    with _GENERATING:
        return _document(app)


@lru_cache(maxsize=1)  # the routes don't change while a container lives
def _document(app: Resolver) -> str:
    # Powertools' OpenAPI models load only when the document is asked for, not at cold start.
    from aws_lambda_powertools.event_handler.openapi.models import HTTPBearer

    document = json.loads(
        app.documented().get_openapi_json_schema(
            title="AgentWorks API",
            version="0.1.0",
            description="Direct messages between agents, Crews and their typed functions. "
            "Authenticate with 'Authorization: Bearer <token>'; every error has the shape "
            '{"error": {"code", "message", …}}.',
            security_schemes={
                BEARER: HTTPBearer(
                    description="A connection's token (agentworks connections create).",
                    bearerFormat="aw1.ACCOUNT.CONNECTION.SECRET",
                )
            },
            security=[{BEARER: []}],
        )
    )
    for operation in _operations(document):
        responses = operation["responses"]
        if "requestBody" in operation and "400" in responses:
            # Refused before routing (app.py), like a body that is not strict JSON.
            responses["415"] = {**responses["400"], "description": _UNSUPPORTED_MEDIA}
        answer = responses.get("422", {})
        schema = answer.get("content", {}).get("application/json", {}).get("schema", {})
        if schema.get("$ref") == _POWERTOOLS_VALIDATION:
            del operation["responses"]["422"]
    # …and its validation-error schemas, once nothing refers to them.
    schemas = document.get("components", {}).get("schemas", {})
    for name in ("HTTPValidationError", "ResponseValidationError", "ValidationError"):
        rest = {k: v for k, v in schemas.items() if k != name}
        if f"#/components/schemas/{name}" not in json.dumps([document["paths"], rest]):
            schemas.pop(name, None)
    return json.dumps(document)


def _operations(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        operation
        for item in document.get("paths", {}).values()
        for operation in item.values()
        if isinstance(operation, dict) and "responses" in operation
    ]
