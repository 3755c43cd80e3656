"""The web Inbox's pages (C5) are routed to the API function by the template, GET only, and
the local stack's gateway (which routes by the same template) serves them the same way."""

from __future__ import annotations

from agentworks_local.gateway import routes_from_template, select_route
from agentworks_local.template import load_template, resources_of_type


def test_c5_the_template_routes_the_pages_to_the_api_function() -> None:
    functions = resources_of_type(load_template(), "AWS::Serverless::Function")
    events = functions["ApiFunction"]["Properties"]["Events"]
    pages = {
        (e["Properties"]["Path"], e["Properties"]["Method"])
        for e in events.values()
        if e["Type"] == "HttpApi" and not e["Properties"]["Path"].startswith(("/v1", "/api"))
    }
    assert pages == {
        ("/inbox", "GET"),
        ("/inbox/{proxy+}", "GET"),
        ("/messages", "GET"),
        ("/runs", "GET"),
        ("/runs/{proxy+}", "GET"),
    }


def test_c5_the_local_gateway_serves_the_pages_from_the_api_function() -> None:
    routes = routes_from_template()
    for path in (
        "/inbox",
        "/inbox/app.js",
        "/inbox/c/cnv_x",
        "/messages",
        "/runs",
        "/runs/wfrun_x",
    ):
        selected = select_route(routes, "GET", path)
        assert selected is not None and selected[0].function == "ApiFunction", path
    assert select_route(routes, "POST", "/inbox") is None  # the pages take GET only
    assert select_route(routes, "GET", "/inboxes") is None
