"""First contacts (M1, M10): a send that opens a conversation, with a registered name (its
mailbox gets the message) or with a Crew (admitted by its switch; no mailbox), and the
hand-over of a Crew's messages to its gate.

A mixin of `MessagingService`: the stores, the lifecycle and the submission ids are the
service's own.
"""

from __future__ import annotations

import random
import time
from typing import TYPE_CHECKING

from agentworks.errors import Conflict, InvalidInput, Unavailable
from agentworks.identity.models import Principal
from agentworks.ids import InboxRef, MessageRef, new_ulid, parse_inbox_id
from agentworks.messaging.conversation_store import CapReached, ConversationExists, WriteConflict
from agentworks.messaging.crew_gate import CrewDelivery, CrewGate, CrewTarget
from agentworks.messaging.crew_inbox_views import CrewInboxViews
from agentworks.messaging.message_kinds import PLAIN, Framing, hashed_body
from agentworks.messaging.message_values import check_body, new_receipt, opening
from agentworks.messaging.models import MailboxEntry, Party, SendReceipt
from agentworks.messaging.submissions import Stored, Submission, SubmissionIds, content_hash

if TYPE_CHECKING:
    from agentworks.messaging.agent_store import AgentStore
    from agentworks.messaging.lifecycle import InboxLifecycle

# Optimistic writes retry when another send took the next seq (or moved a mailbox); 60
# racing senders settle well within this.
MAX_WRITE_ATTEMPTS = 100


def possibly_stored() -> Conflict:
    return Conflict(
        "This send may already have been stored; retry with the same "
        "submission_id to find out, or read the target's conversations.",
    )


