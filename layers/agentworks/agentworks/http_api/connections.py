"""/v1/connections and /v1/whoami (A2, A3)."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body
from pydantic import BaseModel, ConfigDict, Field

from agentworks.http_api.params import PathId
from agentworks.http_api.principal import current_principal
from agentworks.http_api.responses import documented
from agentworks.identity.views import (
    ConnectionList,
    ConnectionView,
    IssuedConnectionView,
    WhoAmI,
)
from agentworks.runtime import services

router = Router()


class CreateConnection(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(max_length=64)
    scopes: list[str] | None = Field(None, max_length=16)
    target_bounds: list[str] | None = Field(None, max_length=100)
    expires_in_seconds: int | None = None
    ends_with_parent: bool = Field(
        False, description="Stop working when this (the creating) connection is revoked or expires."
    )


@router.get("/whoami", summary="Who this token acts as", responses=documented(200))
def whoami() -> WhoAmI:
    principal = current_principal(router)
    return WhoAmI(
        account_id=principal.account_id,
        connection_id=principal.connection_id,
        scopes=sorted(principal.scopes),
        target_bounds=list(principal.target_bounds)
        if principal.target_bounds is not None
        else None,
    )


@router.post(
    "/connections",
    summary="Create a connection (admin); the token is shown once",
    status_code=201,
    responses=documented(201, 400, 403, 409, 413),
)
def create_connection(request: Annotated[CreateConnection, Body()]) -> IssuedConnectionView:
    identity = services().identity
    issued = identity.create_connection(
        current_principal(router),
        request.name,
        request.scopes,
        request.target_bounds,
        request.expires_in_seconds,
        request.ends_with_parent,
    )
    return IssuedConnectionView(**identity.view(issued.connection), token=issued.token)


@router.get(
    "/connections",
    summary="List the account's connections (admin)",
    responses=documented(200, 403),
)
def list_connections() -> ConnectionList:
    identity = services().identity
    views = identity.list_connections(current_principal(router))
    return ConnectionList.model_validate({"connections": views})


@router.delete(
    "/connections/<connection_id>",
    summary="Revoke a connection (admin)",
    responses=documented(200, 400, 403, 404),
)
def revoke_connection(connection_id: PathId) -> ConnectionView:
    identity = services().identity
    revoked = identity.revoke(current_principal(router), connection_id)
    return ConnectionView.model_validate(identity.view(revoked))
