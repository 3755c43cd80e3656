"""Response models of /v1/workflow-definitions (W11): a registered workflow and its
triggers, in the seed's camelCase."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agentworks import limits


class _Seed(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


class TriggerRun(_Seed):
    runId: str  # the seed's names on the wire
    at: int = Field(description="ms since the epoch")
    error: str | None = Field(default=None, description="why this firing started nothing")


class TriggerView(_Seed):
    triggerId: str
    kind: str = Field(description="webhook or schedule")
    name: str
    config: dict[str, Any]
    path: str | None = Field(default=None, description="webhook: POST here, signed")
    secret: str | None = Field(
        default=None, description="webhook: the signing key, shown once when it is made"
    )
    nextRunAt: str | None = Field(default=None, description="schedule: ISO 8601, UTC")
    runs: list[TriggerRun] = Field(
        default_factory=list,
        description=f"the latest {limits.WORKFLOW_TRIGGER_HISTORY} firings, newest first",
    )


class RegisteredWorkflowView(_Seed):
    workflowId: str
    version: int
    definition: dict[str, Any]
    updatedAt: str | None = None
    triggers: list[TriggerView]


class RegisteredWorkflowSummary(_Seed):
    workflowId: str
    version: int
    triggers: int
    updatedAt: str | None = None


class RegisteredWorkflowList(_Seed):
    workflows: list[RegisteredWorkflowSummary]


class RegisteredWorkflowDeleted(_Seed):
    workflowId: str
    deleted: bool


class RegisterWorkflow(BaseModel):
    """W11: a WORKFLOW.md's text, with its triggers in the front matter."""

    model_config = ConfigDict(extra="forbid")
    content: str = Field(min_length=1, max_length=limits.WORKFLOW_DEFINITION_MAX_BYTES)
