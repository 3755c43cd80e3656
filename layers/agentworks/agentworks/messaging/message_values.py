"""The values a send makes: the body checked (M1), a new conversation with its first
message, and the sender's receipt."""

from __future__ import annotations

from agentworks import limits
from agentworks.errors import InvalidInput
from agentworks.ids import InboxRef, MessageRef
from agentworks.messaging.message_kinds import PLAIN, Framing
from agentworks.messaging.models import Conversation, Party, SendReceipt, StoredMessage, iso

HOUR_MS = 3_600_000


def check_body(body: str) -> str:
    if not isinstance(body, str):
        raise InvalidInput("message must be a string.", field="message")
    length = len(body)  # code points: "characters, not bytes" (M1)
    if not (limits.MESSAGE_MIN_CHARS <= length <= limits.MESSAGE_MAX_CHARS):
        raise InvalidInput(
            f"message must be {limits.MESSAGE_MIN_CHARS}–{limits.MESSAGE_MAX_CHARS:,} "
            f"characters; it has {length:,}.",
            field="message",
        )
    return body


def new_receipt(mine: InboxRef, delivered: MessageRef, now: int) -> SendReceipt:
    return SendReceipt(
        inbox_id=mine.inbox_id,
        conversation_id=mine.conversation_id,
        message_id=delivered.message_id,
        receipt="stored",
        created_at=iso(now) or "",
    )


def opening(
    ulid: str,
    account_id: str,
    sender: Party,
    target: Party,
    body: str,
    now: int,
    submission_id: str | None,
    framing: Framing = PLAIN,
) -> tuple[Conversation, StoredMessage]:
    """A new conversation (side a = the sender, side b = the target) and its first message."""
    conv = Conversation(
        conversation=ulid,
        account_id=account_id,
        parties={"a": sender, "b": target},
        created_at=now,
        last_activity=now,
        activity_hour=now // HOUR_MS,
    )
    message = StoredMessage(
        ulid,
        "b",
        1,
        sender.address,
        body,
        now,
        window=[now],
        counts={"a": 0, "b": 1},
        submission_id=submission_id,
        to_agent=target.agent_id if target.kind == "agent" else None,
        framing=framing,
    )
    return conv, message