class FirstContacts(CrewInboxViews):
    _agents: AgentStore
    _lifecycle: InboxLifecycle
    _submissions: SubmissionIds
    _crew_gate: CrewGate | None

    def _gate(self) -> CrewGate:
        if self._crew_gate is None:
            raise InvalidInput("Crew targets are not available on this server.", field="target")
        return self._crew_gate

    def _deliver_to_crew(
        self,
        principal: Principal,
        crew: CrewTarget,
        crew_inbox: InboxRef,
        receipt: SendReceipt,
        sender: Party,
        framing: Framing = PLAIN,
        paused: bool = False,
        asker_run_id: str | None = None,
        depth: int = 1,
    ) -> None:
        """Tells the gate, also for a replayed send: delivery is idempotent per message, so
        a send that stopped between storing and delivering is completed by its retry."""
        self._gate().delivered(
            principal,
            CrewDelivery(
                account_id=principal.account_id,
                crew=crew,
                inbox_id=crew_inbox.inbox_id,
                message_id=receipt.message_id,
                sender=sender.address,
                connection_id=principal.connection_id,
                created_at=receipt.created_at,
                framing=framing,
                paused=paused,
                asker_run_id=asker_run_id,
                depth=depth,
            ),
        )

    def _first_contact(
        self,
        account_id: str,
        target_name: str,
        sender: Party,
        body: str,
        submission_id: str | None,
    ) -> tuple[SendReceipt, str]:
        """A new conversation with a registered name (its mailbox gets the message): the
        receipt and the target's agent_id. The caller checked the sender's authority."""
        ulid = new_ulid(self._clock)  # planned before any claim, so a retry can find it
        mine = InboxRef(ulid, "a")
        delivered = MessageRef(ulid, "b", 1)
        submission = None
        if submission_id is not None:
            digest = content_hash(f"agent:{target_name}", sender.address, body)
            submission = Submission(account_id, sender.address, submission_id, digest, mine)
        target_ids: list[str] = []

        def create(stored_submission_id: str | None) -> Stored:
            for _attempt in range(MAX_WRITE_ATTEMPTS):
                now = self._now_ms()
                target = self._agents.get(account_id, target_name)
                if target is None:
                    raise Unavailable()
                target_ids.append(target.agent_id)
                conv, message = opening(
                    ulid,
                    account_id,
                    sender,
                    Party("agent", target.agent_id, target.name),
                    body,
                    now,
                    stored_submission_id,
                )
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
                try:
                    self._conversations.create(conv, message, mailbox, target)
                except WriteConflict:
                    time.sleep(random.uniform(0, 0.01))  # the target's mailbox moved
                    continue
                except CapReached as full:
                    # M11: admission past a cap retires the least recently active one.
                    self._lifecycle.make_room(account_id, full.scope)
                    continue
                except ConversationExists:
                    return self._committedopening(mine, delivered)
                return Stored(new_receipt(mine, delivered, now), now)
            raise Conflict("The name's mailbox is too busy right now; retry.")

        receipt = self._submissions.once(submission, create)
        if not target_ids:  # a replay: the registration as it is now
            target = self._agents.get(account_id, target_name)
            target_ids.append(target.agent_id if target else "")
        return receipt, target_ids[-1]

    def _first_contact_crew(
        self,
        principal: Principal,
        crew_name: str,
        sender: Party,
        body: str,
        submission_id: str | None,
        framing: Framing = PLAIN,
        asker_run_id: str | None = None,
        depth: int = 1,
    ) -> SendReceipt:
        """A new conversation whose target (side b) is a Crew: admitted by its switch (M10),
        no mailbox; the gate then starts a run or holds the message for review."""
        crew = self._gate().admit(principal, crew_name)
        account_id = principal.account_id
        ulid = new_ulid(self._clock)
        mine = InboxRef(ulid, "a")
        delivered = MessageRef(ulid, "b", 1)
        submission = None
        if submission_id is not None:
            digest = content_hash(f"crew:{crew.name}", sender.address, hashed_body(body, framing))
            submission = Submission(account_id, sender.address, submission_id, digest, mine)

        def create(stored_submission_id: str | None) -> Stored:
            for _attempt in range(MAX_WRITE_ATTEMPTS):
                now = self._now_ms()
                conv, message = opening(
                    ulid,
                    account_id,
                    sender,
                    Party("crew", crew.crew_id, crew.name),
                    body,
                    now,
                    stored_submission_id,
                    framing,
                )
                conv.depth = depth
                try:
                    self._conversations.create_direct(conv, message)
                except CapReached as full:
                    self._lifecycle.make_room(account_id, full.scope)
                    continue
                except ConversationExists:
                    return self._committedopening(mine, delivered)
                return Stored(new_receipt(mine, delivered, now), now)
            raise Conflict("The conversation could not be created right now; retry.")

        receipt = self._submissions.once(submission, create)
        crew_inbox = parse_inbox_id(receipt.inbox_id).peer
        self._deliver_to_crew(
            principal, crew, crew_inbox, receipt, sender, framing, False, asker_run_id, depth
        )
        return receipt

    def _committedopening(self, mine: InboxRef, delivered: MessageRef) -> Stored:
        """The conversation id is this send's own (planned per request), so an existing one
        means an earlier attempt committed and only its answer was lost: that is the send."""
        first = self._conversations.get_message(mine.conversation, 1, self._now_ms())
        if first is None:
            raise possibly_stored()
        return Stored(new_receipt(mine, delivered, first.created_at), first.created_at)

    def ask_crew_as_system(
        self,
        run_as: Principal,
        asker: Party,
        crew_name: str,
        message: str,
        framing: Framing,
        asker_run_id: str,
        depth: int,
        submission_id: str,
    ) -> SendReceipt:
        """C3: a Crew's run opens a conversation with another Crew and sends it a request,
        as whoever started the work (`run_as`: the target's access list and switch are
        checked for that connection, as for any first contact)."""
        return self._first_contact_crew(
            run_as,
            crew_name,
            asker,
            check_body(message),
            submission_id,
            framing,
            asker_run_id=asker_run_id,
            depth=depth,
        )
