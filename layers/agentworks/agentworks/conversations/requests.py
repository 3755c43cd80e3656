"""Requests to a Crew and where they stand (C1, C2).

A request is a message of kind `request` in a conversation whose target is a Crew. Its
delivery record (delivery_items.py) carries its state; the seed's eight states are names
for those records' states:

    pending_review → Waiting for review    running → In progress
    received       → Received              succeeded → Answered
    declined       → Declined              failed, interrupted → Couldn't complete
    expired        → Expired               cancelled → Cancelled

A run that fails or is stopped leaves Couldn't complete, and nothing retries it. The tick
expires requests past their deadline, each once (a conditional move out of the open
states), and stops a run still working on one; the run's answer is then not posted.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import replace
from typing import TYPE_CHECKING, NoReturn

from agentworks import limits
from agentworks.audit.entries import Actor
from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.conversations.delivery_items import STATE_OF_RECORD, Delivery
from agentworks.conversations.models import RequestList, RequestState, RequestView
from agentworks.errors import Conflict, Unavailable
from agentworks.identity.models import ADMIN, Principal
from agentworks.ids import parse_inbox_id, parse_message_id
from agentworks.messaging.models import iso
from agentworks.observability import count

if TYPE_CHECKING:
    from agentworks.conversations.asker_runs import AskerRuns
    from agentworks.conversations.request_store import RequestStore
    from agentworks.crews.execution import Executions
    from agentworks.messaging.service import MessagingService

logger = logging.getLogger(__name__)

LABELS: dict[RequestState, str] = {
    "waiting_for_review": "Waiting for review",
    "received": "Received",
    "in_progress": "In progress",
    "answered": "Answered",
    "declined": "Declined",
    "couldnt_complete": "Couldn't complete",
    "expired": "Expired",
    "cancelled": "Cancelled",
}
EXPIRED_REASON = "The deadline passed before it was answered."
CANCELLED_REASON = "The asker cancelled it."
ANSWERED_BY_PERSON = "Answered by a person for the agent."
# What a run still working on a request it can no longer answer is stopped with.
STOP_CAUSES = {
    "cancelled": "The request was cancelled.",
    "declined": "The request was declined.",
    "expired": "The request's deadline passed.",
    "succeeded": ANSWERED_BY_PERSON,
}


def request_view(record: Delivery) -> RequestView:
    state = STATE_OF_RECORD.get(record.state, "couldnt_complete")
    return RequestView(
        message_id=record.message_id,
        state=state,
        label=LABELS[state],
        deadline_at=iso(record.deadline_at),
        handoff=record.handoff,
        run_id=record.run_id,
        reason=record.error,
        created_at=iso(record.created_at) or "",
        updated_at=iso(record.updated_at) or "",
    )


class Requests:
    def __init__(
        self,
        store: RequestStore,
        messaging: MessagingService | None,  # None in the tick: it only expires
        executions: Executions,
        clock: Clock = SYSTEM_CLOCK,
        askers: AskerRuns | None = None,
    ) -> None:
        self._store = store
        self._askers = askers  # C3: a Crew's run that asked hears what came of it
        self._messaging = messaging
        self._executions = executions
        self._clock = clock

    def _now(self) -> int:
        return int(self._clock.now() * 1000)

    def _authorize(self, principal: Principal, inbox_id: str, agent_name: str | None) -> None:
        if self._messaging is None:
            raise Unavailable()
        self._messaging.authorize_send(principal, inbox_id, agent_name, admit_crew=False)

    def of_inbox(
        self, principal: Principal, inbox_id: str, agent_name: str | None = None
    ) -> RequestList:
        """The requests of the conversation `inbox_id` belongs to, for whoever may send in
        it (the asker; a Crew's admins see them in its state)."""
        self._authorize(principal, inbox_id, agent_name)
        inbox = parse_inbox_id(inbox_id)
        records = self._store.of_conversation(
            inbox.conversation, limits.REQUESTS_SHOWN_PER_CONVERSATION
        )
        return RequestList(inbox_id=inbox.inbox_id, requests=[request_view(r) for r in records])

    def cancel(
        self, principal: Principal, message_id: str, agent_name: str | None = None
    ) -> RequestView:
        """The asker takes back a request it sent (C2 Cancelled): the connection that sent it,
        or an account admin. Anyone else, and an unknown id, get the same `unavailable`."""
        ref = parse_message_id(message_id)
        asker_inbox = ref.inbox.peer.inbox_id  # the request went to the other side
        self._authorize(principal, asker_inbox, agent_name)
        asked = self._store.of_message(ref.conversation, ref.seq)
        if asked is None or asked.message_id != ref.message_id or not asked.is_request:
            raise Unavailable()
        is_admin = ADMIN in principal.scopes and principal.target_bounds is None
        if asked.connection_id != principal.connection_id and not is_admin:
            raise Unavailable()  # C5: the asker, or a person who can act for it
        now = self._now()
        by = Actor.connection(principal.connection_id)
        before = self._close(
            asked,
            "cancelled",
            CANCELLED_REASON,
            now,
            by,
            f"Your request was cancelled: {CANCELLED_REASON}",
        )
        if before is None:
            self._refuse_closed(asked, "cancelled")
        count("RequestsCancelled")
        # The record as the close wrote it (no read back).
        return request_view(
            replace(before, state="cancelled", error=CANCELLED_REASON, updated_at=now)
        )

    def decline_received(self, asked: Delivery, reason: str | None, by: Actor) -> None:
        """C5: a person who can edit the Crew declines a request it received and has not
        answered (received or in progress): Declined with the reason, its run stopped, and
        an asking Crew's run told. `Conflict` when it is no longer open."""
        why = reason or "Declined by a person."
        told = f"Your request was declined: {why}"
        if self._close(asked, "declined", why, self._now(), by, told) is None:
            self._refuse_closed(asked, "declined")
        count("RequestsDeclined")

    def answered_by_person(self, asked: Delivery, answer: str, by: Actor) -> None:
        """C5: a person answered the request for the Crew: Answered, a run still working on
        it stopped (its answer would come second), an asking Crew's run carries on with
        `answer`. Nothing when it ended meanwhile (expired, cancelled, answered by its run)."""
        self._close(asked, "succeeded", ANSWERED_BY_PERSON, self._now(), by, answer)

    def delivery(self, conversation: str, seq: int) -> Delivery | None:
        return self._store.of_message(conversation, seq)

    def expire_due(self) -> int:
        """The tick's part: requests past their deadline become Expired, each once."""
        now = self._now()
        expired = 0
        for conversation, seq in self._store.past_deadline(now, limits.REQUEST_EXPIRIES_PER_TICK):
            told = f"Your request expired: {EXPIRED_REASON}"
            ended = self._close((conversation, seq), "expired", EXPIRED_REASON, now, None, told)
            expired += ended is not None  # None: answered, cancelled or expired meanwhile
        count("RequestsExpired", expired)
        return expired

    def _close(
        self,
        asked: Delivery | tuple[str, int],
        state: str,
        reason: str,
        now: int,
        by: Actor | None,
        told: str,
    ) -> Delivery | None:
        """An open request → `state`, once: a run still working on it stops, and an asking
        Crew's run is told `told`. The record as it was, or None when it was not open."""
        conversation, seq = asked if isinstance(asked, tuple) else (asked.conversation, asked.seq)
        before = self._store.close(conversation, seq, state, reason, now, by)
        if before is None:
            return None
        self._stop_run(before, STOP_CAUSES[state])
        if self._askers is not None:
            self._askers.tell(before, told)
        return before

    def _refuse_closed(self, asked: Delivery, verb: str) -> NoReturn:
        current = self._current(asked.conversation, asked.seq, asked.message_id)
        raise Conflict(
            f"This request is {LABELS[current.state]} already; only an open request can be {verb}.",
            state=current.state,
        )

    def _current(self, conversation: str, seq: int, message_id: str) -> RequestView:
        found = self._store.of_message(conversation, seq)
        if found is None or found.message_id != message_id or not found.is_request:
            raise Unavailable()
        return request_view(found)

    def _stop_run(self, before: Delivery, cause: str) -> None:
        """A run still working on a closed request stops (its answer would be too late)."""
        if before.state != "running" or not before.run_id:
            return
        with contextlib.suppress(Exception):  # an ended execution: nothing to stop
            self._executions.stop(before.run_id, cause)
