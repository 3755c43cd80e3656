"""/v1/runner: what a local runner (a bridge opted in with `--runner`) does with the
account's cli workflow steps (issue 10 item 6) — claim the next job, renew the claim while
the CLI runs, report the turn. Needs the workflows:runner scope."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body

from agentworks.http_api.params import PathId
from agentworks.http_api.principal import current_principal
from agentworks.http_api.responses import documented
from agentworks.runners.views import (
    ClaimRequest,
    FinishRequest,
    JobClaim,
    JobFinished,
    JobLease,
    RenewRequest,
)
from agentworks.runtime import services

router = Router()


@router.post(
    "/runner/claim",
    summary="Claim the oldest cli step job this runner may run (job null when none waits)",
    responses=documented(200, 403),
)
def claim_job(request: Annotated[ClaimRequest, Body()]) -> JobClaim:
    return services().workflows.runners.jobs.claim(current_principal(router), request)


@router.post(
    "/runner/jobs/<job_id>/renew",
    summary="Extend this runner's claim on a job while its CLI runs",
    responses=documented(200, 403, 404, 409),
)
def renew_job(job_id: PathId, request: Annotated[RenewRequest, Body()]) -> JobLease:
    jobs = services().workflows.runners.jobs
    return jobs.renew(current_principal(router), job_id, request.runner_id)


@router.post(
    "/runner/jobs/<job_id>/finish",
    summary="Report a claimed job's outcome: the output and CLI session id, or the CLI's error",
    responses=documented(200, 403, 404, 409, 413),
)
def finish_job(job_id: PathId, request: Annotated[FinishRequest, Body()]) -> JobFinished:
    return services().workflows.runners.jobs.finish(current_principal(router), job_id, request)
