"""Response model of GET /v1/agents/conversations (C5 the Messages view)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from agentworks.conversations.inbox_models import MessagePreview


class NamedParty(BaseModel):
    side: Literal["a", "b"] = Field(description="a started it, b was asked")
    address: str = Field(description="agent:NAME or external (the account's client)")
    you_act_as: bool = Field(description="Your connection is on this name's allow-list (M5).")


class NamedConversation(BaseModel):
    conversation_id: str
    status: Literal["active", "paused", "closed", "expired"]
    agents: list[NamedParty]
    readable: bool = Field(
        description="You act as one of its names, so you may read it: only then does it "
        "carry its newest message and your inbox."
    )
    inbox_id: str | None = Field(description="Your side's inbox (readable ones only)")
    latest: MessagePreview | None = Field(description="Its newest message (readable ones only)")
    created_at: str
    last_activity_at: str


class NamedConversationList(BaseModel):
    conversations: list[NamedConversation] = Field(description="Newest first.")
    next_before: str | None = Field(
        default=None, description="More are older: pass this as `before` for them"
    )
