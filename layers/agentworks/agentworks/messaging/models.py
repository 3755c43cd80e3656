"""Request and response models of the direct-message contract, shared by HTTP and MCP."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agentworks import limits
from agentworks.ids import Side
from agentworks.messaging.message_kinds import PLAIN, Framing, MessageKind

ReceiptState = Literal["stored", "typed", "admitted", "processed"]
ConversationStatus = Literal["active", "paused", "closed"]
AckDelivery = Literal["typed", "admitted", "processed"]
# M7: receipts only move forward.
RECEIPT_ORDER: dict[str, int] = {"stored": 0, "typed": 1, "admitted": 2, "processed": 3}
# M11: an admitted-but-unprocessed message is still being delivered; it blocks eviction.
PENDING_RECEIPT = "admitted"


def iso(ms: int | None) -> str | None:
    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SendMessage(_Strict):
    """M1: send to `target` (first contact) or into an existing `inbox_id`."""

    message: str = Field(description="1–20,000 Unicode characters.")
    target: str | None = Field(None, description="agent:NAME or crew:NAME for a first contact.")
    inbox_id: str | None = Field(None, description="Continue the conversation of this inbox.")
    agent_name: str | None = Field(None, description="Send as this registered name.")
    submission_id: str | None = Field(
        None,
        min_length=1,
        max_length=limits.SUBMISSION_ID_MAX_CHARS,
        description="Retry key: the same id and content returns the original receipt.",
    )
    kind: MessageKind = Field(
        "message",
        description="In a conversation with a Crew (C1): `request` asks for something, "
        "`reply` answers a request sent to you, `note` adds information and starts no run.",
    )
    deadline_seconds: int | None = Field(
        None,
        description="Requests: seconds until it expires "
        f"({limits.REQUEST_DEADLINE_MIN_SECONDS}–{limits.REQUEST_DEADLINE_MAX_SECONDS:,}; "
        f"default {limits.REQUEST_DEADLINE_DEFAULT_SECONDS:,}).",
    )
    handoff: bool = Field(False, description="Requests: the answer is not needed back.")
    in_reply_to: str | None = Field(
        None, max_length=64, description="Replies: the message_id of the request answered."
    )


class SendReceipt(BaseModel):
    inbox_id: str
    conversation_id: str
    message_id: str
    receipt: ReceiptState
    created_at: str
    replayed: bool = Field(
        default=False, description="True when a retry returned the original receipt."
    )


class MessageView(BaseModel):
    message_id: str
    conversation_id: str
    inbox_id: str
    reply_address: str = Field(description="The inbox_id to reply in.")
    sender: str
    body: str
    created_at: str
    receipt: ReceiptState | None = None
    delivered_text: str = Field(description="The body framed as another agent's words (M12).")
    kind: MessageKind = "message"
    deadline_at: str | None = Field(default=None, description="Requests: when it expires.")
    handoff: bool = False
    in_reply_to: str | None = Field(default=None, description="Replies: the request answered.")
    written_by: str | None = Field(
        default=None,
        description="Set when a person answered for the agent: that person's connection id.",
    )


class ReadPage(BaseModel):
    kind: Literal["inbox", "mailbox"]
    messages: list[MessageView]
    next_cursor: str = Field(description="Pass as `after` to continue; same cursor when empty.")
    inbox_id: str | None = None
    agent_name: str | None = None


class RegisterAgent(_Strict):
    agent_name: str
    purpose: str | None = Field(None, max_length=limits.PURPOSE_MAX_CHARS)
    provider: str | None = Field(None, max_length=64)
    allowed_connection_ids: list[str] | None = Field(
        None, max_length=limits.ALLOWED_CONNECTIONS_MAX
    )


class AgentView(BaseModel):
    agent_name: str
    agent_id: str
    purpose: str | None = None
    provider: str | None = None
    online: bool
    allowed_connection_ids: list[str]
    created_at: str
    last_seen_at: str | None = None
    listening: bool | None = Field(
        default=None,
        description="With listening=true: a push-channel listener of this name is connected.",
    )


class AgentList(BaseModel):
    agents: list[AgentView]


class AgentUnregistered(BaseModel):
    agent_name: str
    unregistered: bool


class AckMessage(_Strict):
    delivery: AckDelivery


class AckResult(BaseModel):
    message_id: str
    receipt: ReceiptState


class DeliveryRecord(BaseModel):
    message_id: str
    created_at: str
    receipt: ReceiptState


class InboxState(BaseModel):
    inbox_id: str
    conversation_id: str
    peer: str
    status: Literal["active", "expired"]
    messages_retained: int
    history_limit: int = limits.INBOX_HISTORY_MAX
    rate_used: int
    rate_remaining: int
    retry_after: int
    created_at: str
    last_activity_at: str
    idle_expires_at: str
    delivery_records: list[DeliveryRecord] = Field(
        description="The last 20 messages this inbox sent, newest first, without bodies."
    )


@dataclass(frozen=True)
class InboxOverview:
    """One side of a conversation as the platform sees it, for a Crew's state (M8): no
    principal is checked here (the caller checked its authority on the Crew), no bodies."""

    inbox_id: str
    conversation_id: str
    peer: str
    status: Literal["active", "expired"]
    created_at: str
    last_activity_at: str
    received: list[DeliveryRecord]  # the newest messages delivered to this side, newest first


class AgentState(BaseModel):
    agent: AgentView
    mailbox_messages: int


# ---- records the stores exchange with the services (not exposed as-is) ----


@dataclass
class Party:
    """One side of a conversation: a registered name, the account's external client, or a
    Crew (`agent_id` = its crew_id, `agent_name` = its name), for which the platform acts."""

    kind: Literal["agent", "external", "crew"]
    agent_id: str | None = None
    agent_name: str | None = None

    @property
    def address(self) -> str:
        if self.kind == "external":
            return "external"
        return f"{self.kind}:{self.agent_name}"


@dataclass
class Conversation:
    """The META item: who the two sides are and where the conversation is in its lifetime.

    Sequence, rate window and counts live on the newest message instead (see
    `StoredMessage`), so a send writes one item. `last_activity` here moves at most once
    an hour (with `activity_hour`); the newest message's `created_at` is the exact one."""

    conversation: str
    account_id: str
    parties: dict[Side, Party]
    created_at: int  # ms
    last_activity: int  # ms
    activity_hour: int
    evicted_at: int | None = None
    # C4: `paused` starts no new runs, `closed` takes no more messages (a conversation with
    # a Crew; between named agents it stays `active`).
    status: ConversationStatus = "active"
    # C4: how many conversations deep it is (one a run opens is one deeper than its own).
    depth: int = 1

    def is_expired(self, now_ms: int) -> bool:
        idle_ms = limits.INBOX_IDLE_SECONDS * 1000
        return self.evicted_at is not None or now_ms >= self.last_activity + idle_ms


