"""Stepping in (C5): a person who can edit a Crew answers for it in one of its
conversations — a note, a request or a reply — and the message says who wrote it.

Who can edit a Crew is `access.editable` (its owner; an admin who may act for it, unless
it is private). A reply a person writes answers the request as a run's answer would
(`Requests.answered_by_person`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentworks import limits
from agentworks.audit.entries import Actor, AuditEntry
from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.conversations.delivery_items import OPEN_STATES, STATE_OF_RECORD, Delivery
from agentworks.conversations.requests import LABELS
from agentworks.crews.access import editable
from agentworks.errors import Conflict, InvalidInput, Unavailable
from agentworks.ids import InboxRef, MessageRef, parse_inbox_id
from agentworks.messaging.message_kinds import NOT_A_REQUEST, framing_for

if TYPE_CHECKING:
    from agentworks.conversations.crew_inbox_store import CrewInboxStore
    from agentworks.conversations.requests import Requests
    from agentworks.crews.crew_store import CrewStore
    from agentworks.identity.models import Principal
    from agentworks.messaging.crew_inbox_views import CrewInboxViews
    from agentworks.messaging.models import SendReceipt
    from agentworks.messaging.service import MessagingService


class AnswerForAgent(BaseModel):
    """POST /v1/conversations/{inbox_id}/answer (either inbox of the conversation): what
    the person writes for the Crew `crew`, one of its parties."""

    model_config = ConfigDict(extra="forbid")

    crew: str = Field(
        min_length=1, max_length=200, description="The Crew to answer for: NAME or crew:NAME."
    )
    kind: Literal["note", "request", "reply"] = Field(
        description="note: information; request: ask the other side; reply: answer a "
        "request the Crew received (in_reply_to)."
    )
    message: str = Field(min_length=1, max_length=limits.MESSAGE_MAX_CHARS)
    in_reply_to: str | None = Field(
        None, max_length=64, description="Replies: the message_id of the request answered."
    )
    deadline_seconds: int | None = Field(None, description="Requests: as in POST /v1/messages.")
    handoff: bool = False
    submission_id: str | None = Field(
        None,
        min_length=1,
        max_length=limits.SUBMISSION_ID_MAX_CHARS,
        description="Retry key: the same id and content returns the original receipt.",
    )


class SteppingIn:
    def __init__(
        self,
        crews: CrewStore,
        inbox: CrewInboxStore,
        requests: Requests,
        views: CrewInboxViews,
        messaging: MessagingService | None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._crews = crews
        self._inbox = inbox
        self._requests = requests
        self._views = views
        self._messaging = messaging
        self._clock = clock

    def answer_for(
        self, principal: Principal, inbox_id: str, answer: AnswerForAgent
    ) -> SendReceipt:
        """Sends `answer` from the Crew's side of the conversation, as written by
        `principal`. Unknown, other accounts' and not-yours look alike (`unavailable`)."""
        if self._messaging is None:
            raise Unavailable()  # a function that serves no conversations (the tick)
        given = parse_inbox_id(inbox_id)
        conversation = self._views.conversation_as_system(given.conversation)
        if conversation is None or conversation.account_id != principal.account_id:
            raise Unavailable()
        name = answer.crew.removeprefix("crew:").lower()
        side, party = next(
            ((s, p) for s, p in conversation.parties.items()
             if p.kind == "crew" and (p.agent_name or "").lower() == name),
            (None, None),
        )  # fmt: skip
        if side is None or party is None:
            raise Unavailable()  # not a party here (a named agent answers for itself)
        inbox = InboxRef(given.conversation, side)
        crew = editable(principal, self._crews.get(principal.account_id, name))
        if crew.crew_id != party.agent_id:
            raise Unavailable()  # a re-created Crew is a new identity
        if conversation.status == "closed":
            raise Conflict("This conversation is closed; nothing more can be sent in it.")
        now = int(self._clock.now() * 1000)
        framing = framing_for(
            answer.kind, answer.deadline_seconds, answer.handoff, answer.in_reply_to, now, inbox
        )
        asked = self._open_request(inbox.conversation, crew.crew_id, framing.reply_ref)
        framing = replace(framing, written_by=principal.connection_id, reply_ref=None)
        receipt = self._messaging.send_as_system(
            inbox.inbox_id, answer.message, submission_id=answer.submission_id, framing=framing
        )
        if receipt.replayed:
            return receipt
        self._inbox.audit(
            AuditEntry(
                account_id=principal.account_id,
                conversation=inbox.conversation,
                action="message_sent",
                actor=Actor.connection(principal.connection_id),
                message_id=receipt.message_id,
                kind=answer.kind,
                detail=f"written for crew:{crew.name} by a person",
                inbox_id=inbox.peer.inbox_id,
            ),
            now,
        )
        if asked is not None:
            by = Actor.connection(principal.connection_id)
            self._requests.answered_by_person(asked, answer.message, by)
        return receipt

    def _open_request(
        self, conversation: str, crew_id: str, ref: MessageRef | None
    ) -> Delivery | None:
        """The request a reply answers: delivered to this Crew here, and still open."""
        if ref is None:
            return None
        found = self._requests.delivery(conversation, ref.seq)
        if (
            ref.conversation != conversation
            or found is None
            or found.crew_id != crew_id
            or not found.is_request
            or found.message_id != ref.message_id
        ):
            raise InvalidInput(NOT_A_REQUEST, field="in_reply_to")
        if found.state not in OPEN_STATES:
            state = STATE_OF_RECORD.get(found.state, "answered")
            raise Conflict(
                f"This request is {LABELS[state]} already; only an open request is answered.",
                state=state,
            )
        return found
