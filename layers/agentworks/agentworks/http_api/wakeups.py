"""/v1/wakeups and /v1/scheduler (M9)."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body

from agentworks.conversations.models import (
    RescheduleWakeup,
    SchedulerSetting,
    ScheduleWakeup,
    WakeupView,
)
from agentworks.crews.views import SchedulerView
from agentworks.http_api.params import PathId
from agentworks.http_api.principal import current_principal
from agentworks.http_api.responses import documented
from agentworks.runtime import services

router = Router()


@router.post(
    "/wakeups",
    summary="Schedule another turn of a Crew in your conversation with it",
    status_code=201,
    responses=documented(201, 400, 403, 404, 409, 410, 413),
)
def schedule_wakeup(request: Annotated[ScheduleWakeup, Body()]) -> WakeupView:
    return services().crews.wakeups.schedule(current_principal(router), request)


@router.delete(
    "/wakeups/<wakeup_id>",
    summary="Cancel a scheduled wakeup",
    responses=documented(200, 400, 403, 404, 409),
)
def cancel_wakeup(wakeup_id: PathId) -> WakeupView:
    return services().crews.wakeups.cancel(current_principal(router), wakeup_id)


@router.post(
    "/wakeups/<wakeup_id>/reschedule",
    summary="Move a scheduled wakeup",
    responses=documented(200, 400, 403, 404, 409, 413),
)
def reschedule_wakeup(
    wakeup_id: PathId,
    request: Annotated[RescheduleWakeup, Body()],
) -> WakeupView:
    return services().crews.wakeups.reschedule(current_principal(router), wakeup_id, request)


@router.get(
    "/scheduler",
    summary="Whether this account's wakeups are paused (admin)",
    responses=documented(200, 403),
)
def get_scheduler() -> SchedulerView:
    return SchedulerView.model_validate(
        services().crews.wakeups.scheduler(current_principal(router))
    )


@router.post(
    "/scheduler",
    summary="Pause or resume this account's wakeups (admin)",
    responses=documented(200, 400, 403, 413),
)
def set_scheduler(request: Annotated[SchedulerSetting, Body()]) -> SchedulerView:
    principal = current_principal(router)
    return SchedulerView.model_validate(
        services().crews.wakeups.set_paused(principal, request.paused)
    )
