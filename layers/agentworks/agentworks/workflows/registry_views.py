"""Response models of /v1/workflow-definitions (W11): a registered workflow and its
triggers, in the seed's camelCase (views.SeedModel)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agentworks import limits
from agentworks.workflows.views import SeedModel


class TriggerRun(SeedModel):
    run_id: str
    at: int = Field(description="ms since the epoch")
    error: str | None = Field(default=None, description="why this firing started nothing")


class TriggerView(SeedModel):
    trigger_id: str
    kind: str = Field(description="webhook or schedule")
    name: str
    config: dict[str, Any]
    path: str | None = Field(default=None, description="webhook: POST here, signed")
    secret: str | None = Field(
        default=None, description="webhook: the signing key, shown once when it is made"
    )
    next_run_at: str | None = Field(default=None, description="schedule: ISO 8601, UTC")
    runs: list[TriggerRun] = Field(
        default_factory=list,
        description=f"the latest {limits.WORKFLOW_TRIGGER_HISTORY} firings, newest first",
    )


class RegisteredWorkflowView(SeedModel):
    workflow_id: str
    version: int
    definition: dict[str, Any]
    updated_at: str | None = None
    triggers: list[TriggerView]


class RegisteredWorkflowSummary(SeedModel):
    workflow_id: str
    version: int
    triggers: int
    updated_at: str | None = None


class RegisteredWorkflowList(SeedModel):
    workflows: list[RegisteredWorkflowSummary]


class RegisteredWorkflowDeleted(SeedModel):
    workflow_id: str
    deleted: bool


class RegisterWorkflow(BaseModel):
    """W11: a WORKFLOW.md's text, with its triggers in the front matter."""

    model_config = ConfigDict(extra="forbid")
    content: str = Field(min_length=1, max_length=limits.WORKFLOW_DEFINITION_MAX_BYTES)
