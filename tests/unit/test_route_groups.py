"""The API's route groups (http_api/groups.py) load on the first request for one of their
paths (issue 13): every route is reachable through its group's path segments, a request
loads its own group only, and the OpenAPI document still has every group's routes."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from agentworks.http_api.app import app
from agentworks.http_api.groups import _BY_SEGMENT, GROUPS, group_of
from bench import cold_start


def test_every_route_is_found_through_its_own_group() -> None:
    for group in GROUPS:
        rules = [key[0] for key in group.router()._routes]
        assert rules, group
        for rule in rules:
            path = group.prefix + rule
            assert group_of(path) is group, f"{path} is not routed to {group.module}"
            # A concrete path of the route (placeholders filled in) finds the group too.
            assert group_of(path.replace("<", "x").replace(">", "")) is group
        # No segment is declared that none of the group's routes starts with.
        used = {rule.split("/")[1] for rule in rules}
        assert used == set(group.segments), group.module


def test_no_two_groups_claim_a_segment() -> None:
    assert len(_BY_SEGMENT) == sum(len(group.segments) for group in GROUPS)


def test_paths_no_group_serves() -> None:
    for path in ("/", "/v1", "/v1/", "/v1/nothing", "/api/crews", "//v1/crews", "/v2/messages"):
        assert group_of(path) is None, path


def test_the_document_resolver_has_every_route_of_every_group() -> None:
    documented = app.documented()
    routes = {(route.method, route.path) for route in documented._static_routes}
    routes |= {(route.method, route.path) for route in documented._dynamic_routes}
    declared = {
        (method, group.prefix + rule)
        for group in GROUPS
        for rule, methods, *_ in group.router()._routes
        for method in methods
    }
    assert routes == declared


# A fresh interpreter, as Lambda loads the api function: no group at init; a request loads
# its group only (first requests of one route racing on threads, as the local stack serves
# them); the document, asked for after, still has every group's routes.
_FRESH = """
import json, sys, threading
sys.path[:0] = {paths!r}
import app as function
from agentworks.http_api import app as api
from agentworks.http_api.groups import GROUPS

def loaded():
    return sorted(g.module for g in GROUPS if "agentworks.http_api." + g.module in sys.modules)

def request(method, path, body=None):
    event = {{
        "version": "2.0", "routeKey": "$default", "rawPath": path, "rawQueryString": "",
        "headers": {{"content-type": "application/json"}},
        "requestContext": {{"http": {{"method": method, "path": path}}, "stage": "$default"}},
        "body": body, "isBase64Encoded": False,
    }}
    answer = api.resolve(event, None)
    return answer["statusCode"], json.loads(answer["body"]), answer.get("headers") or {{}}

seen = {{"at_init": loaded()}}
# A trigger id over its 64 characters: refused by the route's request validation, so each
# answer runs the route's middleware stack (built once, under the lock) with no store call.
start = threading.Barrier(8)
answers = []
def first_request():
    start.wait()
    answers.append(request("POST", "/v1/hooks/" + "x" * 65, "{{}}")[:2])
threads = [threading.Thread(target=first_request) for _ in range(8)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
seen["racing"] = [[status, body["error"]["code"]] for status, body in answers]
seen["after_hook"] = loaded()
status, _, headers = request("GET", "/v1/hooks/x")
seen["wrong_method"] = [status, headers.get("Allow")]
status, body, _ = request("POST", "/v1/hooks/x/y")  # public: no token needed to be told
seen["no_route"] = [status, body["error"]["code"]]
seen["before_document"] = loaded()
status, document, _ = request("GET", "/v1/openapi.json")
seen["document"] = [status, sorted(document["paths"])]
print(json.dumps(seen))
"""


def test_a_request_loads_its_own_group_and_the_document_every_group() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _FRESH.format(paths=cold_start.handler_path("api"))],
        capture_output=True,
        text=True,
        env=cold_start.lambda_environment(),
        cwd=cold_start.ROOT,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["at_init"] == []
    assert seen["racing"] == [[400, "invalid_request"]] * 8
    assert seen["after_hook"] == ["workflow_definitions"]
    assert seen["wrong_method"] == [405, "POST"]
    assert seen["no_route"] == [404, "not_found"]
    assert seen["before_document"] == ["workflow_definitions"]
    status, paths = seen["document"]
    assert status == 200
    documented = app.documented()
    expected = {route.openapi_path for route in documented._static_routes}
    expected |= {route.openapi_path for route in documented._dynamic_routes}
    assert set(paths) == expected


def test_building_the_document_leaves_every_router_reading_its_own_resolver(
    monkeypatch: Any,
) -> None:
    """Issue 23: a group's router reads its request's state (principal, event) through
    `api_resolver`. Building the document must never point it elsewhere, even for a
    moment: a request of that group on another thread would read the document's state."""
    from aws_lambda_powertools.event_handler.api_gateway import Router

    from agentworks.http_api.resolver import Resolver

    pointed: list[tuple[str, object]] = []
    assign = Router.__setattr__

    def watch(router: Router, name: str, value: object) -> None:
        if name == "api_resolver":
            pointed.append((name, value))
        assign(router, name, value)

    before = {group.module: group.router().api_resolver for group in GROUPS}
    monkeypatch.setattr(Router, "__setattr__", watch)
    fresh = Resolver(enable_validation=True)
    documented = fresh.documented()
    assert pointed == []
    assert {group.module: group.router().api_resolver for group in GROUPS} == before
    # …and the document still has every route.
    assert len(documented._static_routes) + len(documented._dynamic_routes) == len(
        app.documented()._static_routes
    ) + len(app.documented()._dynamic_routes)
