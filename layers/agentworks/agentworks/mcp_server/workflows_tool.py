"""The workflow MCP tools (W4, W5, W7), named as the seed names them: workflow_start,
workflow_status, workflow_list, workflow_cancel, workflow_resolve, workflow_retry and
workflow_run_file.

workflow_start takes the seed's workflow_start JSON as its arguments (camelCase, as there).
Each tool is a row of `ACTIONS`, run like every action-style tool (`run_action`), and the
rules live in `WorkflowRuns`, exactly as behind /v1/workflows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult
from pydantic import Field

from agentworks import limits
from agentworks.identity.models import Principal
from agentworks.mcp_server.actions import ActionSpec, run_action, services
from agentworks.mcp_server.tooling import domain_tool
from agentworks.workflows.views import RunList, RunStarted, RunView

if TYPE_CHECKING:
    from agentworks.workflows.runs import WorkflowRuns

Variables = dict[str, str | int | float | bool]

_ERRORS = (
    'Errors come back as is_error results with {"error": {"code", "message"}}; '
    "`unavailable` means no such run (or not yours)."
)


@dataclass(frozen=True)
class WorkflowCall:
    action: str  # the row of ACTIONS (the tool's name without `workflow_`)
    definition: dict[str, Any] | None = None
    run_id: str | None = None
    step: str | None = None
    answer: str | None = None
    input: dict[str, Any] | None = None
    content: str | None = None
    item: int | None = None


def _runs() -> WorkflowRuns:
    return services().workflows.runs


def _start(principal: Principal, call: WorkflowCall) -> RunStarted:
    return _runs().start(principal, call.definition)


def _run_file(principal: Principal, call: WorkflowCall) -> RunStarted:
    from agentworks.workflows.workflow_file import parse_workflow_file

    read = parse_workflow_file(call.content or "", call.input)
    return _runs().start(principal, read.start.to_json())


ACTIONS: dict[str, ActionSpec[WorkflowCall]] = {
    "start": ActionSpec(_start, frozenset({"definition"}), required=("definition",)),
    "run_file": ActionSpec(_run_file, frozenset({"content", "input"}), required=("content",)),
    "status": ActionSpec(
        lambda p, c: _runs().status(p, str(c.run_id)), frozenset({"run_id"}), ("run_id",)
    ),
    "list": ActionSpec(lambda p, c: _runs().list(p)),
    "cancel": ActionSpec(
        lambda p, c: _runs().cancel(p, str(c.run_id)), frozenset({"run_id"}), ("run_id",)
    ),
    "resolve": ActionSpec(
        lambda p, c: _runs().resolve(p, str(c.run_id), str(c.step), str(c.answer), c.item or 0),
        frozenset({"run_id", "step", "answer", "item"}),
        ("run_id", "step", "answer"),
    ),
    "retry": ActionSpec(
        lambda p, c: _runs().retry(p, str(c.run_id), c.input),
        frozenset({"run_id", "input"}),
        ("run_id",),
    ),
}


def _run(call: WorkflowCall) -> CallToolResult:
    result = run_action(call, ACTIONS[call.action])
    assert isinstance(result, CallToolResult)  # no workflow tool asks the user
    return result


RunId = Annotated[
    str, Field(description="The run's id (wfrun_…), as workflow_start returned it.", max_length=64)
]


def workflow_start(
    workflowId: Annotated[str, Field(description="The workflow's name.")],
    stages: Annotated[
        list[dict[str, Any]],
        Field(
            description="Stages in order; each {label?, steps: [{label, adapter | sessionRef, "
            "prompt, policy?, cacheable?, outputSchema?, humanInputs?}]}. A stage's steps run "
            "in parallel; the next stage starts when all of them ended.",
            max_length=limits.WORKFLOW_STAGES_MAX,
        ),
    ],
    cacheKey: Annotated[
        str | None, Field(description="Turns on the resume cache for cacheable steps.")
    ] = None,
    notifyUrl: Annotated[
        str | None, Field(description="https URL told of escalations and of the run's end.")
    ] = None,
    maxTotalCostUsd: Annotated[
        float | None, Field(description="Caps the summed cost of the run's steps.")
    ] = None,
    input: Annotated[Variables | None, Field(description="Variables for {{NAME}}.")] = None,
    requiredVariables: Annotated[
        list[str] | None, Field(description="Variables that must be in `input`, not blank.")
    ] = None,
) -> Annotated[CallToolResult, RunStarted]:
    given = {
        "workflowId": workflowId,
        "stages": stages,
        "cacheKey": cacheKey,
        "notifyUrl": notifyUrl,
        "maxTotalCostUsd": maxTotalCostUsd,
        "input": input,
        "requiredVariables": requiredVariables,
    }
    definition = {k: v for k, v in given.items() if v is not None}
    return _run(WorkflowCall(action="start", definition=definition))


def workflow_run_file(
    content: Annotated[
        str,
        Field(
            description="A WORKFLOW.md's text: YAML front matter, `## stage` and `### step` "
            "headings, each step's fenced YAML options and prompt.",
            max_length=limits.WORKFLOW_DEFINITION_MAX_BYTES,
        ),
    ],
    input: Annotated[Variables | None, Field(description="Variables for {{NAME}}.")] = None,
) -> Annotated[CallToolResult, RunStarted]:
    return _run(WorkflowCall(action="run_file", content=content, input=input))


def workflow_status(runId: RunId) -> Annotated[CallToolResult, RunView]:
    return _run(WorkflowCall(action="status", run_id=runId))


def workflow_list() -> Annotated[CallToolResult, RunList]:
    return _run(WorkflowCall(action="list"))


def workflow_cancel(runId: RunId) -> Annotated[CallToolResult, RunView]:
    return _run(WorkflowCall(action="cancel", run_id=runId))


def workflow_resolve(
    runId: RunId,
    step: Annotated[str, Field(description="The waiting step's label.", max_length=64)],
    answer: Annotated[
        str, Field(description="The answer.", max_length=limits.WORKFLOW_ANSWER_MAX_CHARS)
    ],
    item: Annotated[
        int | None, Field(description="A pipeline's item (0 if left out).", ge=0)
    ] = None,
) -> Annotated[CallToolResult, RunView]:
    return _run(WorkflowCall(action="resolve", run_id=runId, step=step, answer=answer, item=item))


def workflow_retry(
    runId: RunId,
    input: Annotated[
        Variables | None, Field(description="Variables replacing the original run's.")
    ] = None,
) -> Annotated[CallToolResult, RunStarted]:
    return _run(WorkflowCall(action="retry", run_id=runId, input=input))


@dataclass(frozen=True)
class _Tool:
    function: Callable[..., Any]
    title: str
    description: str
    read_only: bool = False
    destructive: bool | None = None


TOOLS: dict[str, _Tool] = {
    "start": _Tool(
        workflow_start,
        "Start a workflow run",
        "Start a staged multi-agent workflow; returns its runId at once (poll "
        "workflow_status). Steps name an adapter profile (see the `adapters` tool) or reuse "
        "an earlier step's session with sessionRef. " + _ERRORS,
    ),
    "run_file": _Tool(
        workflow_run_file,
        "Run a WORKFLOW.md",
        "Start a run from a WORKFLOW.md file's text (front matter and stages). " + _ERRORS,
    ),
    "status": _Tool(
        workflow_status,
        "Workflow run status",
        "A run's stages and steps: status, sessionId, output, cost, replayed, and the "
        "question of a waiting step. " + _ERRORS,
        read_only=True,
    ),
    "list": _Tool(
        workflow_list, "Workflow runs", "Your latest workflow runs. " + _ERRORS, read_only=True
    ),
    "cancel": _Tool(
        workflow_cancel,
        "Cancel a workflow run",
        "Stop a running run: its execution stops and unfinished steps are cancelled. " + _ERRORS,
        destructive=True,
    ),
    "resolve": _Tool(
        workflow_resolve,
        "Answer a waiting step",
        "Answer the question a step escalated (policy escalate); the step goes on. " + _ERRORS,
    ),
    "retry": _Tool(
        workflow_retry,
        "Retry a workflow run",
        "Start a NEW run (retryOf) from a failed or cancelled one: completed steps replay, "
        "the rest run; `input` re-runs exactly the steps it changes. " + _ERRORS,
    ),
}
assert set(TOOLS) == set(ACTIONS), "every workflow tool needs a row in ACTIONS"


def tool_name(action: str) -> str:
    return f"workflow_{action}"


def build_tools() -> list[Tool]:
    return [
        domain_tool(
            spec.function,
            tool_name(action),
            spec.title,
            spec.description,
            destructive=spec.destructive,
            read_only=spec.read_only,
        )
        for action, spec in TOOLS.items()
    ]
