"""Reading direct messages: pages with cursors and long-polls, mailboxes, receipts and an
inbox's state (M3, M6, M7, M8). Reads never change a message; the only writes are the
receipt an `ack` moves forward and a name's presence (at most once a minute); the usage
of a page that returned messages is tallied in memory (agentworks.usage.tally).
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from agentworks import limits
from agentworks.clock import Clock
from agentworks.errors import Conflict, InvalidInput, Unavailable
from agentworks.identity.models import MESSAGES_READ, Consent, Principal
from agentworks.ids import InboxRef, MessageRef, parse_inbox_id, parse_message_id
from agentworks.messaging import delivery_text, rate_window
from agentworks.messaging.access import check_party_identity, consent_for, party_of
from agentworks.messaging.authority import InboxAuthority, is_expired
from agentworks.messaging.conversation_store import ConversationStore
from agentworks.messaging.models import (
    RECEIPT_ORDER,
    AckResult,
    DeliveryRecord,
    Head,
    InboxState,
    MessageView,
    ReadPage,
    StoredMessage,
    iso,
)
from agentworks.messaging.names import normalize_agent_name
from agentworks.observability import count
from agentworks.usage.counts import Counts

if TYPE_CHECKING:
    from agentworks.messaging.agent_store import AgentStore
    from agentworks.messaging.cursors import Cursors
    from agentworks.usage.tally import UsageTally

# A name's presence (online) is refreshed at most this often per connection.
_SEEN_REFRESH_MS = 60_000


def check_page(limit: int | None, wait_seconds: float | None) -> tuple[int, float]:
    page = limits.PAGE_DEFAULT if limit is None else limit
    if not (1 <= page <= limits.PAGE_MAX):
        raise InvalidInput(f"limit must be 1–{limits.PAGE_MAX}.", field="limit")
    wait = 0.0 if wait_seconds is None else float(wait_seconds)
    if not (0 <= wait <= limits.WAIT_MAX_SECONDS):
        raise InvalidInput(
            f"wait_seconds must be 0–{limits.WAIT_MAX_SECONDS}.", field="wait_seconds"
        )
    return page, wait


def delivery_records(conversation: str, records: list[StoredMessage]) -> list[DeliveryRecord]:
    """What an inbox's state shows of messages (ids, times, receipts): never their bodies."""
    return [
        DeliveryRecord(
            message_id=MessageRef(conversation, r.side, r.seq).message_id,
            created_at=iso(r.created_at) or "",
            receipt=r.receipt,  # type: ignore[arg-type]
        )
        for r in records
    ]


def message_view(inbox: InboxRef, m: StoredMessage) -> MessageView:
    """A stored message as the reader of `inbox` sees it (M12: labelled, how to reply)."""
    return MessageView(
        message_id=MessageRef(inbox.conversation, inbox.side, m.seq).message_id,
        conversation_id=inbox.conversation_id,
        inbox_id=inbox.inbox_id,
        reply_address=inbox.inbox_id,
        sender=m.sender,
        body=m.body,
        created_at=iso(m.created_at) or "",
        receipt=m.receipt,  # type: ignore[arg-type]
        delivered_text=delivery_text.render(
            m.sender, inbox.conversation_id, inbox.inbox_id, m.body, m.framing.written_by
        ),
        kind=m.framing.kind,
        written_by=m.framing.written_by,
        deadline_at=iso(m.framing.deadline_at),
        handoff=m.framing.handoff,
        # A reply answers a request its reader sent, one delivered to the other side.
        in_reply_to=(
            MessageRef(inbox.conversation, inbox.peer.side, m.framing.in_reply_to).message_id
            if m.framing.in_reply_to is not None
            else None
        ),
    )


