"""Response models of /v1/whoami and /v1/connections (A2, A3): what the API answers and
the CLI parses, so a renamed field breaks both sides' tests."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class WhoAmI(BaseModel):
    account_id: str
    connection_id: str
    scopes: list[str]
    target_bounds: list[str] | None = Field(description="None: no bounds on targets.")


class ConnectionView(BaseModel):
    """A connection's public metadata (never its secret). Times are Unix seconds."""

    connection_id: str
    name: str
    scopes: list[str]
    target_bounds: list[str] | None = Field(description="None: no bounds on targets.")
    created_at: int
    expires_at: int | None
    revoked_at: int | None
    ends_with_parent: bool = Field(
        False, description="Stops working when the connection that created it does."
    )
    status: Literal["active", "revoked", "expired", "stopped"] = Field(
        description="stopped: a connection it ends with (its creator, or theirs) was "
        "revoked or expired, so it no longer authenticates."
    )


class IssuedConnectionView(ConnectionView):
    token: str = Field(description="The bearer token: shown this once, never stored.")


class ConnectionList(BaseModel):
    connections: list[ConnectionView]
