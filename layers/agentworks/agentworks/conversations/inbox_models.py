"""Response models of GET /v1/conversations (C5, the Inbox): what the API answers and the
CLI (`agentworks conversations list`) and the web Inbox read."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from agentworks.conversations.models import RequestView

Tab = Literal["needs_you", "active", "waiting_on_others", "closed"]
TABS: tuple[Tab, ...] = ("needs_you", "active", "waiting_on_others", "closed")
TAB_LABELS: dict[Tab, str] = {
    "needs_you": "Needs You",
    "active": "Active",
    "waiting_on_others": "Waiting on Others",
    "closed": "Closed",
}


class ConversationAgent(BaseModel):
    side: Literal["a", "b"] = Field(description="a started it, b was asked")
    address: str = Field(description="crew:NAME, agent:NAME or external (the account's client)")
    inbox_id: str = Field(description="This side's inbox")
    may_act: bool = Field(description="You may act for this side (review, answer, pause …).")


class MessagePreview(BaseModel):
    """The newest message of a conversation, as a list shows it."""

    sender: str = Field(description="crew:NAME, agent:NAME or external")
    kind: str = Field(description="message, request, reply or note")
    first_line: str = Field(description="Its first line, cut to 140 characters")
    created_at: str


class ConversationSummary(BaseModel):
    conversation_id: str
    status: Literal["active", "paused", "closed"]
    tab: Tab
    tab_label: str = Field(description="Needs You, Active, Waiting on Others or Closed")
    agents: list[ConversationAgent]
    open_requests: list[RequestView] = Field(
        description="Requests not yet answered, declined, expired or cancelled."
    )
    runs: list[RequestView] = Field(
        description="Its requests that started a run (`run_id`), newest first: the Runs page."
    )
    needs_you: int = Field(description="What waits for you: reviews you may give, questions.")
    runs_as_you: bool = Field(description="It runs as your connection (you started the work).")
    created_at: str = Field(description="ISO 8601, UTC")
    last_activity_at: str = Field(description="ISO 8601, UTC (moves at most once an hour)")
    latest: MessagePreview | None = Field(
        default=None, description="The newest message (in lists; none once it expired)"
    )


class ConversationList(BaseModel):
    conversations: list[ConversationSummary] = Field(description="Newest first.")
    counts: dict[str, int] = Field(description="Conversations per tab (of those looked at).")
    next_cursor: str | None = Field(None, description="Pass as `after` for the next page")


class ConversationMessage(BaseModel):
    message_id: str
    sender: str = Field(description="crew:NAME, agent:NAME or external")
    to: str = Field(description="The side it went to")
    kind: str = Field(description="message, request, reply or note")
    body: str
    created_at: str
    deadline_at: str | None = None
    in_reply_to: str | None = None
    handoff: bool = False


class PendingQuestion(BaseModel):
    run_id: str
    request_id: str
    question: str


class ConversationDetail(ConversationSummary):
    """One conversation for the Inbox's conversation view: every message shown (the newest
    `CONVERSATION_MESSAGES_SHOWN`, oldest first), each request's state and deadline."""

    messages: list[ConversationMessage]
    requests: list[RequestView] = Field(description="Every request, newest first.")
    questions: list[PendingQuestion] = Field(
        description="Questions its runs wait on that you may answer (POST /v1/calls/{id}/reply)."
    )
