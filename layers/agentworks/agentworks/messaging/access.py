"""Who may act in a conversation or as a name (A4, A5, M5).

Every refusal is `Unavailable`, the same answer an unknown id gets.
"""

from __future__ import annotations

from agentworks.errors import Unavailable
from agentworks.identity.models import Principal
from agentworks.ids import Side, other_side
from agentworks.messaging.models import Conversation, Party, Registration


def may_act_as(principal: Principal, reg: Registration | None) -> Registration:
    """M5: acting as a name needs a current registration that lists this connection."""
    if (
        reg is None
        or reg.account_id != principal.account_id
        or principal.connection_id not in reg.allowed_connection_ids
    ):
        raise Unavailable()
    return reg


def party_of(principal: Principal, conv: Conversation | None, side: Side) -> Party:
    """The side of `conv` this principal's account holds, checked against its bounds."""
    if conv is None or conv.account_id != principal.account_id:
        raise Unavailable()
    peer = conv.parties[other_side(side)]
    if principal.target_bounds is not None and not principal.may_target(peer.address):
        raise Unavailable()
    return conv.parties[side]


def check_party_identity(principal: Principal, party: Party, reg: Registration | None) -> None:
    """A named side is usable only while that exact identity is registered (a re-created
    name is a new identity, so old inboxes never redirect to it) and lists the caller."""
    if party.kind != "agent":
        return
    reg = may_act_as(principal, reg)
    if reg.agent_id != party.agent_id:
        raise Unavailable()
