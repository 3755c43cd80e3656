"""/v1/workflows: start, watch, cancel, resolve and retry workflow runs (W4–W7)."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body

from agentworks.http_api.params import AfterCursor, PathId
from agentworks.http_api.principal import current_principal
from agentworks.http_api.responses import documented
from agentworks.runtime import services
from agentworks.workflows.views import (
    ResolveStep,
    RetryRun,
    RunFile,
    RunList,
    RunStarted,
    RunView,
    SessionView,
    WebhookKey,
)

router = Router()


@router.post(
    "/workflows",
    summary="Start a workflow run from the workflow_start JSON; returns its runId at once",
    status_code=202,
    responses=documented(202, 400, 403, 404, 413, description="Accepted"),
)
def start_workflow(definition: Annotated[dict[str, Any], Body()]) -> RunStarted:
    return services().workflows.runs.start(current_principal(router), definition)


@router.post(
    "/workflows/run-file",
    summary="Start a run from a WORKFLOW.md file's text (front matter and stages)",
    status_code=202,
    responses=documented(202, 400, 403, 404, 413, description="Accepted"),
)
def run_workflow_file(request: Annotated[RunFile, Body()]) -> RunStarted:
    from agentworks.workflows.workflow_file import parse_workflow_file

    read = parse_workflow_file(request.content, request.input)
    return services().workflows.runs.start(current_principal(router), read.start.to_json())


@router.get(
    "/workflows",
    summary="Your latest workflow runs, a page at a time (before: the nextBefore of the last)",
    responses=documented(200, 400, 403),
)
def list_workflows(before: AfterCursor = None) -> RunList:
    return services().workflows.runs.list(current_principal(router), before)


@router.get(
    "/workflows/webhook-key",
    summary="The account's key for notifyUrl webhook signatures (admin without bounds)",
    responses=documented(200, 403),
)
def webhook_key() -> WebhookKey:
    return services().workflows.runs.webhook_key(current_principal(router))


@router.get(
    "/workflows/<run_id>",
    summary="A run's stages and steps: status, sessionId, output, cost, replayed",
    responses=documented(200, 400, 403, 404),
)
def workflow_status(run_id: PathId) -> RunView:
    return services().workflows.runs.status(current_principal(router), run_id)


@router.get(
    "/workflows/<run_id>/sessions/<session_id>",
    summary="A session of the run: every turn of the steps that share it",
    responses=documented(200, 400, 403, 404),
)
def workflow_session(run_id: PathId, session_id: PathId) -> SessionView:
    return services().workflows.runs.session(current_principal(router), run_id, session_id)


@router.post(
    "/workflows/<run_id>/cancel",
    summary="Cancel a running run: its execution stops, unfinished steps are cancelled",
    responses=documented(200, 400, 403, 404, 409),
)
def cancel_workflow(run_id: PathId) -> RunView:
    return services().workflows.runs.cancel(current_principal(router), run_id)


@router.post(
    "/workflows/<run_id>/resolve",
    summary="Answer the question a waiting step escalated",
    responses=documented(200, 400, 403, 404, 409),
)
def resolve_workflow_step(run_id: PathId, request: Annotated[ResolveStep, Body()]) -> RunView:
    runs = services().workflows.runs
    principal = current_principal(router)
    return runs.resolve(principal, run_id, request.step, request.answer, request.item)


@router.post(
    "/workflows/<run_id>/retry",
    summary="Start a new run that replays what a failed or cancelled run completed",
    status_code=202,
    responses=documented(202, 400, 403, 404, 409, description="Accepted"),
)
def retry_workflow(run_id: PathId, request: Annotated[RetryRun, Body()]) -> RunStarted:
    return services().workflows.runs.retry(current_principal(router), run_id, request.input)