@dataclass
class StoredMessage:
    """Message `seq` of a conversation, delivered to `side`.

    It also carries the conversation's state as of itself: `window` (accepted timestamps
    of the sliding hour, itself included) and `counts` (messages delivered to each side
    with seq ≤ this one, evicted ones included)."""

    conversation: str
    side: Side  # receiving side
    seq: int
    sender: str
    body: str
    created_at: int
    receipt: str = "stored"
    window: list[int] = field(default_factory=list)
    counts: dict[Side, int] = field(default_factory=lambda: {"a": 0, "b": 0})
    submission_id: str | None = None
    expires_ttl: int | None = None
    # The receiving side's agent_id when that side is a registered name: the push notifier
    # finds the name's listeners from the stream record alone (no conversation read).
    to_agent: str | None = None
    framing: Framing = PLAIN  # C1: request, reply or note (plain messages store nothing)

    def is_live(self, now_ms: int) -> bool:
        """False once its TTL passed, even before DynamoDB deletes it."""
        return self.expires_ttl is None or self.expires_ttl > now_ms // 1000


@dataclass
class Head:
    """One read of a conversation: META and its newest message. Strongly consistent
    unless `consistent` is False (a send's optimistic first read, see InboxAuthority)."""

    conversation: Conversation | None
    latest: StoredMessage | None
    consistent: bool = True

    @property
    def last_seq(self) -> int:
        return self.latest.seq if self.latest else 0

    def count(self, side: Side) -> int:
        return self.latest.counts[side] if self.latest else 0

    def window(self) -> list[int]:
        return list(self.latest.window) if self.latest else []

    @property
    def last_activity(self) -> int:
        assert self.conversation is not None
        newest = self.latest.created_at if self.latest else 0
        return max(self.conversation.last_activity, newest)


@dataclass
class Registration:
    account_id: str
    name: str  # canonical lower-case
    display_name: str
    agent_id: str
    allowed_connection_ids: list[str]
    created_at: int
    created_by: str
    mailbox_seq: int = 0
    purpose: str | None = None
    provider: str | None = None
    last_seen_at: int | None = None
    # Moves with every allow-list change, so two racing changes can't both apply theirs
    # to the connection items (see agent_store.update_settings).
    acl_version: int = 0


@dataclass
class MailboxEntry:
    agent_id: str
    seq: int
    message_id: str
    conversation_id: str
    reply_inbox_id: str
    sender: str
    body: str
    created_at: int


@dataclass
class SubmissionBinding:
    """M2: a submission id claimed by one send. `pending` until its message is stored;
    then it names the message (and `created_at` is the message's)."""

    content_hash: str
    inbox_id: str
    conversation_id: str
    message_id: str | None
    created_at: int | None
    claim: str  # random token of the send that holds (or held) the claim
    claimed_at: int  # ms
    sender: str = ""
    submission_id: str = ""
    account_id: str = ""

    @property
    def done(self) -> bool:
        return self.message_id is not None
