"""Pause, resume, close and delete a conversation with a Crew (C4).

- **Pause**: no new runs start in it; a run already going finishes and its reply is kept.
  Messages still arrive: their runs wait (`received`) until someone resumes it.
- **Resume**: the held messages start their runs (or wait for review, under `review`).
- **Close**: for good. Its open requests are cancelled (their runs stopped) and it takes no
  more messages.
- **Delete**: closes it, then deletes its messages; the runs it started stay.

Who may: pause, resume and close, anyone who can act for either side — whoever holds the
asker's inbox, or an account admin who can see the Crew; delete, an account admin. Anyone
else gets what an unknown inbox gets.
"""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING

from agentworks import limits
from agentworks.audit.entries import PLATFORM, Action, Actor, AuditEntry
from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.conversations.models import ConversationStatusView
from agentworks.crews.access import visible
from agentworks.crews.models import Crew
from agentworks.errors import Conflict, Unavailable
from agentworks.identity.models import ADMIN, Principal
from agentworks.ids import InboxRef, parse_inbox_id
from agentworks.messaging.models import Conversation
from agentworks.observability import count

if TYPE_CHECKING:
    from agentworks.conversations.crew_inbox_store import CrewInboxStore
    from agentworks.conversations.message_runs import MessageRuns
    from agentworks.conversations.request_store import RequestStore
    from agentworks.crews.crew_store import CrewStore
    from agentworks.crews.execution import Executions
    from agentworks.messaging.service import MessagingService

logger = logging.getLogger(__name__)

CLOSED_REASON = "The conversation was closed."


