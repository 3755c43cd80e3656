"""/v1/audit: the audit log of conversations with a Crew (C6; account admins)."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Query

from agentworks import limits
from agentworks.audit.models import AuditPage
from agentworks.http_api.principal import current_principal
from agentworks.http_api.responses import documented
from agentworks.runtime import services

router = Router()


@router.get(
    "/audit",
    summary="Every change to the account's conversations with a Crew, oldest first (admin)",
    responses=documented(200, 400, 403),
)
def list_audit(
    inbox_id: Annotated[
        str | None,
        Query(max_length=64, description="One conversation's entries (either inbox, or cnv_…)."),
    ] = None,
    after: Annotated[str | None, Query(max_length=512)] = None,
    limit: Annotated[int | None, Query(ge=1, le=limits.AUDIT_PAGE_MAX)] = None,
) -> AuditPage:
    return services().audit.entries(current_principal(router), inbox_id, after, limit)
