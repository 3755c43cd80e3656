"""Response models of /v1/workflows (W4): what the API answers, the MCP workflow tools
declare as output and the CLI parses. The seed's names: `runId`, `retryOf`,
`stages[].steps[].{label, status, sessionId, output, startedAt, endedAt, cost, replayed}`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from agentworks import limits
from agentworks.messaging.models import iso
from agentworks.outbound.sending import shown

if TYPE_CHECKING:
    # The definition's models load with the first status, not with the API's routes.
    from agentworks.workflows.definition import WorkflowStart
    from agentworks.workflows.records import Notification, RunRecord, StepRecord


class SeedModel(BaseModel):
    """The seed's camelCase on the wire (`runId`, `sessionId`, …), snake_case in Python;
    either is read."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
    )


class McpCallView(SeedModel):
    """One MCP tool call the step's session made (issue 28): no content here."""

    server: str
    tool: str
    outcome: str = Field(description="ok, tool_error (the tool's isError), refused or failed")
    duration_ms: int
    result_bytes: int


class StepView(SeedModel):
    label: str
    status: str = Field(
        description="pending, running, waiting, succeeded, failed, cancelled or skipped (on "
        "a route not taken)"
    )
    route: str | None = Field(default=None, description="routing/branch: the route taken")
    session_id: str | None = None
    output: str | None = None
    started_at: str | None = None
    ended_at: str | None = None
    cost: float = Field(default=0.0, description="USD spent by this step's session turns")
    replayed: bool = Field(default=False, description="Copied from a journal: no session, no cost")
    question: str | None = Field(
        default=None, description="What the waiting step asks (resolve it)"
    )
    error: str | None = None
    kind: str | None = Field(default=None, description="agent, scripted, routing, branch or crew")
    turns: int = Field(default=0, description="The agent turns its session took")
    call_id: str | None = Field(
        default=None, description="A crew step's function call (what it waits for)"
    )
    runner: str | None = Field(
        default=None, description="cli steps: the runner (bridge) that ran its session"
    )
    mcp_calls: list[McpCallView] = Field(
        default_factory=list, description="The session's MCP tool calls, oldest first"
    )


class StageView(SeedModel):
    label: str
    status: str = Field(description="pending, running, succeeded or failed")
    steps: list[StepView]


class ItemView(SeedModel):
    """W12: one item of a pipeline and its own stages."""

    item: int
    value: str | int | float | bool | dict[str, str | int | float | bool]
    status: str = Field(description="pending, running, succeeded or failed")
    stages: list[StageView]


class NotificationView(SeedModel):
    event: str = Field(description="escalation or completed")
    step: str | None = None
    delivered: bool
    attempts: int
    status_code: int | None = None
    error: str | None = Field(
        default=None,
        description="Why it was not delivered: HTTP <status>, refused URL, refused address, "
        "name not resolved, connection failed, TLS failed or timed out",
    )


class RunView(SeedModel):
    run_id: str
    workflow_id: str
    status: str = Field(description="running, succeeded, failed or cancelled")
    retry_of: str | None = None
    created_at: str
    ended_at: str | None = None
    cost: float = Field(default=0.0, description="USD, summed over the run's steps")
    budget: float | None = Field(
        default=None, description="maxTotalCostUsd: the run stops starting turns past it"
    )
    error: str | None = None
    stages: list[StageView] = Field(description="A run's stages; empty for a pipeline")
    items: list[ItemView] | None = Field(
        default=None, description="A pipeline's items, each with its stages"
    )
    notifications: list[NotificationView] = Field(default_factory=list)


class RunStarted(SeedModel):
    run_id: str
    status: str
    retry_of: str | None = None


class RunSummaryView(SeedModel):
    run_id: str
    workflow_id: str
    status: str
    retry_of: str | None = None
    created_at: str


class RunList(SeedModel):
    runs: list[RunSummaryView]
    next_before: str | None = Field(
        default=None, description="More runs are older: pass this as `before` for them"
    )


class TurnView(SeedModel):
    step: str
    role: str = Field(description="user (a prompt or an answer) or assistant")
    content: str


class SessionView(SeedModel):
    session_id: str
    run_id: str
    turns: list[TurnView]


class WebhookKey(SeedModel):
    key: str = Field(description="HMAC-SHA256 key of X-AgentWorks-Signature")
    header: str


