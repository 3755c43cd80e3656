"""The A2A routes of one request, on the SDK's own JSON-RPC and HTTP+JSON dispatchers.

    GET  /a2a                                   the cards of the Crews the caller may use
    GET  /a2a/{crew}/.well-known/agent-card.json  one Crew's card
    POST /a2a/{crew}                            JSON-RPC (SendMessage, GetTask, ListTasks …)
    …    /a2a/{crew}/message:send, /tasks/{id} …  HTTP+JSON

Built per request around its authenticated principal (the SDK's context builder carries it
to the handler), as the MCP app is.
"""

from __future__ import annotations

import time
from typing import Any

from a2a.server.context import ServerCallContext
from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.server.routes import (
    DefaultServerCallContextBuilder,
    create_jsonrpc_routes,
    create_rest_routes,
)
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from agentworks.a2a_server.cards import agent_card
from agentworks.a2a_server.handler import CREW, PRINCIPAL, CrewTasks
from agentworks.a2a_server.push_configs import TaskPushConfigs
from agentworks.errors import AgentWorksError
from agentworks.identity.models import Principal
from agentworks.runtime import services

PREFIX = "/a2a"


class _ActingAs(DefaultServerCallContextBuilder):
    """The SDK's context (headers for its A2A-Version rule, extensions) plus who calls and
    which Crew the path names."""

    def __init__(self, principal: Principal) -> None:
        self._principal = principal

    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        context.state[PRINCIPAL] = self._principal
        context.state[CREW] = str(request.path_params.get("crew", "")).lower()
        return context


def asgi_app(principal: Principal) -> Starlette:
    built = services()
    configs = TaskPushConfigs(built.push.a2a_configs, lambda: int(time.time() * 1000))
    handler = CrewTasks(built.crews, built.messaging, configs)
    acting = _ActingAs(principal)

    async def list_cards(request: Request) -> JSONResponse:
        try:
            crews = services().crews.definitions.list(principal)
        except AgentWorksError as refused:
            return JSONResponse(refused.to_body(), status_code=refused.status)
        base = str(request.base_url)
        return JSONResponse({"agents": [agent_card_to_dict(agent_card(c, base)) for c in crews]})

    async def card(request: Request) -> JSONResponse:
        try:
            crew = services().crews.definitions.get(principal, request.path_params["crew"])
        except AgentWorksError as refused:
            return JSONResponse(refused.to_body(), status_code=refused.status)
        return JSONResponse(agent_card_to_dict(agent_card(crew, str(request.base_url))))

    routes: list[Any] = [
        Route(PREFIX, list_cards, methods=["GET"]),
        Route(PREFIX + "/{crew}/.well-known/agent-card.json", card, methods=["GET"]),
        *create_jsonrpc_routes(handler, PREFIX + "/{crew}", context_builder=acting),
        *create_rest_routes(handler, context_builder=acting, path_prefix=PREFIX + "/{crew}"),
    ]
    return Starlette(routes=routes)
