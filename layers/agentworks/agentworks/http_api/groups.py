"""The API's route groups: each a module of this package with one `router`, the prefix it
is mounted under and the first path segments (after the prefix) of its routes.

The resolver includes a group on the first request for one of its paths, so a cold start
imports only the routes (and their models and services) its request runs: a send never
loads the Crew, workflow or Relay routes. The OpenAPI document has every group's routes,
in this order.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from aws_lambda_powertools.event_handler.api_gateway import Router


@dataclass(frozen=True)
class RouteGroup:
    module: str
    prefix: str
    segments: tuple[str, ...]

    def router(self) -> Router:
        router: Router = importlib.import_module(f"agentworks.http_api.{self.module}").router
        return router


GROUPS = (
    RouteGroup("connections", "/v1", ("whoami", "connections")),
    RouteGroup("session", "/v1", ("session",)),  # the web Inbox's sign-in (C5)
    RouteGroup("messages", "/v1", ("agents", "messages", "inboxes")),
    RouteGroup("crews", "/v1", ("crews", "functions", "calls")),
    RouteGroup("requests", "/v1", ("requests",)),
    RouteGroup("conversations", "/v1", ("conversations",)),
    RouteGroup("wakeups", "/v1", ("wakeups", "scheduler")),
    RouteGroup("adapters", "/v1", ("adapters",)),
    RouteGroup("mcp_servers", "/v1", ("mcp-servers",)),  # issue 28: attached MCP servers
    RouteGroup("workflows", "/v1", ("workflows",)),
    RouteGroup("workflow_definitions", "/v1", ("workflow-definitions", "hooks")),
    RouteGroup("usage", "/v1", ("usage",)),  # issue 12
    RouteGroup("audit", "/v1", ("audit",)),  # C6: the conversations' audit log
    RouteGroup("webhooks", "/v1", ("webhooks",)),  # C6: conversation webhooks
    RouteGroup("runners", "/v1", ("runner",)),  # local runners of cli steps (issue 10)
    RouteGroup("relays", "/api", ("relays", "relay-runs")),  # SPEC §7: /api/relays as in R2
)

_BY_SEGMENT = {(g.prefix, segment): g for g in GROUPS for segment in g.segments}


def group_of(path: str) -> RouteGroup | None:
    """The group whose routes could match `path` (the path routing matches: raw, without
    the stage), or None when no group's could."""
    parts = path.split("/", 3)
    if len(parts) < 3 or parts[0]:
        return None
    return _BY_SEGMENT.get((f"/{parts[1]}", parts[2]))