class ConversationControls:
    def __init__(
        self,
        crews: CrewStore,
        inbox: CrewInboxStore,
        requests: RequestStore,
        runs: MessageRuns,
        messaging: MessagingService | None,
        executions: Executions,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._crews = crews
        self._inbox = inbox
        self._requests = requests
        self._runs = runs
        self._messaging = messaging
        self._executions = executions
        self._clock = clock

    def _now(self) -> int:
        return int(self._clock.now() * 1000)

    def pause(
        self, principal: Principal, inbox_id: str, agent_name: str | None = None
    ) -> ConversationStatusView:
        inbox, conv = self._authorized(principal, inbox_id, agent_name)
        self._move(inbox, "paused", ("active",))
        self._audit(conv, "paused", _by(principal), inbox)
        count("ConversationsPaused")
        return _view(inbox, "paused")

    def resume(
        self, principal: Principal, inbox_id: str, agent_name: str | None = None
    ) -> ConversationStatusView:
        inbox, conv = self._authorized(principal, inbox_id, agent_name)
        self._move(inbox, "active", ("paused",))
        self._audit(conv, "resumed", _by(principal), inbox)
        started = self._start_held(conv, _by(principal))
        return _view(inbox, "active", started_runs=started)

    def close(
        self, principal: Principal, inbox_id: str, agent_name: str | None = None
    ) -> ConversationStatusView:
        inbox, conv = self._authorized(principal, inbox_id, agent_name)
        self._move(inbox, "closed", ("active", "paused"))
        self._audit(conv, "closed", _by(principal), inbox)
        cancelled = self._cancel_open(inbox.conversation, _by(principal))
        count("ConversationsClosed")
        return _view(inbox, "closed", cancelled_requests=cancelled)

    def delete(self, principal: Principal, inbox_id: str) -> ConversationStatusView:
        """An account admin's: closes it (if it was not), then deletes its messages."""
        principal.require(ADMIN)
        inbox, conv = self._authorized(principal, inbox_id, None)
        messaging = self._messaging
        assert messaging is not None
        cancelled = 0
        if messaging.set_status_as_system(inbox.conversation, "closed", ("active", "paused")):
            self._audit(conv, "closed", _by(principal), inbox)
            cancelled = self._cancel_open(inbox.conversation, _by(principal))
        messaging.delete_messages_as_system(inbox.conversation)
        self._audit(conv, "deleted", _by(principal), inbox)
        return _view(inbox, "deleted", cancelled_requests=cancelled)

    def close_all_of(self, crew: Crew) -> int:
        """C4: a deleted Crew's conversations close (their open requests cancelled)."""
        if self._messaging is None:
            return 0
        closed, after = 0, None
        while True:
            inboxes, more = self._messaging.crew_inboxes(
                crew.account_id, crew.crew_id, after, limits.STATE_PAGE_MAX
            )
            for inbox_id in inboxes:
                conversation = parse_inbox_id(inbox_id).conversation
                if self._messaging.set_status_as_system(
                    conversation, "closed", ("active", "paused")
                ):
                    self._audit_closed_with(crew, conversation)
                    self._cancel_open(conversation, PLATFORM)
                    closed += 1
            if not more or not inboxes:
                return closed
            after = inboxes[-1]

    # ---- the parts ----

    def _audit(self, conv: Conversation, action: Action, actor: Actor, inbox: InboxRef) -> None:
        """C6: the conversation's change, right after its conditional write succeeded."""
        entry = AuditEntry(
            account_id=conv.account_id,
            conversation=conv.conversation,
            action=action,
            actor=actor,
            inbox_id=inbox.inbox_id,
        )
        self._inbox.audit(entry, self._now())

    def _audit_closed_with(self, crew: Crew, conversation: str) -> None:
        entry = AuditEntry(
            account_id=crew.account_id,
            conversation=conversation,
            action="closed",
            actor=PLATFORM,
            detail=f"crew:{crew.name} was deleted",
        )
        self._inbox.audit(entry, self._now())

    def _authorized(
        self, principal: Principal, inbox_id: str, agent_name: str | None
    ) -> tuple[InboxRef, Conversation]:
        """The inbox and its conversation with a Crew, if `principal` may act for a side."""
        if self._messaging is None:
            raise Unavailable()
        inbox = parse_inbox_id(inbox_id)
        conv = self._messaging.conversation_as_system(inbox.conversation)
        if conv is None or conv.account_id != principal.account_id:
            raise Unavailable()
        crew_side = next((s for s, p in conv.parties.items() if p.kind == "crew"), None)
        if crew_side is None:
            raise Unavailable()  # between named agents there is nothing to pause or close
        if inbox.side == crew_side:
            # The Crew's side is nobody's inbox: a person who can edit the Crew acts for it.
            principal.require(ADMIN)
            crew = self._crews.get(principal.account_id, conv.parties[crew_side].agent_name or "")
            if crew is None or crew.crew_id != conv.parties[crew_side].agent_id:
                raise Unavailable()
            visible(principal, crew)
        else:
            self._messaging.authorize_send(principal, inbox_id, agent_name, admit_crew=False)
        return inbox, conv

    def _move(self, inbox: InboxRef, status: str, from_statuses: tuple[str, ...]) -> None:
        assert self._messaging is not None
        if not self._messaging.set_status_as_system(inbox.conversation, status, from_statuses):
            now = self._messaging.conversation_as_system(inbox.conversation)
            where = now.status if now is not None else "gone"
            raise Conflict(
                f"This conversation is {where}; it can't be set {status} from there.",
                state=where,
            )

    def _cancel_open(self, conversation: str, actor: Actor) -> int:
        """Close: every open request is cancelled (by `actor`) and its run stopped."""
        cancelled = 0
        now = self._now()
        for request in self._requests.of_conversation(conversation, limit=10_000):
            before = self._requests.close(
                conversation, request.seq, "cancelled", CLOSED_REASON, now, actor
            )
            if before is None:
                continue
            cancelled += 1
            if before.state == "running" and before.run_id:
                with contextlib.suppress(Exception):  # an ended execution: nothing to stop
                    self._executions.stop(before.run_id, CLOSED_REASON)
        return cancelled

    def _start_held(self, conv: Conversation, actor: Actor) -> int:
        """Resume: messages that arrived while paused start their runs (or wait for
        review, when that is the Crew's switch now)."""
        crew_side, crew_party = next((s, p) for s, p in conv.parties.items() if p.kind == "crew")
        crew = self._crews.get(conv.account_id, crew_party.agent_name or "")
        if crew is None or crew.crew_id != crew_party.agent_id:
            return 0
        started = 0
        now = self._now()
        crew_inbox = InboxRef(conv.conversation, crew_side).inbox_id
        for held in self._inbox.received(conv.conversation):
            if crew.definition.messaging == "review":
                self._inbox.hold_for_review(held, now, actor)
                continue
            record = self._runs.for_held(held, crew.name, crew_inbox, "received", actor)
            started += int(record is not None and record.state != "failed")
        return started


def _by(principal: Principal) -> Actor:
    return Actor.connection(principal.connection_id)


def _view(inbox: InboxRef, status: str, **counts: int) -> ConversationStatusView:
    return ConversationStatusView(
        inbox_id=inbox.inbox_id,
        conversation_id=inbox.conversation_id,
        status=status,  # type: ignore[arg-type]
        **counts,
    )
