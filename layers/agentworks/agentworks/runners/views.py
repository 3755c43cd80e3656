"""Requests and answers of /v1/runner (issue 10 item 6): what a runner sends, what the API
answers and the bridge parses — one contract for both sides."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentworks import limits

_RUNNER_ID = rf"^[A-Za-z0-9][A-Za-z0-9._-]{{0,{limits.RUNNER_ID_MAX_CHARS - 1}}}$"
_SESSION_ID = rf"^[A-Za-z0-9][A-Za-z0-9._:-]{{0,{limits.RUNNER_SESSION_ID_MAX_CHARS - 1}}}$"
Command = Literal["claude", "codex"]


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")

    runner_id: str = Field(
        pattern=_RUNNER_ID, description="The bridge's own id (kept in its folder)"
    )


class ClaimRequest(_Request):
    name: str = Field(
        min_length=1,
        max_length=limits.RUNNER_NAME_MAX_CHARS,
        description="What the runner is shown as (its computer's name, by default)",
    )
    commands: list[Command] = Field(
        min_length=1, max_length=2, description="The CLIs found on the runner's PATH"
    )


class RenewRequest(_Request):
    pass


class FinishRequest(_Request):
    """A session turn's report: its answer, or the CLI's error (the step fails with it)."""

    output: str | None = Field(default=None, max_length=limits.RUNNER_OUTPUT_MAX_CHARS)
    session_id: str | None = Field(default=None, pattern=_SESSION_ID)
    cost_usd: float = Field(default=0.0, ge=0, le=limits.RUNNER_COST_MAX_USD)
    error: str | None = Field(default=None, min_length=1, max_length=limits.RUNNER_ERROR_MAX_CHARS)

    @model_validator(mode="after")
    def _answer_or_error(self) -> FinishRequest:
        if self.error is None and self.output is None:
            raise ValueError("a report has the session's output, or the CLI's error")
        if self.error is None and self.session_id is None:
            raise ValueError("a successful turn names the CLI session it ran in (session_id)")
        return self


class ClaimedJob(BaseModel):
    """Everything the runner needs to run the turn; nothing of the run besides."""

    job_id: str
    run_id: str
    workflow_id: str
    step: str = Field(description="The step's label")
    command: Command
    model: str | None = None
    args: list[str] = Field(description="Extra CLI arguments, from the allow-list")
    prompt: str
    resume: str | None = Field(default=None, description="The CLI session id to resume")
    timeout_seconds: int = Field(description="Stop the CLI after this long and report")
    lease_until: str = Field(description="ISO 8601, UTC: renew the claim before then")
    renew_seconds: int = Field(description="How often to renew while the CLI runs")


class JobClaim(BaseModel):
    job: ClaimedJob | None = Field(description="The job claimed, or null when none waits")


class JobLease(BaseModel):
    job_id: str
    lease_until: str = Field(description="ISO 8601, UTC")


class JobFinished(BaseModel):
    job_id: str
    state: Literal["succeeded", "failed"]
    delivered: bool = Field(
        description="The step was woken now (false: the tick wakes it within a minute)"
    )
