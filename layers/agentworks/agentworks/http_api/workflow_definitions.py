"""/v1/workflow-definitions (W11): register a WORKFLOW.md with its triggers; and
/v1/hooks/{triggerId}, where a webhook trigger's sender posts (signed, no bearer token)."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body

from agentworks.http_api.params import PathId
from agentworks.http_api.principal import current_principal
from agentworks.http_api.responses import documented
from agentworks.runtime import services
from agentworks.workflows.registry_views import (
    RegisteredWorkflowDeleted,
    RegisteredWorkflowList,
    RegisteredWorkflowView,
    RegisterWorkflow,
)
from agentworks.workflows.views import RunStarted

router = Router()


@router.put(
    "/workflow-definitions",
    summary="Register a WORKFLOW.md (its triggers in the front matter); admin",
    responses=documented(200, 400, 403, 409, 413),
)
def register_workflow(request: Annotated[RegisterWorkflow, Body()]) -> RegisteredWorkflowView:
    return services().workflows.registry.register(current_principal(router), request.content)


@router.get(
    "/workflow-definitions",
    summary="The account's registered workflows",
    responses=documented(200, 403),
)
def list_registered() -> RegisteredWorkflowList:
    return services().workflows.registry.list(current_principal(router))


@router.get(
    "/workflow-definitions/<workflow_id>",
    summary="A registered workflow: its definition, triggers and their latest runs",
    responses=documented(200, 400, 403, 404),
)
def get_registered(workflow_id: PathId) -> RegisteredWorkflowView:
    return services().workflows.registry.get(current_principal(router), workflow_id)


@router.delete(
    "/workflow-definitions/<workflow_id>",
    summary="Remove a registered workflow and its triggers (admin)",
    responses=documented(200, 400, 403, 404),
)
def delete_registered(workflow_id: PathId) -> RegisteredWorkflowDeleted:
    return services().workflows.registry.delete(current_principal(router), workflow_id)


@router.post(
    "/hooks/<trigger_id>",
    summary="A webhook trigger: a signed JSON body starts a run (no bearer token)",
    status_code=202,
    responses=documented(202, 400, 401, 404, description="Accepted"),
)
def fire_webhook(
    trigger_id: PathId,
    payload: Annotated[Any, Body()] = None,
) -> RunStarted:
    event = router.current_event
    body = event.decoded_body or ""
    raw = body.encode() if isinstance(body, str) else bytes(body)
    headers = dict(event.headers or {})
    return services().workflows.registry.fire_webhook(trigger_id, headers, raw)
