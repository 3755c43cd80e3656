"""M5 and A4: acting as a name (messaging/access.consent_for). The consent the request's
principal carries is used as is; the connection's stored consents are read again only when
the principal's lack the name or hold another identity of it (a principal kept across a
registration); a bounded connection acts only as names its bounds cover."""

from __future__ import annotations

import pytest

from agentworks.errors import Unavailable
from agentworks.identity.models import Consent, Principal
from agentworks.messaging.access import consent_for

OLD = Consent(agent_id="agt_old", display_name="reviewer")
NEW = Consent(agent_id="agt_new", display_name="reviewer")


class Stored:
    """The connection's consents as stored now, counting each read."""

    def __init__(self, consents: dict[str, Consent]) -> None:
        self.consents, self.reads = consents, 0

    def __call__(self, principal: Principal) -> dict[str, Consent]:
        self.reads += 1
        return self.consents


def _principal(consents: dict[str, Consent], bounds: tuple[str, ...] | None = None) -> Principal:
    return Principal("acct", "conn_1", frozenset(), target_bounds=bounds, consents=consents)


def test_the_principals_own_consent_is_used_without_another_read() -> None:
    stored = Stored({"reviewer": NEW})
    assert consent_for(_principal({"reviewer": OLD}), "reviewer", stored) == OLD
    assert consent_for(_principal({"reviewer": OLD}), "reviewer", stored, "agt_old") == OLD
    assert stored.reads == 0


def test_a_name_the_principal_lacks_is_read_again_from_the_connection() -> None:
    stored = Stored({"reviewer": NEW})
    assert consent_for(_principal({}), "reviewer", stored) == NEW
    assert stored.reads == 1


def test_another_identity_of_the_name_is_read_again_and_must_then_match() -> None:
    stored = Stored({"reviewer": NEW})
    assert consent_for(_principal({"reviewer": OLD}), "reviewer", stored, "agt_new") == NEW
    with pytest.raises(Unavailable):
        consent_for(_principal({"reviewer": OLD}), "reviewer", stored, "agt_other")
    assert stored.reads == 2


def test_a_name_the_connection_is_not_listed_for_is_unavailable() -> None:
    with pytest.raises(Unavailable):
        consent_for(_principal({}), "reviewer", Stored({}))


def test_a_bounded_connection_acts_only_as_names_its_bounds_cover() -> None:
    stored = Stored({"reviewer": NEW})
    covered = _principal({"reviewer": NEW}, bounds=("agent:reviewer",))
    assert consent_for(covered, "reviewer", stored) == NEW
    elsewhere = _principal({"reviewer": NEW}, bounds=("crew:contracts",))
    with pytest.raises(Unavailable):
        consent_for(elsewhere, "reviewer", stored)
    assert stored.reads == 0  # refused on its bounds, before any read
