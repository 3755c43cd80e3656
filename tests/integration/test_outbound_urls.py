"""Outbound URLs are refused when saved (issue 24 §3): every form of the SSRF table
(tests/unit/test_outbound_urls.py, docs/outbound.md) is a 400 in the error shape on both
routes that take one — `POST /v1/webhooks` (conversation webhooks) and `POST /v1/workflows`
(a run's `notifyUrl`) — and a receiver on this machine is refused unless the local stack's
option allows it."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from agentworks.outbound.urls import ALLOW_LOOPBACK_ENV
from tests.integration.workflow_support import TIMED, define
from tests.unit.test_outbound_urls import DNS, REFUSED, Resolver

EVENTS = ["agent_asked"]


def _workflow(notify_url: str) -> dict[str, Any]:
    step = {"label": "plan", "adapter": "timed", "prompt": "Plan it."}
    return {"workflowId": "hooked", "stages": [{"steps": [step]}], "notifyUrl": notify_url}


def _refused(reply: Any) -> str:
    assert reply.status == 400, reply.body
    assert reply.body["error"]["code"] == "invalid_request", reply.body
    return str(reply.body["error"]["message"])


def test_every_refused_form_is_a_400_on_both_routes(
    api: Any, stack: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ALLOW_LOOPBACK_ENV, raising=False)
    monkeypatch.setattr(socket, "getaddrinfo", Resolver(dict(DNS)))
    define(api, stack.admin_token, TIMED)
    for url, why in REFUSED:
        hook = api("POST", "/v1/webhooks", stack.admin_token, {"url": url, "events": EVENTS})
        assert why in _refused(hook), url
        run = api("POST", "/v1/workflows", stack.admin_token, _workflow(url))
        assert why in _refused(run), url
    assert api("GET", "/v1/webhooks", stack.admin_token).body["webhooks"] == []


def test_a_local_receiver_needs_the_local_stacks_option(
    api: Any, stack: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = "http://127.0.0.1:8080/hook"
    monkeypatch.delenv(ALLOW_LOOPBACK_ENV, raising=False)
    define(api, stack.admin_token, TIMED)
    body = {"url": url, "events": EVENTS}
    refused = _refused(api("POST", "/v1/webhooks", stack.admin_token, body))
    assert refused == "url: Value error, refused: an https:// URL is needed", refused
    notify = _refused(api("POST", "/v1/workflows", stack.admin_token, _workflow(url)))
    assert notify == "Invalid workflow: notifyUrl: refused: an https:// URL is needed", notify
    # `agentworks dev --allow-loopback-webhooks` (the switch the deployed template never sets)
    monkeypatch.setenv(ALLOW_LOOPBACK_ENV, "1")
    assert api("POST", "/v1/webhooks", stack.admin_token, body).status == 201
    # (a notifyUrl likewise: tests/unit/test_workflow_definition.py, without starting a run)
