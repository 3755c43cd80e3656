"""A `cli` step's turns as runner jobs (issue 10 item 6), as the workflow runner's tasks
see them.

RunStep makes the turn a job (pending); AwaitRunner hands it out with its task token
(queued: a runner may claim it); the runner's report — or the tick, when nobody claims it
or a claim lapses — wakes the step, and the next RunStep reads the outcome as the
adapter's answer, so output schemas, routes, the budget and the turn cap apply as to any
adapter. A turn that resumes a session goes to the runner that holds the session.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.crews.adapters.base import RunnerWork, TurnResult
from agentworks.ids import new_id
from agentworks.runners.job_store import RunnerJobStore, StaleJob
from agentworks.runners.models import RunnerJob
from agentworks.workflows.records import RunRecord, StepRecord

_ATTEMPTS = 5


class RunnerJobGone(Exception):
    """The step's job is missing (its item expired, or was never written)."""


@dataclass(frozen=True)
class RunnerOutcome:
    """How a job ended: `result` to check like any adapter's answer, or `error`."""

    result: TurnResult | None
    error: str | None
    session_id: str | None  # the CLI's, which the step's session is from now on
    runner: str | None  # the runner that holds that session
    runner_name: str | None


class RunnerSteps:
    def __init__(self, store: RunnerJobStore, clock: Clock = SYSTEM_CLOCK) -> None:
        self._store = store
        self._clock = clock

    def _now(self) -> int:
        return int(self._clock.now() * 1000)

    def create(self, run: RunRecord, record: StepRecord, work: RunnerWork) -> str:
        """The turn as a pending job; its id."""
        job = RunnerJob(
            job_id=new_id("rjob", self._clock),
            account_id=run.account_id,
            run_id=run.run_id,
            workflow_id=run.workflow_id,
            item=record.item,
            stage=record.stage,
            index=record.index,
            label=record.label,
            command=work.command,
            prompt=work.prompt,
            timeout_seconds=work.timeout_seconds,
            created_at=self._now(),
            model=work.model,
            args=list(work.args),
            resume=work.resume,
            pin=record.runner if work.resume else None,
        )
        self._store.create(job)
        return job.job_id

    def hand_out(self, account_id: str, job_id: str, task_token: str) -> None:
        """AwaitRunner: the job answers this token from now on. A pending job joins the
        queue; one that already ended (a re-entered wait) is due for the tick to deliver."""
        for _attempt in range(_ATTEMPTS):
            job = self._store.get(account_id, job_id, int(self._clock.now()))
            if job is None:
                raise RunnerJobGone(job_id)
            handed = replace(job, task_token=task_token)
            queue = None
            if job.state in ("pending", "queued"):
                handed.state, handed.queued_at = "queued", job.queued_at or self._now()
                queue = "put"
            elif job.ended:
                handed.delivered = False
            try:
                self._store.save(handed, queue=queue)  # type: ignore[arg-type]
                return
            except StaleJob:
                continue
        raise StaleJob(job_id)

    def outcome(self, account_id: str, job_id: str) -> RunnerOutcome | None:
        """How the job ended; None while it is still out."""
        job = self._store.get(account_id, job_id, int(self._clock.now()))
        if job is None:
            return RunnerOutcome(None, "the step's runner job is gone", None, None, None)
        if not job.ended:
            return None
        if job.state == "succeeded":
            result = TurnResult(final_text=job.output or "", cost_usd=job.cost_usd)
            return RunnerOutcome(result, None, job.session_id, job.runner, job.runner_name)
        if job.state == "failed":
            error = f"the {job.command} session failed on runner {job.runner_name}: {job.error}"
        else:
            error = job.error or f"the runner job {job.state}"
        return RunnerOutcome(
            TurnResult(cost_usd=job.cost_usd), error, job.session_id, job.runner, job.runner_name
        )

    @staticmethod
    def settle(record: StepRecord, outcome: RunnerOutcome) -> str | None:
        """The step takes the ended turn in: the CLI's session (and its runner) is the
        step's from now on. Returns the correction that turn was asked for, if any."""
        correction = record.correction
        record.job_id = record.correction = None
        record.session_id = outcome.session_id or record.session_id
        record.runner = outcome.runner or record.runner
        record.runner_name = outcome.runner_name or record.runner_name
        return correction

    def cancel(self, account_id: str, job_id: str) -> None:
        """The run was cancelled: the job leaves the queue, a claim stops at its next
        renewal, and nothing is woken (the execution is stopped)."""
        for _attempt in range(_ATTEMPTS):
            job = self._store.get(account_id, job_id, int(self._clock.now()))
            if job is None or job.ended:
                return
            cancelled = replace(
                job,
                state="cancelled",
                error="the run was cancelled",
                ended_at=self._now(),
                delivered=True,
            )
            try:
                self._store.save(cancelled, queue="delete" if job.state == "queued" else None)
                return
            except StaleJob:
                continue
