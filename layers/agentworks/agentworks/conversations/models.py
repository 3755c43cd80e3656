"""Conversations' API shapes (M8–M10, C1–C5): messages to Crews and their review,
wakeups, requests and their eight states, a conversation's status and controls."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agentworks import limits

# ---- messages to Crews and wakeups (M8–M10) ----


class ReleaseMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    message_id: str = Field(min_length=1, max_length=64)


class DeclineMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    message_id: str = Field(min_length=1, max_length=64)
    reason: str | None = Field(None, max_length=1_000)


class ScheduleWakeup(BaseModel):
    """M9: another turn of the Crew in this exact conversation, at a time or after a delay."""

    model_config = ConfigDict(extra="forbid")
    inbox_id: str = Field(max_length=64, description="Your side of a conversation with a Crew.")
    agent_name: str | None = Field(
        None, max_length=limits.AGENT_NAME_MAX_CHARS, description="Act as this name."
    )
    at: str | None = Field(None, max_length=64, description="ISO 8601 time (UTC if no zone).")
    delay_seconds: int | None = Field(None, description="Seconds from now.")


class RescheduleWakeup(BaseModel):
    model_config = ConfigDict(extra="forbid")
    at: str | None = Field(None, max_length=64, description="ISO 8601 time (UTC if no zone).")
    delay_seconds: int | None = Field(None, description="Seconds from now.")


class SchedulerSetting(BaseModel):
    model_config = ConfigDict(extra="forbid")
    paused: bool = Field(description="True: the tick fires none of this account's wakeups.")


class CrewDeliveryRecord(BaseModel):
    """A message to the Crew: its receipt and what its run did (never its body)."""

    message_id: str
    created_at: str
    receipt: str
    run_state: str | None = Field(
        None,
        description="pending_review, declined, running, succeeded, failed or interrupted",
    )
    run_id: str | None = None
    error: str | None = None


class WakeupView(BaseModel):
    wakeup_id: str
    inbox_id: str = Field(description="The side that scheduled it")
    due_at: str
    state: str = Field(description="scheduled, firing, fired, cancelled or interrupted")
    run_id: str | None = None
    run_state: str | None = None
    error: str | None = None
    created_at: str


class CrewInboxState(BaseModel):
    inbox_id: str = Field(description="The Crew's side of the conversation")
    conversation_id: str
    peer: str = Field(description="Who the Crew talks with")
    status: str
    created_at: str
    last_activity_at: str
    receiving_run_id: str | None = Field(None, description="The newest run in this inbox")
    delivery_records: list[CrewDeliveryRecord] = Field(
        description="The last 20 messages to the Crew, newest first, without bodies"
    )
    wakeups: list[WakeupView]
    errors: list[str]


class CrewState(BaseModel):
    """M8: a Crew's conversations, delivery records and wakeups (owner only; no bodies)."""

    target: str
    crew_id: str
    messaging: str
    scheduler_paused: bool
    inboxes: list[CrewInboxState]
    next_cursor: str | None = Field(None, description="Pass as `after` for the next page")


class ReviewOutcome(BaseModel):
    """M10 review: what a person decided about a message."""

    target: str
    message_id: str
    state: str = Field(description="running (released) or declined")
    run_id: str | None = None
    reason: str | None = None


# ---- requests in conversations (C1, C2) ----

RequestState = Literal[
    "waiting_for_review",
    "received",
    "in_progress",
    "answered",
    "declined",
    "couldnt_complete",
    "expired",
    "cancelled",
]


class RequestView(BaseModel):
    """A request to a Crew and where it stands (C2): `state` for programs, `label` in the
    seed's words for people."""

    message_id: str
    state: RequestState
    label: str = Field(description="Waiting for review, Received, In progress, Answered, …")
    deadline_at: str | None = None
    handoff: bool = False
    run_id: str | None = None
    reason: str | None = Field(default=None, description="Why it declined, failed or ended.")
    created_at: str
    updated_at: str


class RequestList(BaseModel):
    inbox_id: str
    requests: list[RequestView] = Field(description="Newest first.")


class CancelRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    agent_name: str | None = Field(None, description="Cancel as this registered name.")


# ---- a conversation's status (C4) ----


class ConversationControl(BaseModel):
    model_config = ConfigDict(extra="forbid")

    agent_name: str | None = Field(None, description="Act as this registered name.")


class ConversationStatusView(BaseModel):
    inbox_id: str
    conversation_id: str
    status: Literal["active", "paused", "closed", "deleted"]
    cancelled_requests: int = Field(0, description="Close: the open requests it cancelled.")
    started_runs: int = Field(0, description="Resume: runs of messages held while paused.")
