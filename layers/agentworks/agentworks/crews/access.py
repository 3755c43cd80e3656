"""Who may see, call or manage a Crew, and read a call (A4, A5)."""

from __future__ import annotations

from agentworks.crews.models import CallRecord, Crew
from agentworks.errors import InvalidInput, Unavailable
from agentworks.identity.models import ADMIN, Principal


def parse_crew_target(target: str) -> str:
    kind, _, name = target.strip().partition(":")
    if kind != "crew" or not name:
        raise InvalidInput(
            "target must be crew:NAME or workflow:NAME (relay functions arrive later).",
            field="target",
        )
    return name.lower()


def visible(principal: Principal, crew: Crew | None) -> Crew:
    """The Crew, if this connection may use it at all; else `unavailable`."""
    if crew is None or crew.account_id != principal.account_id:
        raise Unavailable()
    if not principal.may_target(f"crew:{crew.name}"):
        raise Unavailable()
    if crew.is_private and principal.connection_id != crew.owner_connection_id:
        raise Unavailable()  # C4: a private Crew counts for its owner only, admins included
    access = crew.definition.access
    if access and principal.connection_id not in access and ADMIN not in principal.scopes:
        raise Unavailable()
    return crew


def editable(principal: Principal, crew: Crew | None) -> Crew:
    """The Crew, if this connection may edit it and step in for it (C5): its owner, or an
    admin who may act for it (its target bounds allow it) unless it is private. Anyone
    else gets `unavailable`, as for an unknown Crew (a missing `admin` scope says only
    that, whatever the Crew)."""
    if crew is None or crew.account_id != principal.account_id:
        raise Unavailable()
    if crew.owner_connection_id and principal.connection_id == crew.owner_connection_id:
        return crew
    principal.require(ADMIN)
    if crew.is_private or not principal.may_target(f"crew:{crew.name}"):
        raise Unavailable()  # C4: a private Crew is its owner's alone
    return crew


def may_see_call(principal: Principal, record: CallRecord | None) -> CallRecord:
    """A call is its caller's (and the account admin's): knowing its id grants nothing."""
    if record is None or record.account_id != principal.account_id:
        raise Unavailable()
    if not principal.may_target(f"crew:{record.crew_name}"):
        raise Unavailable()
    if principal.connection_id != record.caller_connection_id and ADMIN not in principal.scopes:
        raise Unavailable()
    return record
