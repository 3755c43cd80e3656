"""/v1/wakeups and /v1/scheduler (M9)."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler.api_gateway import Response, Router
from aws_lambda_powertools.event_handler.openapi.params import Body, Path

from agentworks.crews.models import (
    RescheduleWakeup,
    SchedulerSetting,
    ScheduleWakeup,
    WakeupView,
)
from agentworks.http_api.principal import current_principal
from agentworks.runtime import services

router = Router()


@router.post("/wakeups", summary="Schedule another turn of a Crew in your conversation with it")
def schedule_wakeup(request: Annotated[ScheduleWakeup, Body()]) -> Response[dict[str, Any]]:
    scheduled = services().crews.wakeups.schedule(current_principal(router), request)
    return Response(
        status_code=201, body=scheduled.model_dump(mode="json"), content_type="application/json"
    )


@router.delete("/wakeups/<wakeup_id>", summary="Cancel a scheduled wakeup")
def cancel_wakeup(wakeup_id: Annotated[str, Path(max_length=64)]) -> WakeupView:
    return services().crews.wakeups.cancel(current_principal(router), wakeup_id)


@router.post("/wakeups/<wakeup_id>/reschedule", summary="Move a scheduled wakeup")
def reschedule_wakeup(
    wakeup_id: Annotated[str, Path(max_length=64)],
    request: Annotated[RescheduleWakeup, Body()],
) -> WakeupView:
    return services().crews.wakeups.reschedule(current_principal(router), wakeup_id, request)


@router.get("/scheduler", summary="Whether this account's wakeups are paused (admin)")
def get_scheduler() -> dict[str, Any]:
    return services().crews.wakeups.scheduler(current_principal(router))


@router.post("/scheduler", summary="Pause or resume this account's wakeups (admin)")
def set_scheduler(request: Annotated[SchedulerSetting, Body()]) -> dict[str, Any]:
    return services().crews.wakeups.set_paused(current_principal(router), request.paused)
