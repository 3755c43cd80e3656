"""RELAY_STEPS_MAX held by its effect (R4): a run holds at most that many durable steps. The
last one starts; one more is refused with the bound in the error and nothing is stored; a
step that exists is still found at the bound; a step forgotten gives its place back. The
store and the error read limits.RELAY_STEPS_MAX when they run: the test lowers it to 5
(200 real steps are 200 transactions, about 10 s here)."""

from __future__ import annotations

from typing import Any

import pytest

from agentworks import limits
from agentworks.errors import Conflict
from agentworks.identity.models import Principal
from agentworks.relays.steps import DurableSteps

RUN = "rrun_01JZZZZZZZZZZZZZZZZZZZZZZZ"


def _principal(attempt: int = 1) -> Principal:
    return Principal(
        account_id="acct_01JZZZZZZZZZZZZZZZZZZZZZZZ",
        connection_id="conn_01JZZZZZZZZZZZZZZZZZZZZZZZ",
        scopes=frozenset({"relays:run"}),
        relay_run=RUN,
        relay_attempt=attempt,
        credential="run",
    )


def test_a_run_holds_at_most_relay_steps_max_durable_steps(stack: Any, monkeypatch: Any) -> None:
    monkeypatch.setattr(limits, "RELAY_STEPS_MAX", 5)
    store = stack.services.relays.host._runs
    steps = DurableSteps(store, stack.clock)
    who = _principal()
    for n in range(limits.RELAY_STEPS_MAX):
        assert steps.start(who, RUN, f"step-{n}", safe=False).decision == "run"
    with pytest.raises(Conflict, match=f"at most {limits.RELAY_STEPS_MAX} durable steps"):
        steps.start(who, RUN, "one-more", safe=False)
    assert store.step(RUN, "one-more") is None  # refused, and not stored
    assert len(store.steps(RUN)) == limits.RELAY_STEPS_MAX
    # A step that exists is found at the bound (a retry reuses its result).
    steps.finish(who, RUN, "step-0", {"done": 0})
    again = steps.start(_principal(attempt=2), RUN, "step-0", safe=False)
    assert (again.decision, again.result) == ("done", {"done": 0})
    # A step that failed is forgotten, and its place is free again.
    steps.abandon(who, RUN, "step-1")
    assert steps.start(who, RUN, "one-more", safe=False).decision == "run"
    with pytest.raises(Conflict):
        steps.start(who, RUN, "and-another", safe=False)