def _step_view(step: StepRecord) -> StepView:
    return StepView(
        label=step.label,
        status=step.status,
        session_id=step.session_id,
        output=step.output,
        started_at=iso(step.started_at),
        ended_at=iso(step.ended_at),
        cost=round(step.cost_usd, 6),
        replayed=step.replayed,
        question=step.question if step.status == "waiting" else None,
        route=step.route,
        error=step.error,
        runner=step.runner_name,
        turns=sum(1 for t in step.turns if t.get("role") == "assistant"),
        call_id=step.call_id,
        mcp_calls=[
            McpCallView(
                server=c.get("server", ""),
                tool=c.get("tool", ""),
                outcome=c.get("outcome", ""),
                duration_ms=int(c.get("duration_ms", 0)),
                result_bytes=int(c.get("result_bytes", 0)),
            )
            for c in step.mcp_calls
        ],
    )


def _stage_status(steps: list[StepView]) -> str:
    statuses = {s.status for s in steps}
    if statuses == {"pending"}:
        return "pending"
    if statuses <= {"succeeded", "skipped"}:
        return "succeeded"
    if statuses & {"pending", "running", "waiting"}:
        return "running"
    return "failed"


def _notification(note: Notification) -> NotificationView:
    return NotificationView(
        event=note.event,
        step=note.step,
        delivered=note.delivered,
        attempts=note.attempts,
        status_code=note.status_code,
        error=shown(note.error),
    )


def _stages(start: WorkflowStart, written: dict[tuple[int, int], StepRecord]) -> list[StageView]:
    """One item's stages from its written steps, by (stage, index)."""
    stages = []
    for number, stage in enumerate(start.stages):
        views = [
            _step_view(written[(number, i)]).model_copy(update={"kind": step.kind})
            if (number, i) in written
            else StepView(label=step.label, status="pending", kind=step.kind)
            for i, step in enumerate(stage.steps)
        ]
        stages.append(StageView(label=stage.label or "", status=_stage_status(views), steps=views))
    return stages


def _item_status(stages: list[StageView]) -> str:
    statuses = [s.status for s in stages]
    if "failed" in statuses:
        return "failed"
    if all(s == "succeeded" for s in statuses):
        return "succeeded"
    return "pending" if all(s == "pending" for s in statuses) else "running"


def run_view(run: RunRecord, cost: float, steps: list[StepRecord]) -> RunView:
    from agentworks.workflows.definition import WorkflowStart

    start = WorkflowStart.model_validate(run.definition)
    # Each step to its item once: a pipeline of 10,000 items is not read 10,000 times.
    by_item: dict[int, dict[tuple[int, int], StepRecord]] = {}
    for step in steps:
        by_item.setdefault(step.item, {})[(step.stage, step.index)] = step
    items = None
    if start.items:
        items = []
        for number, value in enumerate(start.items):
            stages = _stages(start, by_item.get(number, {}))
            items.append(
                ItemView(item=number, value=value, status=_item_status(stages), stages=stages)
            )
    return RunView(
        run_id=run.run_id,
        workflow_id=run.workflow_id,
        status=run.status,
        retry_of=run.retry_of,
        created_at=iso(run.created_at) or "",
        ended_at=iso(run.ended_at),
        cost=round(cost, 6),
        budget=start.max_total_cost_usd,
        error=run.error,
        stages=[] if start.items else _stages(start, by_item.get(0, {})),
        items=items,
        notifications=[_notification(n) for n in run.notifications],
    )


# ---- requests ----


class ResolveStep(BaseModel):
    """W3: a person's answer to the question a waiting step asked."""

    model_config = ConfigDict(extra="forbid")
    step: str = Field(min_length=1, max_length=64, description="The waiting step's label")
    answer: str = Field(min_length=1, max_length=limits.WORKFLOW_ANSWER_MAX_CHARS)
    item: int = Field(default=0, ge=0, description="A pipeline's item (0 otherwise)")


class RetryRun(BaseModel):
    """W7: optional variables that replace the original run's."""

    model_config = ConfigDict(extra="forbid")
    input: dict[str, str | int | float | bool] | None = None


class RunFile(BaseModel):
    """W5: a WORKFLOW.md's text and the run's variables."""

    model_config = ConfigDict(extra="forbid")
    content: str = Field(min_length=1, max_length=limits.WORKFLOW_DEFINITION_MAX_BYTES)
    input: dict[str, str | int | float | bool] | None = None
