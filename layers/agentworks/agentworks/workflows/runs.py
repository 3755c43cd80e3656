"""Workflow runs as callers see them (W4–W7): start, status, list, cancel, resolve, retry.

A run is its starter's (and the account admin's): another connection, another account, or
a connection bounded away from `workflow:<workflowId>` finds nothing — the same answer as
for a run that never existed. Everything a start can refuse is refused before any work:
a bad definition, a missing variable, an adapter profile the account hasn't defined.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from agentworks import limits
from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.crews.adapter_profile_store import AdapterProfileStore
from agentworks.crews.execution import Executions
from agentworks.errors import Conflict, InvalidInput, TryAgain, Unavailable
from agentworks.identity.models import ADMIN, WORKFLOWS_RUN, Principal
from agentworks.ids import new_id
from agentworks.messaging.models import iso
from agentworks.observability import count_outcome, logger
from agentworks.signing import Signer
from agentworks.usage.counts import Counts
from agentworks.usage.recorder import UsageRecorder
from agentworks.workflows.call_waits import CallWaits
from agentworks.workflows.choices import checked_answer
from agentworks.workflows.definition import WorkflowStart, parse_workflow, refused
from agentworks.workflows.function_call_store import WorkflowCallStore
from agentworks.workflows.records import TERMINAL_RUN, TERMINAL_STEP, RunRecord
from agentworks.workflows.run_store import RunState, RunStore, StaleRecord
from agentworks.workflows.runner_steps import RunnerSteps
from agentworks.workflows.variables import variable_problems
from agentworks.workflows.views import (
    RunList,
    RunStarted,
    RunSummaryView,
    RunView,
    SessionView,
    TurnView,
    WebhookKey,
    run_view,
)
from agentworks.workflows.webhooks import SIGNATURE_HEADER, WEBHOOK_PURPOSE


def execution_input(run_id: str, start: WorkflowStart) -> dict[str, Any]:
    """What the state machine iterates, by position: the stages, in each its steps — one
    shape every item shares — and a pipeline's items (W12), each a child execution. Only
    positions: 10,000 items stay far inside the 256 KiB an execution's input may take."""
    return {
        "run_id": run_id,
        "error": None,  # the Items Map's Catch puts an execution failure here
        "pipeline": start.items is not None,
        "item": 0,  # a run of stages is item 0
        "items": list(range(len(start.items or []))),
        "stages": [
            {"stage": s, "steps": list(range(len(stage.steps)))}
            for s, stage in enumerate(start.stages)
        ],
    }


