"""A runner job: one `cli` step turn, from the step that made it to the runner's report.

    pending   made by the step's task, not yet claimable (no task token yet)
    queued    the AwaitRunner state holds its token: a runner may claim it
    claimed   one runner has it; its claim lasts until `lease_until` unless renewed
    succeeded / failed    the runner reported (failed: the CLI's error)
    expired   nobody claimed it in time, or its runner stopped renewing
    cancelled its run was cancelled

An ended job wakes its step through the task token once (`delivered`); the step's task then
reads the outcome from here.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from agentworks import limits

ENDED: frozenset[str] = frozenset({"succeeded", "failed", "expired", "cancelled"})


def runner_key(connection_id: str, runner_id: str) -> str:
    """Who a runner is: the connection it signs in with and the bridge's own id (several
    computers may share one login; a session lives on one of them)."""
    return f"{connection_id}/{runner_id}"


@dataclass
class RunnerJob:
    job_id: str
    account_id: str
    run_id: str
    workflow_id: str
    item: int
    stage: int
    index: int
    label: str  # the step's
    command: str
    prompt: str
    timeout_seconds: int
    created_at: int  # ms, like every time here
    model: str | None = None
    args: list[str] = field(default_factory=list)
    resume: str | None = None  # the CLI session the turn continues
    pin: str | None = None  # the runner key that session lives on (a resumed turn only)
    state: str = "pending"
    task_token: str | None = None
    queued_at: int | None = None
    claimed_at: int | None = None
    lease_until: int | None = None
    runner: str | None = None  # runner_key of the claimer
    runner_name: str | None = None
    ended_at: int | None = None
    output: str | None = None
    session_id: str | None = None
    cost_usd: float = 0.0
    error: str | None = None
    delivered: bool = False
    version: int = 0

    @property
    def ended(self) -> bool:
        return self.state in ENDED

    def deadline(self) -> int:
        """A claim ends by then however often it is renewed: the CLI's time and a lease to
        report in."""
        assert self.claimed_at is not None
        return self.claimed_at + (self.timeout_seconds + limits.RUNNER_LEASE_SECONDS) * 1000

    def due_ms(self) -> int | None:
        """When the tick must look at the job (the DueWakeups index), or None: a queued job
        when its wait runs out, a claimed one when its lease does, an ended one at once
        until its step was woken."""
        if self.state == "queued" and self.queued_at is not None:
            return self.queued_at + limits.RUNNER_QUEUE_WAIT_SECONDS * 1000
        if self.state == "claimed":
            return self.lease_until
        if self.ended and not self.delivered:
            return self.ended_at or self.created_at
        return None

    def expires_s(self) -> int:
        """TTL: an ended job is kept a week; an open one as long as its step could wait."""
        if self.ended_at is not None:
            return self.ended_at // 1000 + limits.RUNNER_JOB_RETENTION_SECONDS
        wait = limits.RUNNER_WAIT_TIMEOUT_SECONDS + limits.RUNNER_JOB_RETENTION_SECONDS
        return self.created_at // 1000 + wait

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("version")
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any], version: int) -> RunnerJob:
        return cls(**data, version=version)


@dataclass(frozen=True)
class QueueEntry:
    """A queued job as a claim sees it before reading the job."""

    job_id: str
    command: str
    workflow_id: str
    pin: str | None
