"""A step that calls a function (W9 `crew`, W10 `workflow`): through the same call path as every
caller (F2–F8), as the connection that started the run — its scopes, target bounds, the
Crew's access list and revocation are checked again at each call, so starting a run grants
nothing the starter could not do itself.

The call's submission id is the run's and the step's, so a retried task finds the call it
made instead of making another; the step then waits on a task token until the call ends
(call_waits), or, when the Crew is busy, asks again after a wait.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentworks import limits
from agentworks.clock import ELAPSED_CLOCK, SYSTEM_CLOCK, Clock
from agentworks.crews.adapters.base import AdapterError
from agentworks.crews.models import CallFunction
from agentworks.errors import AgentWorksError, Busy, Retryable
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
    busy: bool = False  # the Crew runs all the calls it may: no call was made


def target(step: Step) -> str:
    return f"workflow:{step.workflow}" if step.workflow else f"crew:{step.crew}"


def busy_wait(rounds: int) -> int:
    """The CrewBusy wait before ask `rounds` + 1 of a busy Crew: doubling from the first
    wait to the longest."""
    wait = limits.WORKFLOW_CREW_BUSY_FIRST_WAIT_SECONDS * 2 ** max(rounds - 1, 0)
    return int(min(wait, limits.WORKFLOW_CREW_BUSY_LONGEST_WAIT_SECONDS))


def describe(step: Step) -> str:
    """What the step resolves to (its input hash's prompt): the call it makes."""
    return json.dumps(
        {"target": target(step), "function": step.function, "args": step.args or {}},
        sort_keys=True,
    )


def scoped_submission_id(
    run_id: str, label: str, target: str, function: str, args: dict[str, Any]
) -> str:
    """W10: a call's scope — run, step, target, function, args: an identical call in it
    (a retried task, a session asking again) reuses the call, other arguments make another."""
    scope = json.dumps([label, target, function, args], sort_keys=True)
    return f"wf.{run_id}.{hashlib.sha256(scope.encode()).hexdigest()[:32]}"


class CrewSteps:
    def __init__(
        self, calls: FunctionCalls, connections: ConnectionStore, clock: Clock = SYSTEM_CLOCK
    ) -> None:
        self._calls = calls
        self._connections = connections
        self._clock = clock

    def call(
        self, run: RunRecord, principal: Any, label: str, target: str, function: str, args: Any
    ) -> dict[str, Any]:
        """A call in the step's scope, as the source workflow (the allow-lists of workflow
        functions name `workflow:<id>`) with its starter's rights."""
        request = CallFunction(
            target=target,
            function=function,
            args=args,
            submission_id=scoped_submission_id(run.run_id, label, target, function, args),
        )
        return self._calls.call(principal, request, caller=f"workflow:{run.workflow_id}")

    def access(self, run: RunRecord, step: Step) -> SessionFunctions:
        """W10: what the step's session may do with functions — list, call and read calls —
        as the source workflow with its starter's rights, read when first used."""
        return SessionFunctions(self, run, step)

    def starter(self, run: RunRecord) -> Any:
        connection = self._connections.get_live_connection(
            run.account_id, run.connection_id, self._clock.now()
        )
        if connection is None:
            raise AdapterError("the connection that started the run was revoked or expired")
        return connection.principal()

    def advance(self, run: RunRecord, step: Step, record: StepRecord) -> Progress:
        try:
            principal = self.starter(run)
        except AdapterError as revoked:
            return Progress(True, error=str(revoked))
        try:
            if record.call_id is None:
                called = self.call(
                    run, principal, step.label, target(step), str(step.function), step.args or {}
                )
                record.call_id = str(called["call_id"])
            status = self._calls.status(principal, record.call_id)
        except (Busy, Retryable):
            return Progress(False, busy=True)  # the Crew is busy: ask again later
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


class SessionFunctions:
    """A workflow step's session's access to functions (crews/adapters/base.FunctionAccess):
    calls are the source workflow's, in the scope of the run and step, so an identical call
    there finds the one it made."""

    # A call's wait polls this often: the call runs in its own execution, in real time.
    POLL_SECONDS = 0.2

    def __init__(
        self, steps: CrewSteps, run: RunRecord, step: Step, waiting: Clock = ELAPSED_CLOCK
    ) -> None:
        self._steps, self._run, self._step = steps, run, step
        self._waiting = waiting

    @functools.cached_property
    def _principal(self) -> Any:
        return self._steps.starter(self._run)

    def list(self, target: str) -> dict[str, Any]:
        return self._refused_as_error(
            lambda: self._steps._calls.list_functions(
                self._principal, target, caller=f"workflow:{self._run.workflow_id}"
            )
        )

    def call_and_wait(self, target: str, function: str, args: dict[str, Any]) -> dict[str, Any]:
        accepted = self._refused_as_error(
            lambda: self._steps.call(
                self._run, self._principal, self._step.label, target, function, args
            )
        )
        call_id = str(accepted["call_id"])
        deadline = self._waiting.now() + limits.SESSION_CALL_WAIT_SECONDS
        while True:
            status = self.status(call_id)
            if status["terminal"] or self._waiting.now() >= deadline:
                return status
            self._waiting.sleep(self.POLL_SECONDS)

    def status(self, call_id: str) -> dict[str, Any]:
        return self._refused_as_error(lambda: self._steps._calls.status(self._principal, call_id))

    @staticmethod
    def _refused_as_error(action: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """A refusal ends the turn as the agent's failure, with the refusal's words."""
        try:
            return action()
        except AgentWorksError as refused:
            raise AdapterError(f"the function call was refused: {refused.message}") from None
