"""/v1/connections and /v1/whoami (A2, A3)."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler.api_gateway import Response, Router
from aws_lambda_powertools.event_handler.openapi.params import Body, Path
from pydantic import BaseModel, ConfigDict, Field

from agentworks.http_api.principal import current_principal
from agentworks.runtime import services

router = Router()


class CreateConnection(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(max_length=64)
    scopes: list[str] | None = Field(None, max_length=16)
    target_bounds: list[str] | None = Field(None, max_length=100)
    expires_in_seconds: int | None = None


@router.get("/whoami", summary="Who this token acts as")
def whoami() -> dict[str, Any]:
    principal = current_principal(router)
    return {
        "account_id": principal.account_id,
        "connection_id": principal.connection_id,
        "scopes": sorted(principal.scopes),
        "target_bounds": list(principal.target_bounds)
        if principal.target_bounds is not None
        else None,
    }


@router.post("/connections", summary="Create a connection (admin); the token is shown once")
def create_connection(request: Annotated[CreateConnection, Body()]) -> Response[dict[str, Any]]:
    identity = services().identity
    issued = identity.create_connection(
        current_principal(router),
        request.name,
        request.scopes,
        request.target_bounds,
        request.expires_in_seconds,
    )
    body = {**identity.view(issued.connection), "token": issued.token}
    return Response(status_code=201, body=body, content_type="application/json")


@router.get("/connections", summary="List the account's connections (admin)")
def list_connections() -> dict[str, Any]:
    identity = services().identity
    connections = identity.list_connections(current_principal(router))
    return {"connections": [identity.view(c) for c in connections]}


@router.delete("/connections/<connection_id>", summary="Revoke a connection (admin)")
def revoke_connection(connection_id: Annotated[str, Path(max_length=64)]) -> dict[str, Any]:
    identity = services().identity
    return identity.view(identity.revoke(current_principal(router), connection_id))
