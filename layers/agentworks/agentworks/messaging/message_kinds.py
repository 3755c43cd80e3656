"""What a message in a conversation is (C1): a plain message, a request, a reply or a note.

- A **request** asks for something and has a deadline: 24 h unless the asker sets one, at
  most 7 days. A hand-off (`handoff: true`) says the asker does not need the answer back.
- A **reply** answers one request, one that was sent to the replier in this conversation.
- A **note** adds information and starts no run on either side.
- A plain **message** is what M1 always sent: to a Crew it starts a run like a request with
  no deadline.

Requests, replies and notes belong to conversations with a Crew, where a request has a
state (conversations/requests.py); between two named agents there is no run to start, so only
plain messages go there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from agentworks import limits
from agentworks.errors import InvalidInput
from agentworks.ids import InboxRef, MessageRef, parse_message_id

MessageKind = Literal["message", "request", "reply", "note"]
CONVERSATION_KINDS = ("request", "reply", "note")


@dataclass(frozen=True)
class Framing:
    """The kind of a message and what goes with it (stored on the message item)."""

    kind: MessageKind = "message"
    deadline_at: int | None = None  # ms, requests only
    handoff: bool = False
    in_reply_to: int | None = None  # the seq of the request a reply answers
    # A person who answered for the agent (stepping in): their connection id, shown with
    # the message; None when the agent itself wrote it.
    written_by: str | None = None
    # The request as the sender named it: checked against the conversation only after the
    # sender's authority was (a refusal must not tell a stranger anything). Not stored.
    reply_ref: MessageRef | None = None

    @property
    def is_plain(self) -> bool:
        return self.kind == "message" and self.written_by is None


PLAIN = Framing()


def framing_for(
    kind: MessageKind,
    deadline_seconds: int | None,
    handoff: bool,
    in_reply_to: str | None,
    now_ms: int,
    inbox: InboxRef | None,
) -> Framing:
    """Checks what a send from `inbox` (None: a first contact) says about its kind. Nothing
    is read here: that the request exists is checked by the sender's service."""
    if kind != "request":
        if deadline_seconds is not None:
            raise InvalidInput("Only a request has a deadline.", field="deadline_seconds")
        if handoff:
            raise InvalidInput("Only a request can be a hand-off.", field="handoff")
    if kind != "reply" and in_reply_to is not None:
        raise InvalidInput("Only a reply answers a request (in_reply_to).", field="in_reply_to")
    if kind == "request":
        seconds = limits.REQUEST_DEADLINE_DEFAULT_SECONDS
        if deadline_seconds is not None:
            seconds = deadline_seconds
        low, high = limits.REQUEST_DEADLINE_MIN_SECONDS, limits.REQUEST_DEADLINE_MAX_SECONDS
        if not low <= seconds <= high:
            raise InvalidInput(
                f"A request's deadline is {low}–{high:,} seconds away (1 minute to 7 days); "
                "leave it out for 24 hours.",
                field="deadline_seconds",
            )
        return Framing("request", deadline_at=now_ms + seconds * 1000, handoff=handoff)
    if kind == "reply":
        if in_reply_to is None:
            raise InvalidInput(
                "A reply names the request it answers: in_reply_to=<message_id>.",
                field="in_reply_to",
            )
        if inbox is None:
            raise InvalidInput(
                "A reply goes into the conversation of its request: give inbox_id.",
                field="inbox_id",
            )
        ref = _request_ref(in_reply_to)
        return Framing("reply", in_reply_to=ref.seq, reply_ref=ref)
    return Framing(kind)


NOT_A_REQUEST = "in_reply_to must be the message_id of a request sent to you in this inbox."


def _request_ref(message_id: str) -> MessageRef:
    try:
        return parse_message_id(message_id)
    except Exception:
        raise InvalidInput(NOT_A_REQUEST, field="in_reply_to") from None


def reply_target(inbox: InboxRef, framing: Framing) -> MessageRef | None:
    """The request a reply sent from `inbox` answers; it must have been delivered to this
    side of this conversation (an `InvalidInput` otherwise)."""
    ref = framing.reply_ref
    if framing.kind != "reply" or ref is None:
        return None
    if ref.conversation != inbox.conversation or ref.side != inbox.side:
        raise InvalidInput(NOT_A_REQUEST, field="in_reply_to")
    return ref


def refuse_outside_crew_conversations(framing: Framing) -> None:
    if not framing.is_plain:
        raise InvalidInput(
            f"A {framing.kind} belongs to a conversation with a Crew (crew:NAME); between "
            "named agents send a plain message.",
            field="kind",
        )


def hashed_body(body: str, framing: Framing) -> str:
    """What a submission id binds: the body, and the kind when it is not a plain message (a
    retry that turns a note into a request is a different send)."""
    if framing.is_plain:
        return body
    return f"{framing.kind}\x00{framing.written_by or ''}\x00{body}"
