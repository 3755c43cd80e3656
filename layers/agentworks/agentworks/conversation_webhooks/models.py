"""What the `/v1/webhooks` routes take and answer (the CLI and MCP read the same models)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agentworks import limits
from agentworks.outbound.urls import RefusedUrl, check_on_save

WebhookEvent = Literal[
    "agent_asked", "request_needs_review", "request_answered", "conversation_closed"
]
EVENTS: tuple[WebhookEvent, ...] = (
    "agent_asked",
    "request_needs_review",
    "request_answered",
    "conversation_closed",
)


class CreateWebhook(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str = Field(
        max_length=limits.CONVERSATION_WEBHOOK_URL_MAX_CHARS,
        description="https:// to a public address: no user or password in it, a host that "
        "is not (and does not resolve to) a loopback, private, link-local or other "
        "non-public address. Checked again at every delivery.",
    )
    events: list[WebhookEvent] = Field(
        min_length=1, max_length=len(EVENTS), description="Which conversation events to send."
    )

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        try:
            return check_on_save(value)
        except RefusedUrl as refused:
            raise ValueError(f"refused: {refused}") from None

    @field_validator("events")
    @classmethod
    def _once(cls, value: list[WebhookEvent]) -> list[WebhookEvent]:
        return [e for e in EVENTS if e in value]  # each once, in a stable order


class WebhookView(BaseModel):
    webhook_id: str
    url: str
    events: list[WebhookEvent]
    created_at: str
    created_by: str = Field(description="The connection that subscribed it.")


class WebhookList(BaseModel):
    webhooks: list[WebhookView]
    signature_header: str = Field(
        description="Each delivery is signed in this header with the account's webhook key "
        "(`agentworks workflow webhook-key`): t=<unix seconds>,v1=<HMAC-SHA256 of t.body>."
    )


class DeletedWebhook(BaseModel):
    webhook_id: str
    deleted: bool = True


class WebhookAttempt(BaseModel):
    at: str
    status_code: int | None = None
    error: str | None = Field(
        default=None,
        description="Why it was not delivered: HTTP <status>, refused URL, refused address, "
        "name not resolved, connection failed, TLS failed or timed out",
    )


class WebhookDelivery(BaseModel):
    delivery_id: str
    event: WebhookEvent
    conversation_id: str
    message_id: str | None = None
    state: Literal["sending", "delivered", "failed"]
    attempts: list[WebhookAttempt]
    created_at: str


class WebhookDeliveries(BaseModel):
    webhook_id: str
    deliveries: list[WebhookDelivery] = Field(description="Newest first.")
