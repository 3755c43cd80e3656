"""Direct-message rules: send, read, ack and state (M1–M3, M6–M8, M11, M12).

Domain logic only: keys, conditions and pagination live in the stores.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import random
import time
from dataclasses import replace
from typing import TYPE_CHECKING

from agentworks import limits
from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.errors import Conflict, Expired, InboxFull, InvalidInput, RateLimited, Unavailable
from agentworks.identity.models import MESSAGES_READ, MESSAGES_SEND, Principal
from agentworks.ids import InboxRef, MessageRef, new_ulid, parse_inbox_id, parse_message_id
from agentworks.messaging import delivery_text, rate_window
from agentworks.messaging.access import check_party_identity, may_act_as, party_of
from agentworks.messaging.conversation_store import (
    BindingExists,
    CapReached,
    ConversationStore,
    EvictionBlocked,
    Submission,
    WriteConflict,
)
from agentworks.messaging.models import (
    RECEIPT_ORDER,
    AckResult,
    Conversation,
    DeliveryRecord,
    InboxState,
    MailboxEntry,
    MessageView,
    Party,
    ReadPage,
    Registration,
    SendMessage,
    SendReceipt,
    StoredMessage,
    SubmissionBinding,
    iso,
)
from agentworks.messaging.names import normalize_agent_name, parse_agent_target

if TYPE_CHECKING:
    from agentworks.messaging.agent_store import AgentStore
    from agentworks.messaging.cursors import Cursors
    from agentworks.messaging.lifecycle import InboxLifecycle

# Optimistic writes retry on a moved conversation; 60 racing senders settle well within this.
_MAX_WRITE_ATTEMPTS = 100
_SEEN_REFRESH_MS = 60_000


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


def _content_hash(destination: str, sender: str, body: str) -> str:
    payload = json.dumps([destination, sender, body], ensure_ascii=False).encode()
    return hashlib.sha256(payload).hexdigest()


class MessagingService:
    def __init__(
        self,
        conversations: ConversationStore,
        agents: AgentStore,
        cursors: Cursors,
        lifecycle: InboxLifecycle,
        clock: Clock = SYSTEM_CLOCK,
        poll_interval: float = 1.0,
    ) -> None:
        self._conversations = conversations
        self._lifecycle = lifecycle
        self._agents = agents
        self._cursors = cursors
        self._clock = clock
        self._poll_interval = poll_interval

    def _now_ms(self) -> int:
        return int(self._clock.now() * 1000)

    # ---------------------------------------------------------------- send (M1, M2)

    def send(self, principal: Principal, request: SendMessage) -> SendReceipt:
        principal.require(MESSAGES_SEND)
        body = check_body(request.message)
        if (request.target is None) == (request.inbox_id is None):
            raise InvalidInput(
                "Give exactly one of target (agent:NAME, to start a conversation) or "
                "inbox_id (to continue one).",
                field="target",
            )
        sender_name = normalize_agent_name(request.agent_name) if request.agent_name else None
        target_name = parse_agent_target(request.target) if request.target else None
        inbox = parse_inbox_id(request.inbox_id) if request.inbox_id else None
        destination = f"agent:{target_name}" if target_name else str(request.inbox_id)
        sender_key = f"agent:{sender_name}" if sender_name else "external"
        digest = _content_hash(destination, sender_key, body)

        for _attempt in range(_MAX_WRITE_ATTEMPTS):
            try:
                if inbox is not None:
                    return self._send_into(principal, inbox, sender_name, body, request, digest)
                assert target_name is not None
                return self._first_contact(
                    principal, target_name, sender_name, body, request, digest
                )
            except WriteConflict:
                # Someone moved the conversation first; jitter so racers spread out.
                time.sleep(random.uniform(0, 0.01))
            except BindingExists as existing:
                return self._replay(existing.binding, digest)
            except CapReached as full:
                # M11: admission past a cap retires the least recently active conversation.
                self._lifecycle.make_room(principal.account_id, full.scope)
        raise Conflict("The conversation is too busy right now; retry with the same submission_id.")

    def _replay(self, binding: SubmissionBinding, digest: str) -> SendReceipt:
        if binding.content_hash != digest:
            raise Conflict(
                "submission_id was already used for a different message; use a new "
                "submission_id for new content.",
                field="submission_id",
            )
        return SendReceipt(
            inbox_id=binding.inbox_id,
            conversation_id=binding.conversation_id,
            message_id=binding.message_id,
            receipt="stored",
            created_at=iso(binding.created_at) or "",
            replayed=True,
        )

    def _submission(
        self,
        principal: Principal,
        sender_key: str,
        request: SendMessage,
        binding: SubmissionBinding,
    ) -> Submission | None:
        if request.submission_id is None:
            return None
        return Submission(principal.account_id, sender_key, request.submission_id, binding)

    def _first_contact(
        self,
        principal: Principal,
        target_name: str,
        sender_name: str | None,
        body: str,
        request: SendMessage,
        digest: str,
    ) -> SendReceipt:
        if not principal.may_target(f"agent:{target_name}"):
            raise Unavailable()
        now = self._now_ms()
        wanted = [(principal.account_id, target_name)]
        if sender_name and sender_name != target_name:
            wanted.append((principal.account_id, sender_name))
        _, regs = self._conversations.load(now, registrations=tuple(wanted))
        target = regs.get(target_name)
        if target is None:
            raise Unavailable()
        sender = Party("external")
        if sender_name:
            reg = may_act_as(principal, regs.get(sender_name))
            sender = Party("agent", reg.agent_id, reg.name)

        ulid = new_ulid(self._clock)
        conv = Conversation(
            conversation=ulid,
            account_id=principal.account_id,
            parties={"a": sender, "b": Party("agent", target.agent_id, target.name)},
            version=1,
            created_at=now,
            last_activity=now,
            activity_hour=now // 3_600_000,
            seq={"a": 0, "b": 1},
            rate=[now],
        )
        delivered = MessageRef(ulid, "b", 1)
        mine = InboxRef(ulid, "a")
        message = StoredMessage(ulid, "b", 1, sender.address, body, now)
        mailbox = MailboxEntry(
            agent_id=target.agent_id,
            seq=target.mailbox_seq + 1,
            message_id=delivered.message_id,
            conversation_id=mine.conversation_id,
            reply_inbox_id=delivered.inbox.inbox_id,
            sender=sender.address,
            body=body,
            created_at=now,
        )
        binding = SubmissionBinding(
            digest, mine.inbox_id, mine.conversation_id, delivered.message_id, now
        )
        self._conversations.create(
            conv,
            message,
            mailbox,
            target,
            self._submission(principal, sender.address, request, binding),
        )
        return SendReceipt(
            inbox_id=mine.inbox_id,
            conversation_id=mine.conversation_id,
            message_id=delivered.message_id,
            receipt="stored",
            created_at=iso(now) or "",
        )

    def _send_into(
        self,
        principal: Principal,
        inbox: InboxRef,
        sender_name: str | None,
        body: str,
        request: SendMessage,
        digest: str,
    ) -> SendReceipt:
        now = self._now_ms()
        conv, party, _ = self._authorized(principal, inbox, sender_name, now)
        sender_key = party.address
        if conv.is_expired(now):
            raise Expired(
                "This inbox expired after 7 idle days. Start a new conversation with "
                "target=agent:NAME.",
            )
        decision = rate_window.admit(conv.rate, now)
        if not decision.allowed:
            if request.submission_id:
                binding = self._conversations.get_binding(
                    principal.account_id, sender_key, request.submission_id, now
                )
                if binding is not None:
                    return self._replay(binding, digest)
            raise RateLimited(
                f"This conversation accepted {limits.RATE_LIMIT_MESSAGES} messages in the last "
                f"hour; retry after {decision.retry_after} s.",
                retry_after=decision.retry_after,
            )

        to = inbox.peer.side
        seq = conv.seq[to] + 1
        oldest = conv.oldest[to]
        evict = None
        if conv.retained(to) >= limits.INBOX_HISTORY_MAX:
            evict = MessageRef(conv.conversation, to, oldest)
            oldest += 1
        hour = now // 3_600_000
        after = replace(
            conv,
            version=conv.version + 1,
            seq={**conv.seq, to: seq},
            oldest={**conv.oldest, to: oldest},
            rate=decision.window,
            last_activity=now,
            activity_hour=hour,
        )
        delivered = MessageRef(conv.conversation, to, seq)
        binding = SubmissionBinding(
            digest, inbox.inbox_id, inbox.conversation_id, delivered.message_id, now
        )
        try:
            self._conversations.append(
                after,
                conv.version,
                StoredMessage(conv.conversation, to, seq, sender_key, body, now),
                evict,
                self._submission(principal, sender_key, request, binding),
                move_activity_hour=hour != conv.activity_hour,
            )
        except EvictionBlocked:
            raise InboxFull(
                f"The receiving inbox holds {limits.INBOX_HISTORY_MAX:,} messages and its oldest "
                "is still being delivered (admitted, not processed). Retry once the receiver "
                "acknowledges it as processed.",
            ) from None
        return SendReceipt(
            inbox_id=inbox.inbox_id,
            conversation_id=inbox.conversation_id,
            message_id=delivered.message_id,
            receipt="stored",
            created_at=iso(now) or "",
        )

    def _authorized(
        self, principal: Principal, inbox: InboxRef, agent_name: str | None, now: int
    ) -> tuple[Conversation, Party, Registration | None]:
        """Loads the conversation (and the acting name, when given) in one request and
        checks the caller holds `inbox`'s side."""
        wanted = ((principal.account_id, agent_name),) if agent_name else ()
        conv, regs = self._conversations.load(now, inbox.conversation, wanted)
        party = party_of(principal, conv, inbox.side)
        assert conv is not None
        reg: Registration | None = None
        if party.kind == "agent":
            assert party.agent_name is not None
            if agent_name is not None and agent_name != party.agent_name:
                raise Unavailable()
            reg = regs.get(party.agent_name) or self._agents.get(
                principal.account_id, party.agent_name
            )
        elif agent_name is not None:
            raise Unavailable()
        check_party_identity(principal, party, reg)
        return conv, party, reg

    # ---------------------------------------------------------------- read (M3, M6)

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
        principal.require(MESSAGES_READ)
        page_size, wait = check_page(limit, wait_seconds)
        name = normalize_agent_name(agent_name) if agent_name else None
        if inbox_id:
            return self._read_inbox(
                principal, parse_inbox_id(inbox_id), name, after, wait, page_size
            )
        if name:
            return self._read_mailbox(principal, name, after, wait, page_size)
        raise InvalidInput(
            "Give inbox_id to read a conversation, or agent_name to read that name's mailbox.",
            field="inbox_id",
        )

    def _read_inbox(
        self,
        principal: Principal,
        inbox: InboxRef,
        agent_name: str | None,
        after: str | None,
        wait: float,
        page_size: int,
    ) -> ReadPage:
        after_seq = self._cursors.open_inbox(after, inbox.inbox_id)
        now = self._now_ms()
        conv, party, reg = self._authorized(principal, inbox, agent_name, now)
        if conv.is_expired(now):
            raise Expired(
                "This inbox expired after 7 idle days; its messages are gone. Start a new "
                "conversation with target=agent:NAME."
            )
        deadline = self._clock.now() + wait
        while True:
            found = self._conversations.inbox_page(
                inbox.conversation, inbox.side, after_seq, page_size, self._now_ms()
            )
            if found or self._clock.now() + self._poll_interval > deadline:
                break
            self._clock.sleep(self._poll_interval)
        if reg is not None:
            self._mark_seen(reg)
        views = [self._view(inbox, m) for m in found]
        return ReadPage(
            kind="inbox",
            messages=views,
            next_cursor=self._cursors.inbox(inbox.inbox_id, found[-1].seq if found else after_seq),
            inbox_id=inbox.inbox_id,
            agent_name=party.agent_name,
        )

    def _view(self, inbox: InboxRef, m: StoredMessage) -> MessageView:
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
                m.sender, inbox.conversation_id, inbox.inbox_id, m.body
            ),
        )

    def _read_mailbox(
        self, principal: Principal, name: str, after: str | None, wait: float, page_size: int
    ) -> ReadPage:
        reg = may_act_as(principal, self._agents.get(principal.account_id, name))
        after_seq = self._cursors.open_mailbox(after, reg.agent_id)
        deadline = self._clock.now() + wait
        while True:
            found = self._conversations.mailbox_page(
                reg.agent_id, after_seq, page_size, self._now_ms()
            )
            if found or self._clock.now() + self._poll_interval > deadline:
                break
            self._clock.sleep(self._poll_interval)
        self._mark_seen(reg)
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
            next_cursor=self._cursors.mailbox(reg.agent_id, found[-1].seq if found else after_seq),
            agent_name=reg.display_name,
        )

    def _mark_seen(self, reg: Registration) -> None:
        now = self._now_ms()
        if reg.last_seen_at is None or now - reg.last_seen_at >= _SEEN_REFRESH_MS:
            with contextlib.suppress(Exception):
                self._agents.touch(reg, now)

    # ---------------------------------------------------------------- ack (M7)

    def ack(self, principal: Principal, message_id: str, delivery: str) -> AckResult:
        principal.require(MESSAGES_READ)
        if delivery not in RECEIPT_ORDER or delivery == "stored":
            raise InvalidInput("delivery must be typed, admitted or processed.", field="delivery")
        ref = parse_message_id(message_id)
        now = self._now_ms()
        self._authorized(principal, ref.inbox, None, now)
        lower = [s for s, rank in RECEIPT_ORDER.items() if rank < RECEIPT_ORDER[delivery]]
        if self._conversations.set_receipt(ref, delivery, lower, now):
            return AckResult(message_id=ref.message_id, receipt=delivery)  # type: ignore[arg-type]
        current = self._conversations.get_receipt(ref, now)
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
        conv, _, _ = self._authorized(principal, inbox, name, now)
        records = self._conversations.sent_records(
            inbox.conversation, inbox.peer.side, limits.STATE_DELIVERY_RECORDS
        )
        # Authority is checked again after the read (M8).
        self._authorized(principal, inbox, name, self._now_ms())
        window = rate_window.peek(conv.rate, now)
        idle_ms = limits.INBOX_IDLE_SECONDS * 1000
        return InboxState(
            inbox_id=inbox.inbox_id,
            conversation_id=inbox.conversation_id,
            peer=conv.parties[inbox.peer.side].address,
            status="expired" if conv.is_expired(now) else "active",
            messages_retained=conv.retained(inbox.side),
            rate_used=len(window.window),
            rate_remaining=window.remaining,
            retry_after=window.retry_after,
            created_at=iso(conv.created_at) or "",
            last_activity_at=iso(conv.last_activity) or "",
            idle_expires_at=iso(conv.last_activity + idle_ms) or "",
            delivery_records=[
                DeliveryRecord(
                    message_id=MessageRef(inbox.conversation, r.side, r.seq).message_id,
                    created_at=iso(r.created_at) or "",
                    receipt=r.receipt,  # type: ignore[arg-type]
                )
                for r in records
            ],
        )
