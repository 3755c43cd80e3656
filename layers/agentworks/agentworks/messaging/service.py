"""Direct-message rules: send, and the platform's own sends (M1, M2, M11, M12); reads,
acks and state are in `reading`, the authority checks both share in `authority`.

Domain logic only: keys, conditions and pagination live in the stores.

A send into an inbox reads the conversation's head (META + newest message, one Query),
decides (authority from the principal's consents, expiry, rate window, history bound)
and appends the next message of the chain with one conditional put; a racing writer that
lost re-reads and retries. A `submission_id` is claimed before anything is stored, so at
most one send stores a message for it (M2).
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from agentworks import limits
from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.errors import Conflict, InboxFull, InvalidInput, RateLimited, Unavailable
from agentworks.identity.models import MESSAGES_SEND, Principal
from agentworks.ids import InboxRef, MessageRef, Side, parse_inbox_id
from agentworks.messaging import rate_window
from agentworks.messaging.access import consent_for
from agentworks.messaging.authority import InboxAuthority
from agentworks.messaging.conversation_store import (
    ConversationStore,
    EvictionBlocked,
    WriteConflict,
)
from agentworks.messaging.crew_gate import ConversationClosed, CrewGate, CrewTarget
from agentworks.messaging.first_contacts import MAX_WRITE_ATTEMPTS, FirstContacts
from agentworks.messaging.message_kinds import (
    NOT_A_REQUEST,
    PLAIN,
    Framing,
    framing_for,
    hashed_body,
    refuse_outside_crew_conversations,
    reply_target,
)
from agentworks.messaging.message_values import HOUR_MS, check_body
from agentworks.messaging.models import (
    Head,
    Party,
    SendMessage,
    SendReceipt,
    StoredMessage,
    iso,
)
from agentworks.messaging.names import normalize_agent_name, parse_agent_target, parse_target
from agentworks.messaging.reading import InboxReads
from agentworks.messaging.submissions import (
    Stored,
    Submission,
    SubmissionIds,
    content_hash,
)
from agentworks.observability import count

if TYPE_CHECKING:
    from agentworks.messaging.agent_store import AgentStore
    from agentworks.messaging.cursors import Cursors
    from agentworks.messaging.lifecycle import InboxLifecycle
    from agentworks.usage.tally import UsageTally


class MessagingService(FirstContacts):
    """Sends (M1, M2, M11, M12), and the platform's sends for Crews; the platform's reads
    and receipts for Crews come from `CrewInboxViews`."""

    def __init__(
        self,
        conversations: ConversationStore,
        agents: AgentStore,
        cursors: Cursors,
        lifecycle: InboxLifecycle,
        clock: Clock = SYSTEM_CLOCK,
        poll_interval: float = 1.0,
        crew_gate: CrewGate | None = None,
        usage: UsageTally | None = None,
    ) -> None:
        super().__init__(conversations, clock)
        self._lifecycle = lifecycle
        self._agents = agents
        self._cursors = cursors
        self._poll_interval = poll_interval
        self._crew_gate = crew_gate
        self._authority = InboxAuthority(conversations, agents, clock)
        self._submissions = SubmissionIds(conversations, clock)
        reads = InboxReads(
            conversations, agents, cursors, self._authority, clock, poll_interval, usage
        )
        # Reads (M3, M6), acks (M7) and state (M8) are reading.InboxReads'; callers keep
        # asking the messaging service for them.
        self.read = reads.read
        self.ack = reads.ack
        self.inbox_state = reads.inbox_state

    # ---------------------------------------------------------------- send (M1, M2)

    def send(self, principal: Principal, request: SendMessage) -> SendReceipt:
        """M1/M2 for every surface (HTTP, MCP): the sent-messages metric is counted here."""
        receipt = self._send(principal, request)
        count("MessagesSent", 0 if receipt.replayed else 1)
        return receipt

    def _send(self, principal: Principal, request: SendMessage) -> SendReceipt:
        principal.require(MESSAGES_SEND)
        body = check_body(request.message)
        if (request.target is None) == (request.inbox_id is None):
            raise InvalidInput(
                "Give exactly one of target (agent:NAME or crew:NAME, to start a "
                "conversation) or inbox_id (to continue one).",
                field="target",
            )
        sender_name = normalize_agent_name(request.agent_name) if request.agent_name else None
        inbox = parse_inbox_id(request.inbox_id) if request.inbox_id is not None else None
        framing = framing_for(
            request.kind,
            request.deadline_seconds,
            request.handoff,
            request.in_reply_to,
            self._now_ms(),
            inbox,
        )
        if inbox is not None:
            return self._send_into(
                principal, inbox, sender_name, body, request.submission_id, framing
            )
        assert request.target is not None
        kind, target_name = parse_target(request.target)
        if not principal.may_target(f"{kind}:{target_name}"):
            raise Unavailable()
        sender = self._sender(principal, sender_name)
        if kind == "crew":
            return self._first_contact_crew(
                principal, target_name, sender, body, request.submission_id, framing
            )
        refuse_outside_crew_conversations(framing)
        receipt, _ = self._first_contact(
            principal.account_id, target_name, sender, body, request.submission_id
        )
        return receipt

    def _sender(self, principal: Principal, sender_name: str | None) -> Party:
        """The party a first contact comes from: the named agent (M5), or the account."""
        if not sender_name:
            return Party("external")
        consent = consent_for(principal, sender_name, self._authority.fresh_consents)
        return Party("agent", consent.agent_id, sender_name)

    def _send_into(
        self,
        principal: Principal,
        inbox: InboxRef,
        sender_name: str | None,
        body: str,
        submission_id: str | None,
        framing: Framing = PLAIN,
    ) -> SendReceipt:
        head, party, _ = self._authority.open(principal, inbox, sender_name, optimistic=True)
        self._authority.refuse_expired(head, "This inbox expired after 7 idle days.")
        crew = self._admit_crew_peer(principal, head, inbox)
        if not framing.is_plain:
            self._check_framing(head, inbox, framing)
        submission = None
        if submission_id is not None:
            digest = content_hash(inbox.inbox_id, party.address, hashed_body(body, framing))
            submission = Submission(
                principal.account_id, party.address, submission_id, digest, inbox
            )

        def reopen() -> Head:
            return self._authority.open(principal, inbox, sender_name)[0]

        def append(stored_submission_id: str | None) -> Stored:
            return self._append(inbox, party, body, head, stored_submission_id, reopen, framing)

        receipt = self._submissions.once(submission, append)
        if crew is not None:
            assert head.conversation is not None
            conv = head.conversation
            paused = conv.status == "paused"
            self._deliver_to_crew(
                principal, crew, inbox.peer, receipt, party, framing, paused, None, conv.depth
            )
        return receipt

    def _check_framing(self, head: Head, inbox: InboxRef, framing: Framing) -> None:
        """C1: requests, replies and notes go where a Crew is a party; a reply answers a
        request that was sent to its sender in this conversation."""
        conv = head.conversation
        assert conv is not None
        if all(party.kind != "crew" for party in conv.parties.values()):
            refuse_outside_crew_conversations(framing)
        asked = reply_target(inbox, framing)
        if asked is not None:
            request = self._conversations.get_message(asked.conversation, asked.seq, self._now_ms())
            if request is None or request.side != inbox.side or request.framing.kind != "request":
                raise InvalidInput(NOT_A_REQUEST, field="in_reply_to")

    def _admit_crew_peer(
        self, principal: Principal, head: Head, inbox: InboxRef
    ) -> CrewTarget | None:
        """M10: a send to a Crew that is the conversation's target re-checks its switch
        (turning it off counts at once, replies included) and that it is still the same
        Crew. (A Crew's own hand-offs, where it is side a, are answered by posting a
        result, not through the switch.)"""
        conv = head.conversation
        assert conv is not None
        peer = conv.parties[inbox.peer.side]
        if peer.kind != "crew" or inbox.peer.side != "b":
            return None
        crew = self._gate().admit(principal, peer.agent_name or "")
        if crew.crew_id != peer.agent_id:
            raise Unavailable()  # a re-created Crew is a new identity
        return crew

    def _append(
        self,
        inbox: InboxRef,
        party: Party,
        body: str,
        head: Head | None,
        submission_id: str | None,
        reopen: Callable[[], Head],
        framing: Framing = PLAIN,
    ) -> Stored:
        """The chained append: next seq after the head's newest message, its window and
        counts carried forward; retried from a fresh head (`reopen`, which re-checks the
        sender) when another send took the seq."""
        to = inbox.peer.side
        for _attempt in range(MAX_WRITE_ATTEMPTS):
            if head is None:
                head = reopen()
            self._authority.refuse_expired(head, "This inbox expired after 7 idle days.")
            conv = head.conversation
            assert conv is not None
            if conv.status == "closed":
                raise ConversationClosed()
            now = self._now_ms()
            decision = rate_window.admit(head.window(), now)
            if not decision.allowed:
                raise RateLimited(
                    f"This conversation accepted {limits.RATE_LIMIT_MESSAGES} messages in the "
                    f"last hour; retry after {decision.retry_after} s.",
                    retry_after=decision.retry_after,
                )
            seq = head.last_seq + 1
            if seq > limits.INBOX_HISTORY_MAX:
                # History is at most 1,000 per conversation (so per inbox too). The delete
                # and the put are separate: a send that loses the race after deleting has
                # trimmed one message early, which "at most" allows.
                try:
                    self._conversations.evict(conv.conversation, seq - limits.INBOX_HISTORY_MAX)
                except EvictionBlocked:
                    raise InboxFull(
                        f"The conversation holds {limits.INBOX_HISTORY_MAX:,} messages and its "
                        "oldest is still being delivered (admitted, not processed). Retry once "
                        "the receiver acknowledges it as processed.",
                    ) from None
            counts: dict[Side, int] = {"a": head.count("a"), "b": head.count("b")}
            counts[to] += 1
            receiver = conv.parties[to]
            message = StoredMessage(
                conversation=conv.conversation,
                side=to,
                seq=seq,
                sender=party.address,
                body=body,
                created_at=now,
                window=decision.window,
                counts=counts,
                submission_id=submission_id,
                to_agent=receiver.agent_id if receiver.kind == "agent" else None,
                framing=framing,
            )
            try:
                self._conversations.append(message)
            except WriteConflict:
                # Another send took this seq first; jitter so racers spread out.
                time.sleep(random.uniform(0, 0.01))
                head = None
                continue
            hour = now // HOUR_MS
            if hour > conv.activity_hour:
                # Rare (once an hour): moves the conversation in the idle indexes. Best
                # effort — the next send of the hour repeats it if this one is lost.
                with contextlib.suppress(ClientError):
                    self._conversations.move_activity(conv.conversation, hour, now)
            delivered = MessageRef(conv.conversation, to, seq)
            receipt = SendReceipt(
                inbox_id=inbox.inbox_id,
                conversation_id=inbox.conversation_id,
                message_id=delivered.message_id,
                receipt="stored",
                created_at=iso(now) or "",
            )
            return Stored(receipt, now)
        raise Conflict("The conversation is too busy right now; retry with the same submission_id.")

    def authorize_send(
        self,
        principal: Principal,
        inbox_id: str,
        agent_name: str | None,
        admit_crew: bool,
    ) -> CrewTarget | None:
        """Checks that `principal` may send into `inbox_id` (as `agent_name`) — a send's own
        checks, including a Crew target's switch unless `admit_crew` is False — without
        sending. Returns the Crew that is the conversation's target, if there is one."""
        principal.require(MESSAGES_SEND)
        inbox = parse_inbox_id(inbox_id)
        name = normalize_agent_name(agent_name) if agent_name else None
        head, _, _ = self._authority.open(principal, inbox, name)
        self._authority.refuse_expired(head, "This inbox expired after 7 idle days.")
        if admit_crew:
            return self._admit_crew_peer(principal, head, inbox)
        return None

    # ---------------------------------------------------------------- the platform's side
    # What the platform does for a Crew (it holds no connection): no principal is checked
    # here, so only Crew code that authorized its own caller (or runs inside an execution it
    # started) calls these. The chain, rate limit, history bound and expiry still apply.

    def send_as_system(
        self,
        inbox_id: str,
        message: str,
        submission_id: str | None = None,
        framing: Framing = PLAIN,
    ) -> SendReceipt:
        """Posts `message` from the party that holds `inbox_id` (a Crew's reply)."""
        body = check_body(message)
        inbox = parse_inbox_id(inbox_id)

        def reopen() -> Head:
            head = self._conversations.head(inbox.conversation, self._now_ms())
            if head.conversation is None:
                raise Unavailable()
            return head

        head = reopen()
        assert head.conversation is not None
        party = head.conversation.parties[inbox.side]
        submission = None
        if submission_id is not None:
            digest = content_hash(inbox.inbox_id, party.address, hashed_body(body, framing))
            submission = Submission(
                head.conversation.account_id, party.address, submission_id, digest, inbox
            )

        def append(stored_submission_id: str | None) -> Stored:
            return self._append(inbox, party, body, head, stored_submission_id, reopen, framing)

        return self._submissions.once(submission, append)

    def first_contact_as_system(
        self,
        account_id: str,
        sender: Party,
        target: str,
        message: str,
        submission_id: str | None = None,
    ) -> tuple[SendReceipt, str]:
        """A first contact from `sender` (a Crew handing work to `agent:NAME`) into that
        name's mailbox: the receipt and the target's agent_id."""
        return self._first_contact(
            account_id, parse_agent_target(target), sender, check_body(message), submission_id
        )
