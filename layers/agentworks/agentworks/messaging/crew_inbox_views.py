"""What the platform reads and marks for a Crew in its conversations: receipts moved on as
its runs admit and finish a message, one message as the receiving side reads it, an
inbox's overview (status and delivery records, no bodies) and the Crew's inboxes.

No principal is checked here: only Crew code that authorized its own caller (or runs
inside an execution it started, or the tick reconciling one) calls these.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentworks import limits
from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.ids import InboxRef, parse_inbox_id, parse_message_id
from agentworks.messaging.authority import is_expired
from agentworks.messaging.models import (
    RECEIPT_ORDER,
    Conversation,
    InboxOverview,
    MessageView,
    iso,
)
from agentworks.messaging.reading import delivery_records, message_view

if TYPE_CHECKING:
    from agentworks.messaging.conversation_store import ConversationStore


class CrewInboxViews:
    """The messaging service is one (it sends too); the tick, which reconciles runs but
    sends nothing, holds one of its own to move a reconciled run's receipt."""

    def __init__(self, conversations: ConversationStore, clock: Clock = SYSTEM_CLOCK) -> None:
        self._conversations = conversations
        self._clock = clock

    def _now_ms(self) -> int:
        return int(self._clock.now() * 1000)

    def set_receipt_as_system(self, message_id: str, delivery: str) -> str | None:
        """Moves a message's receipt forward for the receiving Crew (admitted when its run
        starts, processed when it ends); the receipt now, or None when the message is gone."""
        ref = parse_message_id(message_id)
        now = self._now_ms()
        lower = [s for s, rank in RECEIPT_ORDER.items() if rank < RECEIPT_ORDER[delivery]]
        if self._conversations.set_receipt(
            ref.conversation, ref.side, ref.seq, delivery, lower, now
        ):
            return delivery
        return self._conversations.get_receipt(ref.conversation, ref.side, ref.seq, now)

    def message_as_system(self, message_id: str) -> MessageView | None:
        """One message as its receiving side reads it (with the M12 delivered text)."""
        ref = parse_message_id(message_id)
        found = self._conversations.get_message(ref.conversation, ref.seq, self._now_ms())
        if found is None or found.side != ref.side:
            return None
        return message_view(ref.inbox, found)

    def conversation_as_system(self, conversation: str) -> Conversation | None:
        """The conversation's META (parties, status, depth), or None when it is gone."""
        return self._conversations.get_conversation(conversation, self._now_ms())

    def set_status_as_system(
        self, conversation: str, status: str, from_statuses: tuple[str, ...]
    ) -> bool:
        """C4: pause, resume or close; False when it is not in one of `from_statuses`."""
        return self._conversations.set_status(conversation, status, from_statuses)

    def delete_messages_as_system(self, conversation: str) -> int:
        """C4: a deleted conversation's messages go (it stays, closed, until its TTL)."""
        return self._conversations.delete_messages(conversation)

    def notes_before_as_system(self, message_id: str) -> list[MessageView]:
        """C1: the notes delivered to the same side just before this message (since the
        last message that was not a note), oldest first: what the other agent added since
        the receiver last worked in the conversation."""
        ref = parse_message_id(message_id)
        earlier = self._conversations.received_before(
            ref.conversation, ref.side, ref.seq, limits.NOTES_SHOWN_WITH_A_REQUEST
        )
        now = self._now_ms()
        notes = []
        for message in earlier:
            if message.framing.kind != "note" or not message.is_live(now):
                break
            notes.append(message_view(ref.inbox, message))
        return notes[::-1]

    def inbox_overview(self, inbox_id: str) -> InboxOverview | None:
        """An inbox's status and the last delivery records of what it received (no bodies),
        or None when the conversation is gone."""
        inbox = parse_inbox_id(inbox_id)
        now = self._now_ms()
        head = self._conversations.head(inbox.conversation, now)
        conv = head.conversation
        if conv is None:
            return None
        records = self._conversations.sent_records(
            inbox.conversation, inbox.side, limits.STATE_DELIVERY_RECORDS
        )
        return InboxOverview(
            inbox_id=inbox.inbox_id,
            conversation_id=inbox.conversation_id,
            peer=conv.parties[inbox.peer.side].address,
            status="expired" if is_expired(head, now) else "active",
            created_at=iso(conv.created_at) or "",
            last_activity_at=iso(head.last_activity) or "",
            received=delivery_records(inbox.conversation, records),
        )

    def crew_inboxes(
        self, account_id: str, crew_id: str, after: str | None, limit: int
    ) -> tuple[list[str], bool]:
        """The Crew's side (inbox ids) of its conversations, newest first, after the inbox
        `after`; and whether more follow."""
        before = parse_inbox_id(after).conversation if after else None
        found, more = self._conversations.crew_conversations(account_id, crew_id, before, limit)
        return [InboxRef(c, "b").inbox_id for c in found], more
