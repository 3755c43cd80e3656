"""/api/relays (SPEC §5, R1–R4): publish Relays, read releases, run functions, retry runs;
and the durable-step checkpoints relay code reports with its run's credential."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body, Path
from pydantic import BaseModel

from agentworks.http_api.params import PathId
from agentworks.http_api.principal import current_principal
from agentworks.http_api.responses import documented
from agentworks.relays.views import (
    PublishRelay,
    RelayList,
    RelayRunView,
    ReleaseList,
    ReleaseView,
    RetryRelayRun,
    StartRelayRun,
    StepDecision,
    StepFinish,
    StepStart,
)
from agentworks.runtime import services

router = Router()

_Relay = Annotated[str, Path(max_length=63)]
_Step = Annotated[str, Path(max_length=100)]


class StepRecorded(BaseModel):
    recorded: bool = True


@router.post(
    "/relays",
    summary="Publish a Relay's files as its active release (admin); identical source: no-op",
    responses=documented(200, 400, 403, 409, 413),
)
def publish_relay(request: Annotated[PublishRelay, Body()]) -> ReleaseView:
    return services().relays.releases.publish(current_principal(router), request)


@router.get("/relays", summary="The account's Relays", responses=documented(200, 403))
def list_relays() -> RelayList:
    return services().relays.releases.relays(current_principal(router))


@router.get(
    "/relays/<relay>/releases",
    summary="A Relay's releases, the latest first, and which one is active",
    responses=documented(200, 403, 404),
)
def list_releases(relay: _Relay) -> ReleaseList:
    return services().relays.releases.releases(current_principal(router), relay)


@router.post(
    "/relays/<relay>/runs",
    summary="Run a Relay function; the run is pinned to a release (202 at once)",
    status_code=202,
    responses=documented(202, 400, 403, 404, 409, 413, description="Accepted"),
)
def start_run(relay: _Relay, request: Annotated[StartRelayRun, Body()]) -> RelayRunView:
    return services().relays.runs.start(current_principal(router), relay, request)


@router.get(
    "/relays/<relay>/runs/<run_id>",
    summary="A run's status, durable steps and final JSON",
    responses=documented(200, 403, 404),
)
def get_run(relay: _Relay, run_id: PathId) -> RelayRunView:
    return services().relays.runs.status(current_principal(router), run_id, relay)


@router.post(
    "/relays/<relay>/runs/<run_id>/retry",
    summary="Retry a failed run: completed steps are reused, not redone",
    status_code=202,
    responses=documented(202, 400, 403, 404, 409, description="Accepted"),
)
def retry_run(
    relay: _Relay,
    run_id: PathId,
    request: Annotated[RetryRelayRun, Body()],
) -> RelayRunView:
    return services().relays.runs.retry(current_principal(router), run_id, request, relay)


@router.get(
    "/relay-runs/<run_id>",
    summary="A run by its id alone (the CLI's `relays status RUN`)",
    responses=documented(200, 403, 404),
)
def get_run_by_id(run_id: PathId) -> RelayRunView:
    return services().relays.runs.status(current_principal(router), run_id)


@router.post(
    "/relay-runs/<run_id>/retry",
    summary="Retry a failed run by its id alone",
    status_code=202,
    responses=documented(202, 400, 403, 404, 409, description="Accepted"),
)
def retry_run_by_id(run_id: PathId, request: Annotated[RetryRelayRun, Body()]) -> RelayRunView:
    return services().relays.runs.retry(current_principal(router), run_id, request)


# -- durable steps: only the run's own credential reaches these -----------------------


@router.post(
    "/relays/<relay>/runs/<run_id>/steps/<step>/start",
    summary="Relay code: before a durable step (run it, its earlier result, or uncertain)",
    responses=documented(200, 400, 404, 409),
)
def start_step(
    relay: _Relay,
    run_id: PathId,
    step: _Step,
    request: Annotated[StepStart, Body()],
) -> StepDecision:
    return services().relays.steps.start(current_principal(router), run_id, step, request.safe)


@router.post(
    "/relays/<relay>/runs/<run_id>/steps/<step>/finish",
    summary="Relay code: a durable step completed; its result is checkpointed",
    responses=documented(200, 400, 404, 409),
)
def finish_step(
    relay: _Relay,
    run_id: PathId,
    step: _Step,
    request: Annotated[StepFinish, Body()],
) -> StepRecorded:
    services().relays.steps.finish(current_principal(router), run_id, step, request.result)
    return StepRecorded()


@router.post(
    "/relays/<relay>/runs/<run_id>/steps/<step>/abandon",
    summary="Relay code: a durable step raised; it runs again on the next attempt",
    responses=documented(200, 400, 404),
)
def abandon_step(relay: _Relay, run_id: PathId, step: _Step) -> StepRecorded:
    services().relays.steps.abandon(current_principal(router), run_id, step)
    return StepRecorded()