class InboxReads:
    def __init__(
        self,
        conversations: ConversationStore,
        agents: AgentStore,
        cursors: Cursors,
        authority: InboxAuthority,
        clock: Clock,
        poll_interval: float,
        usage: UsageTally | None = None,
    ) -> None:
        self._conversations = conversations
        self._agents = agents
        self._cursors = cursors
        self._authority = authority
        self._clock = clock
        self._poll_interval = poll_interval
        self._usage = usage

    def _now_ms(self) -> int:
        return int(self._clock.now() * 1000)

    def read(
        self,
        principal: Principal,
        *,
        inbox_id: str | None = None,
        agent_name: str | None = None,
        after: str | None = None,
        wait_seconds: float | None = None,
        limit: int | None = None,
    ) -> ReadPage:
        """M3/M6 for every surface; the read-messages metric is counted here."""
        principal.require(MESSAGES_READ)
        page_size, wait = check_page(limit, wait_seconds)
        name = normalize_agent_name(agent_name) if agent_name else None
        if inbox_id:
            page = self._read_inbox(
                principal, parse_inbox_id(inbox_id), name, after, wait, page_size
            )
        elif name:
            page = self._read_mailbox(principal, name, after, wait, page_size)
        else:
            raise InvalidInput(
                "Give inbox_id to read a conversation, or agent_name to read that name's mailbox.",
                field="inbox_id",
            )
        count("MessagesRead", len(page.messages))
        if page.messages and self._usage is not None:
            # A read writes nothing to fold this into (the cursor is the caller's): tallied
            # here, written at most once a minute; empty pages and idle polls are no read.
            read = Counts(messages_read=len(page.messages), read_requests=1)
            self._usage.add(principal.account_id, principal.connection_id, read)
        return page

    def _read_inbox(
        self,
        principal: Principal,
        inbox: InboxRef,
        agent_name: str | None,
        after: str | None,
        wait: float,
        page_size: int,
    ) -> ReadPage:
        position = self._cursors.open_inbox_position(after, inbox.inbox_id)
        head, party, consent = self._authority.open(principal, inbox, agent_name)
        self._authority.refuse_expired(
            head, "This inbox expired after 7 idle days; its messages are gone."
        )
        deadline = self._clock.now() + wait
        while True:
            page = self._conversations.inbox_page(
                inbox.conversation, inbox.side, position, page_size, head, self._now_ms()
            )
            if page.messages or self._clock.now() + self._poll_interval > deadline:
                break
            self._clock.sleep(self._poll_interval)
            # Waiting costs one head read per poll: its counts say whether this side got
            # anything, whatever the other side sends meanwhile.
            head = self._conversations.head(inbox.conversation, self._now_ms())
        if consent is not None and party.agent_name is not None:
            self._mark_seen(principal, party.agent_name, consent)
        views = [message_view(inbox, m) for m in page.messages]
        return ReadPage(
            kind="inbox",
            messages=views,
            next_cursor=self._cursors.inbox_at(inbox.inbox_id, page.position),
            inbox_id=inbox.inbox_id,
            agent_name=party.agent_name,
        )

    def _read_mailbox(
        self, principal: Principal, name: str, after: str | None, wait: float, page_size: int
    ) -> ReadPage:
        consent = consent_for(principal, name, self._authority.fresh_consents)
        after_seq = self._cursors.open_mailbox(after, consent.agent_id)
        deadline = self._clock.now() + wait
        while True:
            found = self._conversations.mailbox_page(
                consent.agent_id, after_seq, page_size, self._now_ms()
            )
            if found or self._clock.now() + self._poll_interval > deadline:
                break
            self._clock.sleep(self._poll_interval)
        self._mark_seen(principal, name, consent)
        views = [
            MessageView(
                message_id=e.message_id,
                conversation_id=e.conversation_id,
                inbox_id=e.reply_inbox_id,
                reply_address=e.reply_inbox_id,
                sender=e.sender,
                body=e.body,
                created_at=iso(e.created_at) or "",
                delivered_text=delivery_text.render(
                    e.sender, e.conversation_id, e.reply_inbox_id, e.body
                ),
            )
            for e in found
        ]
        return ReadPage(
            kind="mailbox",
            messages=views,
            next_cursor=self._cursors.mailbox(
                consent.agent_id, found[-1].seq if found else after_seq
            ),
            agent_name=consent.display_name,
        )

    def _mark_seen(self, principal: Principal, name: str, consent: Consent) -> None:
        """Presence (online) at most once a minute per name and connection: the
        connection remembers when it last refreshed, and authentication read that."""
        now = self._now_ms()
        if consent.seen_at is not None and now - consent.seen_at < _SEEN_REFRESH_MS:
            return
        with contextlib.suppress(Exception):
            self._agents.touch(principal.account_id, name, consent, principal.connection_id, now)

    # ---------------------------------------------------------------- ack (M7)

    def ack(self, principal: Principal, message_id: str, delivery: str) -> AckResult:
        principal.require(MESSAGES_READ)
        if delivery not in RECEIPT_ORDER or delivery == "stored":
            raise InvalidInput("delivery must be typed, admitted or processed.", field="delivery")
        ref = parse_message_id(message_id)
        now = self._now_ms()
        conv = self._conversations.get_conversation(ref.conversation, now)
        party = party_of(principal, conv, ref.side)
        check_party_identity(principal, party, None, self._authority.fresh_consents)
        lower = [s for s, rank in RECEIPT_ORDER.items() if rank < RECEIPT_ORDER[delivery]]
        # Only a message delivered to the caller's side: seq alone names either side's.
        if self._conversations.set_receipt(
            ref.conversation, ref.side, ref.seq, delivery, lower, now
        ):
            return AckResult(message_id=ref.message_id, receipt=delivery)  # type: ignore[arg-type]
        current = self._conversations.get_receipt(ref.conversation, ref.side, ref.seq, now)
        if current is None:
            raise Unavailable()
        if current == delivery:
            return AckResult(message_id=ref.message_id, receipt=delivery)  # type: ignore[arg-type]
        raise Conflict(
            f"The receipt is already '{current}'; receipts only move forward "
            "(stored → typed → admitted → processed).",
            receipt=current,
        )

    # ---------------------------------------------------------------- state (M8)

    def inbox_state(
        self, principal: Principal, inbox_id: str, agent_name: str | None = None
    ) -> InboxState:
        principal.require(MESSAGES_READ)
        inbox = parse_inbox_id(inbox_id)
        name = normalize_agent_name(agent_name) if agent_name else None
        now = self._now_ms()
        head, party, _ = self._authority.open(principal, inbox, name)
        conv = head.conversation
        assert conv is not None
        records = self._conversations.sent_records(
            inbox.conversation, inbox.peer.side, limits.STATE_DELIVERY_RECORDS
        )
        retained = self._retained(inbox, head, now)
        # Authority is checked again after the read (M8), against what is stored now.
        self._authority.recheck(principal, party)
        window = rate_window.peek(head.window(), now)
        idle_ms = limits.INBOX_IDLE_SECONDS * 1000
        last_activity = head.last_activity
        return InboxState(
            inbox_id=inbox.inbox_id,
            conversation_id=inbox.conversation_id,
            peer=conv.parties[inbox.peer.side].address,
            status="expired" if is_expired(head, now) else "active",
            messages_retained=retained,
            rate_used=len(window.window),
            rate_remaining=window.remaining,
            retry_after=window.retry_after,
            created_at=iso(conv.created_at) or "",
            last_activity_at=iso(last_activity) or "",
            idle_expires_at=iso(last_activity + idle_ms) or "",
            delivery_records=delivery_records(inbox.conversation, records),
        )

    def _retained(self, inbox: InboxRef, head: Head, now_ms: int) -> int:
        """Messages of this inbox still held: delivered up to the newest message minus
        those before the oldest one retained (counts are cumulative per side)."""
        if head.latest is None:
            return 0
        oldest = self._conversations.oldest_live(inbox.conversation, now_ms)
        if oldest is None:
            return 0
        side = inbox.side
        before = oldest.counts[side] - (1 if oldest.side == side else 0)
        return max(0, head.latest.counts[side] - before)
