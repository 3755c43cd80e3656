"""/v1/crews, /v1/functions and /v1/calls (F1–F8)."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler.api_gateway import Response, Router
from aws_lambda_powertools.event_handler.openapi.params import Body, Path, Query

from agentworks.crews.models import CallFunction, ReplyToCall
from agentworks.crews.service import crew_view
from agentworks.http_api.principal import current_principal
from agentworks.observability import count
from agentworks.runtime import services

router = Router()
_JSON = "application/json"


@router.post("/crews", summary="Create a Crew from its definition (admin)")
def create_crew(definition: Annotated[dict[str, Any], Body()]) -> Response[dict[str, Any]]:
    crew = services().crews.definitions.create(current_principal(router), definition)
    return Response(status_code=201, body=crew_view(crew), content_type=_JSON)


@router.get("/crews", summary="The Crews this connection may use")
def list_crews() -> dict[str, Any]:
    crews = services().crews.definitions.list(current_principal(router))
    return {"crews": [crew_view(c) for c in crews]}


@router.get("/crews/<name>", summary="A Crew's current definition")
def get_crew(name: Annotated[str, Path(max_length=64)]) -> dict[str, Any]:
    return crew_view(services().crews.definitions.get(current_principal(router), name))


@router.put("/crews/<name>", summary="Replace a Crew's definition (admin)")
def update_crew(
    name: Annotated[str, Path(max_length=64)], definition: Annotated[dict[str, Any], Body()]
) -> dict[str, Any]:
    return crew_view(
        services().crews.definitions.update(current_principal(router), name, definition)
    )


@router.delete("/crews/<name>", summary="Delete a Crew (admin); call records remain")
def delete_crew(name: Annotated[str, Path(max_length=64)]) -> dict[str, Any]:
    services().crews.definitions.delete(current_principal(router), name)
    return {"target": f"crew:{name.lower()}", "deleted": True}


@router.get("/functions", summary="Discover a target's current functions")
def list_functions(target: Annotated[str, Query(max_length=80)]) -> dict[str, Any]:
    return services().crews.calls.list_functions(current_principal(router), target)


@router.post("/calls", summary="Call a function: checked inputs, a call_id, a tracked outcome")
def call_function(request: Annotated[CallFunction, Body()]) -> Response[dict[str, Any]]:
    accepted = services().crews.calls.call(current_principal(router), request)
    count("FunctionCallsAccepted", 0 if accepted["replayed"] else 1)
    return Response(
        status_code=200 if accepted["replayed"] else 202, body=accepted, content_type=_JSON
    )


@router.get("/calls/<call_id>", summary="A call's state, progress, questions and outcome")
def call_status(call_id: Annotated[str, Path(max_length=64)]) -> dict[str, Any]:
    return services().crews.calls.status(current_principal(router), call_id)


@router.get("/calls/<call_id>/files", summary="Read a call's file, one page (≤ 2 MiB) at a time")
def read_call_file(
    call_id: Annotated[str, Path(max_length=64)],
    path: Annotated[str, Query(max_length=512)],
    page: Annotated[int, Query()] = 0,
) -> dict[str, Any]:
    return services().crews.calls.read(current_principal(router), call_id, path, page)


@router.post("/calls/<call_id>/reply", summary="Answer a call's pending question")
def reply_to_call(
    call_id: Annotated[str, Path(max_length=64)], request: Annotated[ReplyToCall, Body()]
) -> dict[str, Any]:
    return services().crews.calls.reply(current_principal(router), call_id, request)
