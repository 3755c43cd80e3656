"""Who holds an inbox's side, checked against the conversation's head (A4, A5, M5, M8).

One Query of the head answers both whether the conversation is live and which party the
caller is; the principal's consents (read by authentication) say whether it may act as a
name, and only a refusal re-reads the connection.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from agentworks.clock import Clock
from agentworks.errors import Expired, Unavailable
from agentworks.identity.models import Consent, Principal
from agentworks.ids import InboxRef
from agentworks.messaging.access import check_party_identity, party_of
from agentworks.messaging.conversation_store import ConversationStore
from agentworks.messaging.models import Head, Party

if TYPE_CHECKING:
    from agentworks.messaging.agent_store import AgentStore


def is_expired(head: Head, now_ms: int) -> bool:
    """Idle 7 days since the newest message (exact, from the head), or retired."""
    conv = head.conversation
    assert conv is not None
    return replace(conv, last_activity=head.last_activity).is_expired(now_ms)


class InboxAuthority:
    def __init__(self, conversations: ConversationStore, agents: AgentStore, clock: Clock) -> None:
        self._conversations = conversations
        self._agents = agents
        self._clock = clock

    def _now_ms(self) -> int:
        return int(self._clock.now() * 1000)

    def open(
        self,
        principal: Principal,
        inbox: InboxRef,
        agent_name: str | None,
        optimistic: bool = False,
    ) -> tuple[Head, Party, Consent | None]:
        """Reads the conversation's head and checks the caller holds `inbox`'s side (as
        `agent_name`, when given): one Query, no registration read.

        `optimistic` (a send's first read) reads eventually consistent, for half the read
        units. A stale head can only cost a retry: the chained put refuses a seq already
        taken, and a conversation's parties never change. A head that would refuse (not
        found, expired) is read again strongly first. A stale rate window or history count
        holds no more than the stored one, so a refusal they cause stands. A conversation
        with a Crew is read again strongly too: its status (C4: paused, closed) must be the
        current one."""
        now_ms = self._now_ms()
        head = self._conversations.head(inbox.conversation, now_ms, consistent=not optimistic)
        if not head.consistent and (
            head.conversation is None or is_expired(head, now_ms) or with_a_crew(head)
        ):
            head = self._conversations.head(inbox.conversation, now_ms)
        party = party_of(principal, head.conversation, inbox.side)
        consent = check_party_identity(principal, party, agent_name, self.fresh_consents)
        return head, party, consent

    def fresh_consents(self, principal: Principal) -> dict[str, Consent]:
        """Only when the principal's own consents refuse (never on an allowed request)."""
        connection = self._agents.connection(principal.account_id, principal.connection_id)
        if connection is None or not connection.is_live(self._clock.now()):
            return {}
        return connection.consents

    def refuse_expired(self, head: Head, what: str) -> None:
        if is_expired(head, self._now_ms()):
            raise Expired(f"{what} Start a new conversation with target={_anew(head)}.")

    def recheck(self, principal: Principal, party: Party) -> None:
        """Authority as stored now (the principal's is as of authentication's read)."""
        connection = self._agents.connection(principal.account_id, principal.connection_id)
        if connection is None or not connection.is_live(self._clock.now()):
            raise Unavailable()
        if party.kind == "agent":
            consent = connection.consents.get(party.agent_name or "")
            if consent is None or consent.agent_id != party.agent_id:
                raise Unavailable()


def with_a_crew(head: Head) -> bool:
    conv = head.conversation
    return conv is not None and any(p.kind == "crew" for p in conv.parties.values())


def _anew(head: Head) -> str:
    """What a new conversation targets: the Crew of this one (the caller's side is never a
    Crew's), else the named agent the caller knows."""
    parties = head.conversation.parties.values() if head.conversation else ()
    crews = [p.agent_name for p in parties if p.kind == "crew" and p.agent_name]
    return f"crew:{crews[0]}" if crews else "agent:NAME"