class WorkflowRuns:
    def __init__(
        self,
        runs: RunStore,
        profiles: AdapterProfileStore,
        executions: Executions,
        signer: Signer | None,
        clock: Clock = SYSTEM_CLOCK,
        call_executions: Executions | None = None,
        workflow_calls: WorkflowCallStore | None = None,
        runner_steps: RunnerSteps | None = None,
        usage: UsageRecorder | None = None,
        waits: CallWaits | None = None,
    ) -> None:
        self._runs = runs
        self._waits = waits  # W10: a workflow step that called this run waits for its end
        self._usage = usage  # a cancelled run's states entered (a finished run counts its own)
        self._runner_steps = runner_steps  # cancel takes a cli step's job off the queue
        # Cancel stops what a crew step's call runs: the call's execution (the tick then
        # records the call interrupted) or the run a workflow function call started.
        self._call_executions = call_executions
        self._workflow_calls = workflow_calls
        self._profiles = profiles
        self._executions = executions
        self._signer = signer
        self._clock = clock

    def _now(self) -> int:
        return int(self._clock.now() * 1000)

    # ---- start ----

    def start(
        self,
        principal: Principal,
        data: Any,
        retry_of: str | None = None,
        with_run: Callable[[RunStarted], dict[str, dict[str, Any]]] | None = None,
    ) -> RunStarted:
        """Starts a run. `with_run` gives transaction items written with the run's record,
        made from the answer (a webhook delivery's record): either both are written or
        neither (TransactionCancelled names the failed item)."""
        principal.require(WORKFLOWS_RUN)
        start = parse_workflow(data)
        if not principal.may_target(f"workflow:{start.workflow_id}"):
            raise Unavailable()
        # W9: every variable present and every profile defined before any work, all
        # problems in one answer.
        found = variable_problems(start) + self.step_problems(principal, start)
        if found:
            raise refused("Cannot start the workflow", found)
        run = RunRecord(
            run_id=new_id("wfrun", self._clock),
            account_id=principal.account_id,
            connection_id=principal.connection_id,
            workflow_id=start.workflow_id,
            definition=start.to_json(),
            created_at=self._now(),
            retry_of=retry_of,
        )
        started = RunStarted(run_id=run.run_id, status=run.status, retry_of=retry_of)
        self._runs.create(run, with_run(started) if with_run else None)
        try:
            self._executions.start_named(run.run_id, execution_input(run.run_id, start))
        except ClientError:
            run.status, run.error, run.ended_at = "failed", "could not start", self._now()
            self._runs.save(run, 1)
            raise TryAgain("The run could not be started; start it again.") from None
        return started

    def check_steps(self, principal: Principal, start: WorkflowStart) -> None:
        """Every adapter profile a step names exists (and fits a scripted step)."""
        if problems := self.step_problems(principal, start):
            raise refused("Cannot start the workflow", problems)

    def step_problems(self, principal: Principal, start: WorkflowStart) -> list[str]:
        problems = []
        profiles: dict[str, Any] = {}  # each profile read once, however many steps name it
        for _, step in start.steps():
            if not step.adapter:
                continue
            if step.adapter not in profiles:
                profiles[step.adapter] = self._profiles.get(principal.account_id, step.adapter)
            profile = profiles[step.adapter]
            if profile is None:
                problems.append(
                    f"step {step.label!r} names adapter profile {step.adapter!r}, which this "
                    "account has not defined; create it with: agentworks adapters create "
                    "--file PROFILE.yaml"
                )
            elif step.kind == "scripted" and profile.settings.get("type") != "scripted":
                problems.append(
                    f"step {step.label!r} is scripted; profile {step.adapter!r} is "
                    f"{profile.settings.get('type')}"
                )
        return problems

    # ---- reading ----

    def _visible(self, principal: Principal, run_id: str) -> RunState:
        state = self._runs.read_all(run_id) if run_id.startswith("wfrun_") else None
        if state is None or state.run.account_id != principal.account_id:
            raise Unavailable()
        run = state.run
        if not principal.may_target(f"workflow:{run.workflow_id}"):
            raise Unavailable()
        if principal.connection_id != run.connection_id and ADMIN not in principal.scopes:
            raise Unavailable()
        return state

    def status(self, principal: Principal, run_id: str) -> RunView:
        principal.require(WORKFLOWS_RUN)
        state = self._visible(principal, run_id)
        return run_view(state.run, state.cost_usd, state.steps)

    def list(self, principal: Principal, before: str | None = None) -> RunList:
        """A page of the latest runs the principal may see (older than run `before`)."""
        principal.require(WORKFLOWS_RUN)
        found, more = self._runs.list_runs(
            principal.account_id, limits.WORKFLOW_RUNS_LISTED, before
        )
        return RunList(
            next_before=found[-1].run_id if more and found else None,
            runs=[
                RunSummaryView(
                    run_id=r.run_id,
                    workflow_id=r.workflow_id,
                    status=r.status,
                    retry_of=r.retry_of,
                    created_at=iso(r.created_at) or "",
                )
                for r in found
                if (r.connection_id == principal.connection_id or ADMIN in principal.scopes)
                and principal.may_target(f"workflow:{r.workflow_id}")
            ],
        )

    def session(self, principal: Principal, run_id: str, session_id: str) -> SessionView:
        principal.require(WORKFLOWS_RUN)
        state = self._visible(principal, run_id)
        steps = sorted(
            (s for s in state.steps if s.session_id == session_id),
            key=lambda s: (s.stage, s.index),
        )
        if not steps:
            raise Unavailable()
        return SessionView(
            session_id=session_id,
            run_id=run_id,
            turns=[TurnView(step=s.label, **turn) for s in steps for turn in s.turns],
        )

    # ---- changing a run ----

    def cancel(self, principal: Principal, run_id: str) -> RunView:
        principal.require(WORKFLOWS_RUN)
        state = self._visible(principal, run_id)
        run = state.run
        if run.status in TERMINAL_RUN:
            raise Conflict(f"The run has ended ({run.status}); there is nothing to cancel.")
        run.status, run.ended_at, run.error = "cancelled", self._now(), "cancelled by a caller"
        try:
            self._runs.save(run, state.run_version)
        except StaleRecord:
            raise TryAgain("The run changed meanwhile; cancel it again.") from None
        count_outcome("WorkflowRunsEnded", "cancelled")
        self._executions.stop(run_id, "cancelled by a caller")
        if self._waits is not None:
            self._waits.wake(run_id)
        self._count_transitions(run)
        for step in state.steps:
            if step.status not in TERMINAL_STEP and step.call_id:
                self._stop_call(principal, step.call_id)
            if step.status not in TERMINAL_STEP and step.job_id and self._runner_steps:
                self._runner_steps.cancel(run.account_id, step.job_id)
            if step.status not in TERMINAL_STEP:
                step.status, step.ended_at, step.task_token = "cancelled", self._now(), None
                # A step that just ended on its own (a stale version) keeps its outcome.
                with contextlib.suppress(StaleRecord):
                    self._runs.save_step(step, state.versions[step.position])
        return self.status(principal, run_id)

    def _count_transitions(self, run: RunRecord) -> None:
        """The stopped execution's states entered, to its account's usage: after the
        cancel, never failing it (usage is an estimate)."""
        if self._usage is None:
            return
        try:
            entered = self._executions.entered_states(self._executions.execution_arn(run.run_id))
        except ClientError:
            logger.exception("usage: the cancelled run's history was not read")
            return
        self._usage.add(run.account_id, run.run_id, Counts(state_transitions=entered))

    def _stop_call(self, principal: Principal, call_id: str) -> None:
        if call_id.startswith("wcall_") and self._workflow_calls is not None:
            called = self._workflow_calls.get(call_id)
            if called is not None:
                with contextlib.suppress(Conflict, Unavailable):
                    self.cancel(principal, called.run_id)
        elif self._call_executions is not None:
            self._call_executions.stop(call_id, "the workflow run was cancelled")

    def resolve(
        self, principal: Principal, run_id: str, label: str, answer: str, item: int = 0
    ) -> RunView:
        """W3: a person's answer to the question a step (of a pipeline's item) escalated."""
        principal.require(WORKFLOWS_RUN)
        if not answer.strip() or len(answer) > limits.WORKFLOW_ANSWER_MAX_CHARS:
            raise InvalidInput(
                f"answer: 1–{limits.WORKFLOW_ANSWER_MAX_CHARS:,} characters", field="answer"
            )
        state = self._visible(principal, run_id)
        waiting = [s for s in state.steps if (s.label, s.item) == (label, item)]
        step = waiting[0] if waiting else None
        if step is None or step.status != "waiting" or state.run.status != "running":
            raise Conflict(f"Step {label!r} of this run is not waiting for an answer.")
        token = step.task_token or ""
        definition = WorkflowStart.model_validate(state.run.definition)
        answer = checked_answer(definition.stages[step.stage].steps[step.index], step, answer)
        step.answer, step.question, step.task_token, step.status = answer, None, None, "running"
        try:
            self._runs.save_step(step, state.versions[step.position])
        except StaleRecord:
            raise Conflict(f"Step {label!r} changed meanwhile; read the run again.") from None
        self._executions.resume(token, {"answered": True})
        return self.status(principal, run_id)

    def retry(
        self, principal: Principal, run_id: str, input_override: dict[str, Any] | None = None
    ) -> RunStarted:
        """W7: a new run that replays what the original completed with unchanged inputs."""
        principal.require(WORKFLOWS_RUN)
        run = self._visible(principal, run_id).run
        if run.status not in ("failed", "cancelled"):
            raise Conflict(
                f"Only a failed or cancelled run can be retried; this one is {run.status}."
            )
        definition = dict(run.definition)
        if input_override:
            if not isinstance(input_override, dict):
                raise InvalidInput("input is an object of variables", field="input")
            definition["input"] = {**definition.get("input", {}), **input_override}
        return self.start(principal, definition, retry_of=run.run_id)

    def webhook_key(self, principal: Principal) -> WebhookKey:
        principal.require_account_admin()
        principal.require_own_token()  # the key starts runs as the triggers' registrants
        assert self._signer is not None, "the tick never answers webhook-key"
        return WebhookKey(
            key=self._signer.derived_key(WEBHOOK_PURPOSE, principal.account_id),
            header=SIGNATURE_HEADER,
        )
