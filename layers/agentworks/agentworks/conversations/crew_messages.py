"""Messages to Crews (M8, M10): the messaging switch, a person's review, and a Crew's state.

`CrewReception` is messaging's `CrewGate`: a send to a Crew is admitted only while the Crew
exists, the caller may use it and its switch is not `off`; once stored, the message starts
a run at once (`on`) or waits for a person (`review`). `CrewInboxes` holds what an account
admin does with them: release or decline a message waiting for review, and read the Crew's
state (its conversations, delivery records and wakeups — never bodies).
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from agentworks import limits
from agentworks.audit.entries import Actor, AuditEntry
from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.conversations.crew_inbox_store import CrewInboxStore, Delivery, Wakeup
from agentworks.conversations.message_runs import MessageRuns
from agentworks.conversations.models import (
    CrewDeliveryRecord,
    CrewInboxState,
    CrewState,
    ReviewOutcome,
    WakeupView,
)
from agentworks.crews.access import editable, visible
from agentworks.crews.conversation_records import LiveConnection
from agentworks.crews.crew_store import CrewStore
from agentworks.crews.models import Crew
from agentworks.errors import AgentWorksError, Conflict, InvalidInput, Unavailable
from agentworks.identity.models import ADMIN, Principal
from agentworks.ids import InboxRef, parse_inbox_id, parse_message_id
from agentworks.limits import STATE_DELIVERY_RECORDS
from agentworks.messaging.crew_gate import CrewDelivery, CrewTarget, MessagingOff
from agentworks.messaging.models import iso

if TYPE_CHECKING:
    from agentworks.conversations.asker_runs import AskerRuns
    from agentworks.conversations.requests import Requests
    from agentworks.messaging.message_kinds import Framing
    from agentworks.messaging.service import MessagingService


def wakeup_view(wakeup: Wakeup) -> WakeupView:
    return WakeupView(
        wakeup_id=wakeup.wakeup_id,
        inbox_id=wakeup.inbox_id,
        due_at=iso(wakeup.due_at) or "",
        state=wakeup.state,
        run_id=wakeup.run_id,
        run_state=wakeup.run_state,
        error=wakeup.error,
        created_at=iso(wakeup.created_at) or "",
    )


class CrewReception:
    """The messaging gate (M10) for the account's Crews."""

    def __init__(
        self,
        crews: CrewStore,
        inbox: CrewInboxStore,
        runs: MessageRuns,
        clock: Clock = SYSTEM_CLOCK,
        askers: AskerRuns | None = None,
    ) -> None:
        self._crews = crews
        self._inbox = inbox
        self._runs = runs
        self._clock = clock
        self._askers = askers  # C3: a reply to a run's ask-back wakes that run

    def admit(self, principal: Principal, crew_name: str) -> CrewTarget:
        crew = visible(principal, self._crews.get(principal.account_id, crew_name))
        switch = crew.definition.messaging
        if switch == "off":
            raise MessagingOff(crew.name)
        return CrewTarget(crew.crew_id, crew.name, switch)

    def delivered(self, principal: Principal, delivery: CrewDelivery) -> None:
        framing = delivery.framing
        ref = parse_message_id(delivery.message_id)
        now = int(self._clock.now() * 1000)
        sender = (
            Actor.run(delivery.asker_run_id, delivery.connection_id)
            if delivery.asker_run_id
            else Actor.connection(delivery.connection_id)
        )
        # C6: stamped now, so it sorts before the entries of what its delivery does; written
        # once the delivery is new (a replayed send wrote it before). A replayed note, which
        # has no delivery record, is audited again.
        sent = AuditEntry(
            account_id=delivery.account_id,
            conversation=ref.conversation,
            action="message_sent",
            actor=sender,
            message_id=delivery.message_id,
            kind=framing.kind,
            inbox_id=delivery.inbox_id,
        ).stamped(now)
        if framing.kind == "note":
            self._inbox.audit(sent, now)
            return  # C1: a note starts no run; the Crew reads it the next time it works here
        if framing.kind == "reply" and self._carries_on(ref.conversation, framing, delivery):
            self._inbox.audit(sent, now)
            return  # C3: the run that asked back reads it and carries on; no new run
        record = Delivery(
            conversation=ref.conversation,
            seq=ref.seq,
            message_id=delivery.message_id,
            account_id=delivery.account_id,
            crew_id=delivery.crew.crew_id,
            connection_id=delivery.connection_id,
            state="pending_review",
            created_at=now,
            updated_at=now,
            kind="request" if framing.kind == "request" else "message",
            deadline_at=framing.deadline_at,
            handoff=framing.handoff,
            asker_run_id=delivery.asker_run_id,
            depth=delivery.depth,
        )
        if delivery.paused or delivery.asker_run_id:
            # C4: a paused conversation's runs start when it resumes; C3: a request another
            # Crew's run sent starts at the next tick (asked_starts.py).
            record.state = "received"
            if self._inbox.open_delivery(record, None):
                self._inbox.audit(sent, now)
            return
        if delivery.crew.switch == "review":
            if self._inbox.open_delivery(record, None):  # waits for release or decline
                self._inbox.audit(sent, now)
            return
        if self._runs.for_message(record, delivery.crew.name, delivery.inbox_id):
            self._inbox.audit(sent, now)

    def _carries_on(self, conversation: str, framing: Framing, delivery: CrewDelivery) -> bool:
        """A reply to a request a run of this Crew sent back here and still waits on: that
        run is woken to read it. Else (none asked, or it ended) the reply starts a run."""
        if self._askers is None or framing.in_reply_to is None:
            return False
        asked = self._inbox.ask_back(conversation, framing.in_reply_to)
        if asked is None:
            return False
        run_id, request_id = asked
        return self._askers.tell_run(run_id, request_id, "", reply_id=delivery.message_id)


