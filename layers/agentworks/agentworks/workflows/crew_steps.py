"""A step that calls a Crew's function (W9 `crew`): through the same call path as every
caller (F2–F8), as the connection that started the run — its scopes, target bounds, the
Crew's access list and revocation are checked again at each call, so starting a run grants
nothing the starter could not do itself.

The call's submission id is the run's and the step's, so a retried task finds the call it
made instead of making another; the state machine polls until the call ends.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.crews.models import CallFunction
from agentworks.errors import AgentWorksError, Retryable
from agentworks.workflows.definition import Step
from agentworks.workflows.records import RunRecord, StepRecord

if TYPE_CHECKING:
    from agentworks.crews.calls import FunctionCalls
    from agentworks.identity.connection_store import ConnectionStore


@dataclass(frozen=True)
class Progress:
    """Where the call stands: still going, or ended with an output or an error."""

    ended: bool
    output: str | None = None
    error: str | None = None


def describe(step: Step) -> str:
    """What the step resolves to (its input hash's prompt): the call it makes."""
    return json.dumps(
        {"crew": step.crew, "function": step.function, "args": step.args or {}}, sort_keys=True
    )


def submission_id(run_id: str, label: str) -> str:
    return f"wf.{run_id}.{hashlib.sha256(label.encode()).hexdigest()[:16]}"


class CrewSteps:
    def __init__(
        self, calls: FunctionCalls, connections: ConnectionStore, clock: Clock = SYSTEM_CLOCK
    ) -> None:
        self._calls = calls
        self._connections = connections
        self._clock = clock

    def advance(self, run: RunRecord, step: Step, record: StepRecord) -> Progress:
        connection = self._connections.get_connection(run.account_id, run.connection_id)
        if connection is None or not connection.is_live(self._clock.now()):
            return Progress(
                True, error="the connection that started the run was revoked or expired"
            )
        principal = connection.principal()
        try:
            if record.call_id is None:
                request = CallFunction(
                    target=f"crew:{step.crew}",
                    function=str(step.function),
                    args=step.args or {},
                    submission_id=submission_id(run.run_id, step.label),
                )
                record.call_id = str(self._calls.call(principal, request)["call_id"])
            status = self._calls.status(principal, record.call_id)
        except Retryable:
            return Progress(False)  # the Crew is busy: the next poll tries again
        except AgentWorksError as refused:
            return Progress(True, error=f"crew:{step.crew} refused the call: {refused.message}")
        if not status["terminal"]:
            return Progress(False)
        if status["state"] != "succeeded":
            errors = "; ".join(status.get("errors") or []) or status["state"]
            return Progress(True, error=f"the call {record.call_id} {status['state']}: {errors}")
        return Progress(True, output=_output(status))


def _output(status: dict[str, Any]) -> str:
    """The call's result as JSON when it has one, else its final text."""
    if status.get("result") is not None:
        return json.dumps(status["result"], ensure_ascii=False)
    return str(status.get("final_text") or "")
