"""W10: a workflow step's session that calls a function waits for the call's end at most
SESSION_CALL_WAIT_SECONDS of elapsed time, then answers with the call's status as it
stands (the session may read it again later). The call's own execution stands in here,
answering "running" until told; the wait's clock is the test's."""

from __future__ import annotations

from typing import Any

from agentworks import limits
from agentworks.workflows.crew_steps import SessionFunctions
from agentworks.workflows.definition import Step
from tests.support.clock import FakeClock


class Calls:
    """The call's status: running until `ends_at` on the clock, then succeeded."""

    def __init__(self, clock: FakeClock, ends_at: float | None) -> None:
        self.clock, self.ends_at = clock, ends_at
        self.reads: list[float] = []

    def status(self, principal: Any, call_id: str) -> dict[str, Any]:
        self.reads.append(self.clock.now())
        done = self.ends_at is not None and self.clock.now() >= self.ends_at
        return {"call_id": call_id, "state": "succeeded" if done else "running", "terminal": done}


class Steps:
    def __init__(self, calls: Calls) -> None:
        self._calls = calls

    def starter(self, run: Any) -> str:
        return "principal"

    def call(self, *args: Any) -> dict[str, Any]:
        return {"call_id": "call_1"}


def _session(clock: FakeClock, ends_at: float | None) -> tuple[SessionFunctions, Calls]:
    calls = Calls(clock, ends_at)
    run = type("Run", (), {"workflow_id": "wf_1"})()
    step = Step.model_validate({"label": "review", "adapter": "scripted"})
    return SessionFunctions(Steps(calls), run, step, waiting=clock), calls  # type: ignore[arg-type]


def test_a_call_still_running_at_the_bound_is_answered_as_it_stands() -> None:
    clock = FakeClock()
    started = clock.now()
    session, calls = _session(clock, ends_at=None)
    status = session.call_and_wait("crew:contracts", "summarize", {})
    assert status["state"] == "running" and not status["terminal"]
    waited = calls.reads[-1] - started
    assert waited >= limits.SESSION_CALL_WAIT_SECONDS
    assert waited < limits.SESSION_CALL_WAIT_SECONDS + SessionFunctions.POLL_SECONDS
    assert calls.reads[-2] - started < limits.SESSION_CALL_WAIT_SECONDS  # read on till then


def test_a_call_that_ends_at_the_last_read_before_the_bound_is_answered_ended() -> None:
    clock = FakeClock()
    ends_at = clock.now() + limits.SESSION_CALL_WAIT_SECONDS - SessionFunctions.POLL_SECONDS
    session, calls = _session(clock, ends_at=ends_at)
    status = session.call_and_wait("crew:contracts", "summarize", {})
    assert status["terminal"] and status["state"] == "succeeded"
    assert calls.reads[-1] >= ends_at
