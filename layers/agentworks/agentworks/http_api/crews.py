"""/v1/crews, /v1/functions and /v1/calls (F1–F8)."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler.api_gateway import Response, Router
from aws_lambda_powertools.event_handler.openapi.params import Body, Query

from agentworks import limits
from agentworks.conversations.models import CrewState, DeclineMessage, ReleaseMessage, ReviewOutcome
from agentworks.crews.models import CallFunction, PostCallResult, ReplyToCall
from agentworks.crews.views import (
    CallAccepted,
    CallList,
    CallView,
    CrewDeleted,
    CrewList,
    CrewView,
    FilePage,
    FunctionList,
)
from agentworks.http_api.params import AfterCursor, Definition, PathId
from agentworks.http_api.principal import current_principal
from agentworks.http_api.responses import documented, new_or_replayed, or_replayed
from agentworks.runtime import services

router = Router()


def crew_view(crew: Any) -> CrewView:
    # The Crew service (adapters, schema compiler) loads on first use, not at cold start.
    from agentworks.crews.service import crew_view as view

    return CrewView.model_validate(view(crew, current_principal(router)))


@router.post(
    "/crews",
    summary="Create a Crew from its definition (admin)",
    status_code=201,
    responses=documented(201, 400, 403, 404, 409, 413),
)
def create_crew(definition: Definition) -> CrewView:
    return crew_view(services().crews.definitions.create(current_principal(router), definition))


@router.get("/crews", summary="The Crews this connection may use", responses=documented(200, 403))
def list_crews() -> CrewList:
    crews = services().crews.definitions.list(current_principal(router))
    return CrewList(crews=[crew_view(c) for c in crews])


@router.get(
    "/crews/<name>",
    summary="A Crew's current definition",
    responses=documented(200, 400, 403, 404),
)
def get_crew(name: PathId) -> CrewView:
    return crew_view(services().crews.definitions.get(current_principal(router), name))


@router.put(
    "/crews/<name>",
    summary="Replace a Crew's definition (admin)",
    responses=documented(200, 400, 403, 404, 409, 413),
)
def update_crew(name: PathId, definition: Definition) -> CrewView:
    return crew_view(
        services().crews.definitions.update(current_principal(router), name, definition)
    )


@router.delete(
    "/crews/<name>",
    summary="Delete a Crew (admin); call records remain",
    responses=documented(200, 400, 403, 404),
)
def delete_crew(name: PathId) -> CrewDeleted:
    services().crews.definitions.delete(current_principal(router), name)
    return CrewDeleted(target=f"crew:{name.lower()}", deleted=True)


@router.post(
    "/crews/<name>/release",
    summary="Release a message waiting for review (admin)",
    responses=documented(200, 400, 403, 404, 409, 413),
)
def release_message(name: PathId, request: Annotated[ReleaseMessage, Body()]) -> ReviewOutcome:
    return services().crews.inboxes.release(current_principal(router), name, request.message_id)


@router.post(
    "/crews/<name>/decline",
    summary="Decline a message waiting for review (admin)",
    responses=documented(200, 400, 403, 404, 409, 413),
)
def decline_message(name: PathId, request: Annotated[DeclineMessage, Body()]) -> ReviewOutcome:
    return services().crews.inboxes.decline(
        current_principal(router), name, request.message_id, request.reason
    )


@router.get(
    "/crews/<name>/state",
    summary="A Crew's conversations, deliveries and wakeups (admin)",
    responses=documented(200, 400, 403, 404),
)
def crew_state(
    name: PathId,
    after: AfterCursor = None,
    limit: Annotated[int | None, Query()] = None,
) -> CrewState:
    return services().crews.inboxes.state(current_principal(router), name, after, limit)


@router.get(
    "/functions",
    summary="Discover a target's current functions",
    responses=documented(200, 400, 403, 404),
)
def list_functions(target: Annotated[str, Query(max_length=80)]) -> FunctionList:
    listed = services().crews.calls.list_functions(current_principal(router), target)
    return FunctionList.model_validate(listed)


@router.post(
    "/calls",
    summary="Call a function: checked inputs, a call_id, a tracked outcome",
    responses=or_replayed(
        documented(202, 400, 403, 404, 409, 413, 422, 429, description="Accepted"), "call"
    ),
)
def call_function(request: Annotated[CallFunction, Body()]) -> Response[CallAccepted]:
    accepted = CallAccepted.model_validate(
        services().crews.calls.call(current_principal(router), request)
    )
    return new_or_replayed(accepted, 202)


@router.get(
    "/calls",
    summary="Your function calls, newest first (an admin's: the account's), for the Runs page, "
    "a page at a time (before: the next_before of the last)",
    responses=documented(200, 400, 403),
)
def list_calls(
    limit: Annotated[int | None, Query(ge=1, le=limits.CALLS_PAGE_MAX)] = None,
    before: AfterCursor = None,
) -> CallList:
    return services().crews.calls.recent(current_principal(router), limit, before)


@router.get(
    "/calls/<call_id>",
    summary="A call's state, progress, questions and outcome",
    responses=documented(200, 400, 403, 404),
)
def call_status(call_id: PathId) -> CallView:
    return CallView.model_validate(
        services().crews.calls.status(current_principal(router), call_id)
    )


@router.get(
    "/calls/<call_id>/files",
    summary="Read a call's file, one page (≤ 2 MiB) at a time",
    responses=documented(200, 400, 403, 404, 410),
)
def read_call_file(
    call_id: PathId,
    path: Annotated[str, Query(max_length=512)],
    page: Annotated[int, Query()] = 0,
) -> FilePage:
    read = services().crews.calls.read(current_principal(router), call_id, path, page)
    return FilePage.model_validate(read)


@router.post(
    "/calls/<call_id>/reply",
    summary="Answer a call's pending question",
    responses=documented(200, 400, 403, 404, 409, 413),
)
def reply_to_call(call_id: PathId, request: Annotated[ReplyToCall, Body()]) -> CallView:
    replied = services().crews.calls.reply(current_principal(router), call_id, request)
    return CallView.model_validate(replied)


@router.post(
    "/calls/<call_id>/result",
    summary="Post the outcome of work handed to your agent name (mailbox adapter)",
    responses=documented(200, 400, 403, 404, 409, 413, 422),
)
def post_call_result(call_id: PathId, request: Annotated[PostCallResult, Body()]) -> CallView:
    posted = services().crews.calls.post_result(current_principal(router), call_id, request)
    return CallView.model_validate(posted)
