"""The Messages view (C5): the account's conversations with a named agent, so two named
agents messaging each other (the README's first flow) can be followed in the console.

Who sees what, as in the Inbox (the seed: "you see a conversation when you can see one of
its agents"), with M5 for the bodies:
- a conversation is listed to a connection of its account that may see one of its named
  agents, as the directory shows them (`messages:read`, within its target bounds);
- its newest message and the caller's inbox come only to a connection that acts as one of
  its names (on that identity's allow-list, M5), the one that may read it. Everyone else
  gets who talks with whom and when, never a body or an inbox id (an external side's inbox
  id would let any connection of the account read it, A3b).
Other accounts' conversations, and ones outside the caller's bounds, are absent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentworks import limits
from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.conversations.messages_view_models import (
    NamedConversation,
    NamedConversationList,
    NamedParty,
)
from agentworks.conversations.previews import latest_preview
from agentworks.errors import InvalidInput
from agentworks.identity.models import MESSAGES_READ, Principal
from agentworks.ids import InboxRef, Side, parse_conversation_id
from agentworks.messaging.models import Conversation, Party, iso

if TYPE_CHECKING:
    from agentworks.messaging.conversation_store import ConversationStore
    from agentworks.messaging.named_conversation_store import NamedConversationIndex

SIDES: tuple[Side, Side] = ("a", "b")


def acts_as(principal: Principal, party: Party) -> bool:
    """M5: the caller is on the allow-list of this very identity of the name (a re-created
    name is another identity and reads none of the old one's conversations)."""
    return (
        party.kind == "agent"
        and party.agent_name is not None
        and principal.may_target(party.address)
        and principal.acting_as.get(party.agent_name) == party.agent_id
    )


def may_list(principal: Principal, conv: Conversation) -> bool:
    """One of its named agents is in the caller's directory (its account, its bounds)."""
    return conv.account_id == principal.account_id and any(
        p.kind == "agent" and principal.may_target(p.address) for p in conv.parties.values()
    )


class MessagesView:
    def __init__(
        self,
        index: NamedConversationIndex,
        conversations: ConversationStore,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._index = index
        self._conversations = conversations
        self._clock = clock

    def listing(
        self, principal: Principal, before: str | None = None, limit: int | None = None
    ) -> NamedConversationList:
        """A page of the account's conversations with a named agent, newest first (`before`:
        the previous page's next_before)."""
        principal.require(MESSAGES_READ)
        size = limits.NAMED_CONVERSATIONS_PAGE_DEFAULT if limit is None else limit
        if not 1 <= size <= limits.NAMED_CONVERSATIONS_PAGE_MAX:
            raise InvalidInput(f"limit: 1–{limits.NAMED_CONVERSATIONS_PAGE_MAX}", field="limit")
        older_than = parse_conversation_id(before) if before else None
        now = int(self._clock.now() * 1000)
        found, following = self._index.page(principal.account_id, older_than, size, now)
        return NamedConversationList(
            conversations=[self._row(principal, c, now) for c in found if may_list(principal, c)],
            next_before=f"cnv_{following}" if following else None,
        )

    def _row(self, principal: Principal, conv: Conversation, now_ms: int) -> NamedConversation:
        mine = [side for side in SIDES if acts_as(principal, conv.parties[side])]
        expired = conv.is_expired(now_ms)  # evicted, or idle past INBOX_IDLE_SECONDS
        readable = bool(mine) and not expired
        return NamedConversation(
            conversation_id=f"cnv_{conv.conversation}",
            status="expired" if expired else conv.status,
            agents=[
                NamedParty(side=side, address=conv.parties[side].address, you_act_as=side in mine)
                for side in SIDES
            ],
            readable=readable,
            inbox_id=InboxRef(conv.conversation, mine[0]).inbox_id if readable else None,
            latest=latest_preview(self._conversations, conv.conversation, now_ms)
            if readable
            else None,
            created_at=iso(conv.created_at) or "",
            last_activity_at=iso(conv.last_activity) or "",
        )
