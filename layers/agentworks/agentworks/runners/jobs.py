"""What a runner does with the account's jobs (issue 10 item 6): claim the next, renew its
claim while the CLI runs, and report the turn.

A runner is a connection with the workflows:runner scope plus the bridge's own id. It
claims only jobs of its account, of workflows its target bounds include, for the CLIs it
has, and — for a turn that resumes a session — only on the runner that holds that session.
A job of another account, or outside the bounds, is answered exactly as an unknown one
(A5). Only the runner that claimed a job renews or finishes it, and a job finishes once.
"""

from __future__ import annotations

import re
from dataclasses import replace

from agentworks import limits
from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.errors import Conflict, TryAgain, Unavailable
from agentworks.identity.models import WORKFLOWS_RUNNER, Principal
from agentworks.messaging.models import iso
from agentworks.runners.delivery import JobDelivery
from agentworks.runners.job_store import RunnerJobStore, StaleJob
from agentworks.runners.models import RunnerJob, runner_key
from agentworks.runners.views import (
    ClaimedJob,
    ClaimRequest,
    FinishRequest,
    JobClaim,
    JobFinished,
    JobLease,
)

JOB_ID = re.compile(r"^rjob_[0-9A-HJKMNP-TV-Z]{26}$")
_ATTEMPTS = 5  # re-reads when a renewal and a finish of one job cross


class RunnerJobs:
    def __init__(
        self, store: RunnerJobStore, delivery: JobDelivery, clock: Clock = SYSTEM_CLOCK
    ) -> None:
        self._store = store
        self._delivery = delivery
        self._clock = clock

    def _now(self) -> int:
        return int(self._clock.now() * 1000)

    # ---- claim ----

    def claim(self, principal: Principal, request: ClaimRequest) -> JobClaim:
        """The oldest job this runner may take, now claimed by it; none when none waits."""
        principal.require(WORKFLOWS_RUNNER)
        key = runner_key(principal.connection_id, request.runner_id)
        now = self._now()
        for entry in self._store.queued(principal.account_id, limits.RUNNER_CLAIM_SCAN_MAX):
            if entry.command not in request.commands or entry.pin not in (None, key):
                continue
            if not principal.may_target(f"workflow:{entry.workflow_id}"):
                continue
            job = self._store.get(principal.account_id, entry.job_id, now // 1000)
            if job is None or job.state != "queued":
                self._store.drop_entry(principal.account_id, entry.job_id)  # a leftover
                continue
            if (job.due_ms() or now) <= now:
                continue  # its wait ran out: the tick fails its step
            claimed = replace(
                job,
                state="claimed",
                claimed_at=now,
                lease_until=now + limits.RUNNER_LEASE_SECONDS * 1000,
                runner=key,
                runner_name=request.name,
            )
            try:
                self._store.save(claimed, queue="delete")
            except StaleJob:
                continue  # another runner took it first
            return JobClaim(job=_claimed_view(claimed))
        return JobClaim(job=None)

    # ---- renew and finish ----

    def renew(self, principal: Principal, job_id: str, runner_id: str) -> JobLease:
        """Extends the claim by a lease (never past the turn's timeout and a lease)."""
        principal.require(WORKFLOWS_RUNNER)
        key = runner_key(principal.connection_id, runner_id)
        for _attempt in range(_ATTEMPTS):
            job, now = self._visible(principal, job_id), self._now()
            _require_claimed_by(job, key, now)
            lease = min(now + limits.RUNNER_LEASE_SECONDS * 1000, job.deadline())
            renewed = replace(job, lease_until=lease)
            try:
                self._store.save(renewed)
            except StaleJob:
                continue
            return JobLease(job_id=job.job_id, lease_until=iso(lease) or "")
        raise TryAgain("The job changed meanwhile; renew again.")

    def finish(self, principal: Principal, job_id: str, report: FinishRequest) -> JobFinished:
        """Records the turn's outcome and wakes the step (its task reads the outcome)."""
        principal.require(WORKFLOWS_RUNNER)
        key = runner_key(principal.connection_id, report.runner_id)
        for _attempt in range(_ATTEMPTS):
            job = self._visible(principal, job_id)
            if job.ended:
                raise Conflict(
                    f"Job {job.job_id} has ended ({job.state}); a second report changes nothing."
                )
            # A report a little past the lease still counts while the tick has not expired
            # the claim: the session did finish.
            _require_claimed_by(job, key, now=None)
            ended = replace(
                job,
                state="failed" if report.error is not None else "succeeded",
                output=report.output,
                session_id=report.session_id,
                cost_usd=report.cost_usd,
                error=report.error,
                ended_at=self._now(),
            )
            try:
                self._store.save(ended)
            except StaleJob:
                continue  # its own renewal crossed the report
            delivered = self._delivery.deliver(ended)
            if report.error is not None:
                return JobFinished(job_id=job.job_id, state="failed", delivered=delivered)
            return JobFinished(job_id=job.job_id, state="succeeded", delivered=delivered)
        raise TryAgain("The job changed meanwhile; send the same report again.")

    def _visible(self, principal: Principal, job_id: str) -> RunnerJob:
        job = (
            self._store.get(principal.account_id, job_id, int(self._clock.now()))
            if JOB_ID.match(job_id)
            else None
        )
        if job is None or job.state == "pending":
            raise Unavailable()
        if not principal.may_target(f"workflow:{job.workflow_id}"):
            raise Unavailable()  # A4: outside the bounds looks like nothing
        return job


def _require_claimed_by(job: RunnerJob, key: str, now: int | None) -> None:
    if job.state != "claimed" or job.runner != key:
        raise Conflict(
            f"Job {job.job_id} is not claimed by this runner (it ended, expired, or another "
            "runner has it): stop its session and claim again."
        )
    if now is not None and (job.lease_until or 0) <= now:
        raise Conflict(f"The claim on job {job.job_id} lapsed; its step fails. Stop its session.")


def _claimed_view(job: RunnerJob) -> ClaimedJob:
    return ClaimedJob(
        job_id=job.job_id,
        run_id=job.run_id,
        workflow_id=job.workflow_id,
        step=job.label,
        command=job.command,  # type: ignore[arg-type]  # a cli profile's, checked when made
        model=job.model,
        args=list(job.args),
        prompt=job.prompt,
        resume=job.resume,
        timeout_seconds=job.timeout_seconds,
        lease_until=iso(job.lease_until) or "",
        renew_seconds=limits.RUNNER_RENEW_SECONDS,
    )
