"""The port between direct messages and Crews (M1, M10), so messaging imports no Crew code.

A conversation whose target (side b) is a Crew has no mailbox: the platform speaks for the
Crew. Every send into it asks the gate first (`admit`: the Crew exists, the caller may use
it, and its messaging switch is not `off`), and tells it once the message is stored
(`delivered`: the Crew acts at once, or the message waits for a person's release).
`conversations.crew_messages.CrewReception` implements it; `runtime` wires it in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from agentworks.errors import AgentWorksError
from agentworks.identity.models import Principal
from agentworks.messaging.message_kinds import PLAIN, Framing

Switch = Literal["off", "review", "on"]


class MessagingOff(AgentWorksError, status=409, code="messaging_off"):
    """M10: the Crew's messaging switch is off; says why and who can turn it on."""

    def __init__(self, crew_name: str) -> None:
        super().__init__(
            f"crew:{crew_name} takes no messages: its messaging switch is off. An account "
            "admin can turn it on: set `messaging: on` (or `review`) in the Crew file and run "
            "`agentworks crews update --file CREW_FILE` (HTTP: PUT /v1/crews/"
            f"{crew_name}).",
            reason="messaging is off",
            crew=f"crew:{crew_name}",
            enabled_by="an account admin",
        )


class ConversationClosed(AgentWorksError, status=409, code="conversation_closed"):
    """C4: a closed conversation takes no more messages."""

    def __init__(self) -> None:
        super().__init__(
            "This conversation is closed: it takes no more messages. Start a new one with "
            "target=crew:NAME.",
            reason="conversation closed",
        )


@dataclass(frozen=True)
class CrewTarget:
    """A Crew that may receive this caller's message now."""

    crew_id: str
    name: str  # canonical (lower-case)
    switch: Switch


@dataclass(frozen=True)
class CrewDelivery:
    """A message stored for a Crew (or a replay of one: `delivered` is idempotent)."""

    account_id: str
    crew: CrewTarget
    inbox_id: str  # the Crew's side of the conversation
    message_id: str
    sender: str  # the sending party's address
    connection_id: str  # the connection that sent it
    created_at: str
    framing: Framing = PLAIN  # C1: a request (with its deadline), a reply or a note
    paused: bool = False  # C4: the conversation starts no new runs now
    asker_run_id: str | None = None  # C3: a Crew's run sent it and waits on it
    depth: int = 1  # C4: the conversation's depth


class CrewGate(Protocol):
    def admit(self, principal: Principal, crew_name: str) -> CrewTarget:
        """The Crew, if `principal` may message it now; `Unavailable` when it is unknown or
        not visible to it, `MessagingOff` when its switch is off."""
        ...

    def delivered(self, principal: Principal, delivery: CrewDelivery) -> None:
        """Called after the message is stored: start a run (`on`) or hold it for review."""
        ...
