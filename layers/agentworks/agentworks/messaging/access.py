"""Who may act in a conversation or as a name (A4, A5, M5).

Consent to act as a name comes with the principal: authentication read it from the
connection item (`acting_as`), which every allow-list change updates in the same
transaction as the registration, so a change counts from the next request on.
Every refusal is `Unavailable`, the same answer an unknown id gets.
"""

from __future__ import annotations

from collections.abc import Callable

from agentworks.errors import Unavailable
from agentworks.identity.models import Consent, Principal
from agentworks.ids import Side, other_side
from agentworks.messaging.models import Conversation, Party

# Reads the connection's consents as stored now: for a principal held longer than one
# request (in-process callers), whose consents may predate a registration.
FreshConsents = Callable[[Principal], dict[str, Consent]]


def consent_for(
    principal: Principal, name: str, fresh: FreshConsents, agent_id: str | None = None
) -> Consent:
    """M5: acting as a name needs a current registration whose allow-list holds this
    connection (and, when `agent_id` is given, that exact identity of the name). A bounded
    connection acts only as names its bounds cover (A4), whatever the allow-list says."""
    if not principal.may_target(f"agent:{name}"):
        raise Unavailable()
    consent = principal.consents.get(name)
    if consent is None or (agent_id is not None and consent.agent_id != agent_id):
        consent = fresh(principal).get(name)
    if consent is None or (agent_id is not None and consent.agent_id != agent_id):
        raise Unavailable()
    return consent


def party_of(principal: Principal, conv: Conversation | None, side: Side) -> Party:
    """The side of `conv` this principal's account holds, checked against its bounds."""
    if conv is None or conv.account_id != principal.account_id:
        raise Unavailable()
    peer = conv.parties[other_side(side)]
    if principal.target_bounds is not None and not principal.may_target(peer.address):
        raise Unavailable()
    return conv.parties[side]


def check_party_identity(
    principal: Principal, party: Party, agent_name: str | None, fresh: FreshConsents
) -> Consent | None:
    """A named side is usable only while that exact identity is registered (a re-created
    name is a new identity, so old inboxes never redirect to it) and lists the caller.
    `agent_name`, when the caller gave one, must be that side's name. Returns the consent
    the caller acts under (None for the account's external side). Nobody holds a Crew's
    side: the platform speaks for the Crew."""
    if party.kind == "crew":
        raise Unavailable()
    if party.kind != "agent":
        if agent_name is not None:
            raise Unavailable()
        return None
    assert party.agent_name is not None
    if agent_name is not None and agent_name != party.agent_name:
        raise Unavailable()
    return consent_for(principal, party.agent_name, fresh, party.agent_id)
