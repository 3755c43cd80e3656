"""Waking a job's step, and the tick's round over jobs whose time has come.

An ended job answers its step's task token once (SendTaskSuccess with the job id; the step's
task then reads the outcome from the job, so a CLI's failure fails the step through the
same rules as any adapter's). When that answer cannot be sent now, the job stays due and
the next tick sends it. A token nobody waits on any more (the run was cancelled, its wait
timed out) counts as delivered: there is nothing left to wake.
"""

from __future__ import annotations

import contextlib
from dataclasses import replace
from typing import Any

from botocore.exceptions import ClientError

from agentworks import limits
from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.crews.execution import Executions
from agentworks.runners.job_store import RunnerJobStore, StaleJob
from agentworks.runners.models import RunnerJob


def no_claim_error(job: RunnerJob) -> str:
    hours = limits.RUNNER_QUEUE_WAIT_SECONDS // 3600
    return (
        f"no runner claimed this {job.command} step within {hours} h: start one on a computer "
        f"with {job.command} (`agentworks bridge start --runner`), signed in with a connection "
        "that has the workflows:runner scope"
    )


def lapsed_error(job: RunnerJob) -> str:
    return (
        f"runner {job.runner_name} stopped renewing its claim (its bridge stopped?); the "
        f"{job.command} session may have done part of the work, so it is not started again: "
        "retry the run to run this step again"
    )


class JobDelivery:
    def __init__(
        self, store: RunnerJobStore, executions: Executions, clock: Clock = SYSTEM_CLOCK
    ) -> None:
        self._store = store
        self._executions = executions
        self._clock = clock

    def _now(self) -> int:
        return int(self._clock.now() * 1000)

    def deliver(self, job: RunnerJob) -> bool:
        """Wakes the job's step; True when it is done (woken, or nothing waits)."""
        if job.task_token:
            try:
                self._executions.resume_if_waiting(job.task_token, {"job_id": job.job_id})
            except ClientError:
                return False  # the tick sends it again
        # Moved meanwhile (a new token): the tick looks again; a second answer is harmless.
        with contextlib.suppress(StaleJob):
            self._store.save(replace(job, delivered=True))
        return True

    def settle_due(self) -> dict[str, int]:
        """The tick's round: expire queued jobs nobody claimed and claims nobody renewed,
        and wake the steps of ended jobs that were not woken yet."""
        now = self._now()
        expired = delivered = 0
        for account_id, job_id in self._store.due(now, limits.RUNNER_JOBS_PER_TICK):
            job = self._store.get(account_id, job_id, now // 1000)
            if job is None:
                continue
            if job.state == "queued" and (job.due_ms() or now) <= now:
                job = self._expire(job, no_claim_error(job), queue="delete")
                expired += job is not None
            elif job.state == "claimed" and (job.lease_until or 0) <= now:
                job = self._expire(job, lapsed_error(job), queue=None)
                expired += job is not None
            if job is not None and job.ended and not job.delivered:
                delivered += self.deliver(job)
        return {"runner_jobs_expired": expired, "runner_jobs_delivered": delivered}

    def _expire(self, job: RunnerJob, error: str, queue: Any) -> RunnerJob | None:
        ended = replace(job, state="expired", error=error, ended_at=self._now())
        try:
            self._store.save(ended, queue=queue)
        except StaleJob:
            return None  # claimed, renewed or finished meanwhile: next round decides
        return ended
