"""/v1/usage: an account's usage and estimated cost per day (issue 12; admin)."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Query

from agentworks import limits
from agentworks.http_api.principal import current_principal
from agentworks.http_api.responses import documented
from agentworks.runtime import services
from agentworks.usage.views import UsageReport

router = Router()


@router.get(
    "/usage",
    summary="The account's usage and estimated cost, per UTC day (admin)",
    responses=documented(200, 400, 403, 404),
)
def get_usage(
    account: Annotated[
        str | None,
        Query(max_length=64, description="The caller's own account (the default)."),
    ] = None,
    days: Annotated[
        int | None,
        Query(
            description=f"Today and the days before it: 1–{limits.USAGE_DAYS_MAX}, "
            f"default {limits.USAGE_DAYS_DEFAULT}."
        ),
    ] = None,
) -> UsageReport:
    return services().usage.report(current_principal(router), account, days)
