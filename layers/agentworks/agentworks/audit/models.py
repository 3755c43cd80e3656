"""What `GET /v1/audit` answers (the CLI and MCP read the same models)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class AuditActor(BaseModel):
    kind: Literal["connection", "platform", "run"] = Field(
        description="connection: a person or program; platform: the tick or a deleted Crew; "
        "run: a Crew's run (connection_id is the connection it runs as)."
    )
    connection_id: str | None = None
    run_id: str | None = None


class AuditEntryView(BaseModel):
    entry_id: str
    at: str = Field(description="When the change was made (ISO 8601, UTC).")
    conversation_id: str
    inbox_id: str | None = None
    action: str = Field(
        description="message_sent, request_state, message_state, released, declined, "
        "cancelled, expired, paused, resumed, closed, deleted or answered_for."
    )
    actor: AuditActor
    message_id: str | None = None
    state: str | None = Field(None, description="A request's state after the change (C2).")
    kind: str | None = Field(None, description="The message's kind: request, reply, note, message.")
    detail: str | None = None


class AuditPage(BaseModel):
    entries: list[AuditEntryView]
    next_cursor: str | None = Field(
        None, description="Pass as `after` for the next page; null at the end (for now)."
    )