class CrewInboxes:
    """Review (release, decline) and state of a Crew's conversations: account admins only."""

    def __init__(
        self,
        crews: CrewStore,
        inbox: CrewInboxStore,
        runs: MessageRuns,
        messaging: MessagingService | None,
        is_live_connection: LiveConnection | None = None,
        clock: Clock = SYSTEM_CLOCK,
        requests: Requests | None = None,
    ) -> None:
        self._crews = crews
        self._inbox = inbox
        self._runs = runs
        self._requests = requests  # declining a request already received (C5)
        self._messaging = messaging
        self._is_live = is_live_connection
        self._clock = clock

    def _now(self) -> int:
        return int(self._clock.now() * 1000)

    def _crew(self, principal: Principal, name: str) -> Crew:
        principal.require(ADMIN)
        return visible(principal, self._crews.get(principal.account_id, name.lower()))

    def _editable(self, principal: Principal, name: str) -> Crew:
        """C5: release and decline are for whoever can edit the Crew (access.editable)."""
        return editable(principal, self._crews.get(principal.account_id, name.lower()))

    def _delivered(self, crew: Crew, message_id: str) -> Delivery:
        """The delivery record of a message the Crew received, whatever its state."""
        ref = parse_message_id(message_id)
        found = self._inbox.get_delivery(ref.conversation, ref.seq)
        if found is None or found.account_id != crew.account_id or found.crew_id != crew.crew_id:
            raise Unavailable()
        if found.message_id != ref.message_id:
            raise Unavailable()
        return found

    def _waiting(self, crew: Crew, message_id: str) -> Delivery:
        found = self._delivered(crew, message_id)
        if found.state != "pending_review":
            raise Conflict(
                f"This message is not waiting for review (it is {found.state}).",
                state=found.state,
            )
        return found

    def release(self, principal: Principal, name: str, message_id: str) -> ReviewOutcome:
        """A person lets a message through: the Crew's run for it starts now."""
        crew = self._editable(principal, name)
        if crew.definition.messaging == "off":
            raise MessagingOff(crew.name)
        waiting = self._waiting(crew, message_id)
        crew_inbox = InboxRef(waiting.conversation, "b").inbox_id
        by = Actor.connection(principal.connection_id)
        record = self._runs.for_held(waiting, crew.name, crew_inbox, "pending_review", by)
        if record is None:
            raise Conflict("This message was released or declined meanwhile.")
        started = record.state != "failed"
        return ReviewOutcome(
            target=f"crew:{crew.name}",
            message_id=waiting.message_id,
            state="running" if started else "failed",
            run_id=record.call_id,
        )

    def decline(
        self, principal: Principal, name: str, message_id: str, reason: str | None
    ) -> ReviewOutcome:
        """A person turns a message down: no run; the sender reads a short notice."""
        crew = self._editable(principal, name)
        found = self._delivered(crew, message_id)
        reason = (reason or "").strip() or None
        by = Actor.connection(principal.connection_id)
        if found.state != "pending_review" and found.is_request and self._requests is not None:
            # C5: a request it received and is working on (or will): declined, its run
            # stopped, an asking Crew's run told.
            self._requests.decline_received(found, reason, by)
            waiting = found
        else:
            waiting = self._waiting(crew, message_id)
            if not self._inbox.decline(waiting, reason, self._now(), by):
                raise Conflict("This message was released or declined meanwhile.")
        notice = f"A person declined to pass your message {waiting.message_id} to crew:{crew.name}."
        if reason:
            notice += f" Reason: {reason}"
        if self._messaging is not None:
            # Best effort: the decision stands even if the conversation can't take a notice
            # (expired, or its hourly rate used up).
            with contextlib.suppress(AgentWorksError):
                self._messaging.send_as_system(
                    InboxRef(waiting.conversation, "b").inbox_id,
                    notice,
                    submission_id=f"decline.{waiting.message_id}",
                )
        return ReviewOutcome(
            target=f"crew:{crew.name}",
            message_id=waiting.message_id,
            state="declined",
            reason=reason,
        )

    def state(
        self, principal: Principal, name: str, after: str | None = None, limit: int | None = None
    ) -> CrewState:
        """M8: a page of the Crew's conversations, newest first. Authority is checked before
        the read and again after it (a revoked connection gets nothing)."""
        crew = self._crew(principal, name)
        page = limits.STATE_PAGE_DEFAULT if limit is None else limit
        if not 1 <= page <= limits.STATE_PAGE_MAX:
            raise InvalidInput(f"limit must be 1–{limits.STATE_PAGE_MAX}.", field="limit")
        if after is not None:
            parse_inbox_id(after)  # a malformed cursor is a 400
        if self._messaging is None:
            raise Unavailable()
        inbox_ids, more = self._messaging.crew_inboxes(crew.account_id, crew.crew_id, after, page)
        inboxes = [view for i in inbox_ids if (view := self._inbox_state(i)) is not None]
        paused = self._inbox.queue.paused(crew.account_id)
        if self._is_live is not None and not self._is_live(
            principal.account_id, principal.connection_id
        ):
            raise Unavailable()
        return CrewState(
            target=f"crew:{crew.name}",
            crew_id=crew.crew_id,
            messaging=crew.definition.messaging,
            scheduler_paused=paused,
            inboxes=inboxes,
            next_cursor=inbox_ids[-1] if more and inbox_ids else None,
        )

    def _inbox_state(self, inbox_id: str) -> CrewInboxState | None:
        assert self._messaging is not None
        overview = self._messaging.inbox_overview(inbox_id)
        if overview is None:
            return None
        conversation = parse_inbox_id(inbox_id).conversation
        deliveries = {
            d.message_id: d
            for d in self._inbox.recent_deliveries(
                conversation, STATE_DELIVERY_RECORDS, self._now()
            )
        }
        wakeups = self._inbox.recent_wakeups(conversation, limits.WAKEUPS_SHOWN_PER_INBOX)
        records = []
        for received in overview.received:
            done = deliveries.get(received.message_id)
            records.append(
                CrewDeliveryRecord(
                    message_id=received.message_id,
                    created_at=received.created_at,
                    receipt=received.receipt,
                    run_state=done.state if done else None,
                    run_id=done.run_id if done else None,
                    error=done.error if done else None,
                )
            )
        runs = [(d.updated_at, d.run_id) for d in deliveries.values() if d.run_id]
        runs += [(w.updated_at, w.run_id) for w in wakeups if w.run_id]
        errors = [
            f"{d.message_id}: {d.error}"
            for d in deliveries.values()
            if d.error and d.state in ("failed", "interrupted")
        ]
        errors += [
            f"{w.wakeup_id}: {w.error}" for w in wakeups if w.error and w.state != "cancelled"
        ]
        return CrewInboxState(
            inbox_id=overview.inbox_id,
            conversation_id=overview.conversation_id,
            peer=overview.peer,
            status=overview.status,
            created_at=overview.created_at,
            last_activity_at=overview.last_activity_at,
            receiving_run_id=max(runs)[1] if runs else None,
            delivery_records=records,
            wakeups=[wakeup_view(w) for w in wakeups],
            errors=errors,
        )
