"""A step that calls a function (W9 `crew`, W10 `workflow`): through the same call path as every
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
    from agentworks.workflows.functions import WorkflowFunctions


@dataclass(frozen=True)
class Progress:
    """Where the call stands: still going, or ended with an output or an error."""

    ended: bool
    output: str | None = None
    error: str | None = None


def target(step: Step) -> str:
    return f"workflow:{step.workflow}" if step.workflow else f"crew:{step.crew}"


def describe(step: Step) -> str:
    """What the step resolves to (its input hash's prompt): the call it makes."""
    return json.dumps(
        {"target": target(step), "function": step.function, "args": step.args or {}},
        sort_keys=True,
    )


def submission_id(run_id: str, step: Step) -> str:
    """W10: the call's scope — run, step, target, function, args: an identical call in it
    (a retried task) reuses the call, other arguments make another."""
    scope = json.dumps([step.label, target(step), step.function, step.args or {}], sort_keys=True)
    return f"wf.{run_id}.{hashlib.sha256(scope.encode()).hexdigest()[:32]}"


class CrewSteps:
    def __init__(
        self,
        calls: FunctionCalls,
        connections: ConnectionStore,
        clock: Clock = SYSTEM_CLOCK,
        workflows: WorkflowFunctions | None = None,
    ) -> None:
        self._calls = calls
        self._workflows = workflows
        self._connections = connections
        self._clock = clock

    def _call(self, run: RunRecord, principal: Any, request: CallFunction) -> dict[str, Any]:
        if self._workflows is not None and request.target.startswith("workflow:"):
            # The caller is the source workflow (its allow-lists name workflow:<id>).
            caller = f"workflow:{run.workflow_id}"
            return self._workflows.call(principal, request, caller=caller)
        return self._calls.call(principal, request)

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
                    target=target(step),
                    function=str(step.function),
                    args=step.args or {},
                    submission_id=submission_id(run.run_id, step),
                )
                record.call_id = str(self._call(run, principal, request)["call_id"])
            status = self._calls.status(principal, record.call_id)
        except Retryable:
            return Progress(False)  # the Crew is busy: the next poll tries again
        except AgentWorksError as refused:
            return Progress(True, error=f"{target(step)} refused the call: {refused.message}")
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
