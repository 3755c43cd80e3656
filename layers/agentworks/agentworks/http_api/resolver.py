"""The resolver of /v1: powertools' HTTP API resolver, with decoded path parameters, the
methods each path allows (for 405 instead of 404), route groups included on first use
(groups.py), and request state kept per thread.

Lambda hands an execution environment one request at a time, but the local stack (and a
test that races requests) serves concurrent requests from one loaded module on many
threads. Powertools keeps the current event on its base class and the request context
(our principal among it) on the instance, so one request could read another's principal,
or find its context cleared by another's end. Here both live in a `threading.local`, and
every route's middleware stack is built once, before the first request of its route.
"""

from __future__ import annotations

import threading
from re import Match
from typing import Any
from urllib.parse import unquote

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.utilities.data_classes.common import BaseProxyEvent

from agentworks.http_api.groups import GROUPS, RouteGroup, group_of


class _RequestState(threading.local):
    event: BaseProxyEvent | None = None
    lambda_context: Any = None

    def __init__(self) -> None:
        self.context: dict[str, Any] = {}


# Held while routes are added or their stacks built (see _ready_for).
_BUILDING = threading.Lock()


class Resolver(APIGatewayHttpResolver):
    _state = _RequestState()
    _stacks_built = False

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._included: set[RouteGroup] = set()
        self._documented: APIGatewayHttpResolver | None = None

    # Data descriptors on the class win over powertools' class and instance attributes, so
    # every read (routers delegate theirs here) and write goes to this thread's state.
    @property  # type: ignore[override]
    def current_event(self) -> BaseProxyEvent:
        event = self._state.event
        assert event is not None, "no request is being resolved on this thread"
        return event

    @current_event.setter
    def current_event(self, value: BaseProxyEvent) -> None:
        self._state.event = value

    @property
    def lambda_context(self) -> Any:
        return self._state.lambda_context

    @lambda_context.setter
    def lambda_context(self, value: Any) -> None:
        self._state.lambda_context = value

    @property
    def context(self) -> dict[str, Any]:
        return self._state.context

    @context.setter
    def context(self, value: dict[str, Any]) -> None:
        self._state.context = value

    def resolve(self, event: dict[str, Any], context: Any) -> dict[str, Any]:  # type: ignore[override]
        # powertools' resolve assigns the event to its base class (shared by all threads);
        # the same steps, with the event set on this thread's state instead.
        self.current_event = self._to_proxy_event(event)
        self.lambda_context = context
        try:
            self._ready_for(self.current_event.path)
            return self._build_response(self._resolve())
        finally:
            self.clear_context()

    def _convert_matches_into_route_keys(self, match: Match[str]) -> dict[str, str]:
        # Routing matches the raw (percent-encoded) path, so an encoded "/" stays inside
        # its segment; the route then gets the segment as the client meant it
        # (DELETE /v1/connections/conn%5Fx names conn_x).
        return {name: unquote(value) for name, value in match.groupdict().items()}

    def allowed_methods(self, path: str) -> list[str]:
        """The methods some route serves at `path` (empty when no route has the path)."""
        routes = self._static_routes + self._dynamic_routes
        return sorted({route.method for route in routes if route.rule.match(path)})

    def _ready_for(self, path: str) -> None:
        """Every route that could match `path` is registered (its group included on the
        first request for one of its paths), and its middleware stack built."""
        group = group_of(path)
        if self._stacks_built and (group is None or group in self._included):
            return
        with _BUILDING:
            if group is not None and group not in self._included:
                self.include_router(group.router(), prefix=group.prefix)
            self._build_route_stacks()
            if group is not None:
                # Marked last: a thread that finds it included routes to it unlocked.
                self._included.add(group)

    def _build_route_stacks(self) -> None:
        """Powertools builds a route's middleware stack on its first request, assigning it
        frame by frame: two threads' first requests of one route wove their frames into
        one broken stack (`MiddlewareFrame.__call__() missing … 'app'`, a 500). Built for
        every route added, under the lock, before a request is routed to it."""
        for route in [*self._static_routes, *self._dynamic_routes]:
            if not route._middleware_stack_built:
                route._build_middleware_stack(router_middlewares=self._router_middlewares, app=self)
        self._stacks_built = True

    def documented(self) -> APIGatewayHttpResolver:
        """A resolver with every group's routes, in the groups' order: the routes the
        OpenAPI document describes, whichever groups have served a request so far. It
        never routes one, and building it leaves every router as it was (see _copy_routes)."""
        with _BUILDING:
            if self._documented is None:
                # Plain powertools: its state is its own, so building it leaves the request
                # being served (the document's own) as it was.
                documented = APIGatewayHttpResolver(enable_validation=self._enable_validation)
                for group in GROUPS:
                    _copy_routes(group.router(), group.prefix, documented)
                self._documented = documented
        return self._documented


def _copy_routes(router: Router, prefix: str, into: APIGatewayHttpResolver) -> None:
    """`into.include_router(router, prefix)` without its other effects: include_router
    points the router's request state at `into`, so a request of that group running on
    another thread meanwhile read its principal and event from the document's resolver
    (a 401 or a 500). The document needs the routes only."""
    for route, handler in router._routes.items():
        rule = prefix if route[0] == "/" else f"{prefix}{route[0]}"
        middlewares = router._routes_with_middleware.get(route)
        # As include_router does: a route key never holds the middlewares themselves.
        into.route(rule, *route[1:], middlewares=middlewares)(handler)  # type: ignore[misc]
