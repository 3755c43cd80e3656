"""Bodies declared as anything but JSON — a form, multipart without (or with) its boundary,
XML, text, a made-up type — are refused with 415 in the one error shape, never a 500 and
never another shape; on the unauthenticated sign-in exchange too (issue 24 §4). JSON in
any letter case, with parameters, or undeclared, is read as before."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentworks_local.gateway import Request, build_event, lambda_response
from tests.support.handlers import LambdaContext, Reply, _route, load_handler

# The sign-in exchange (no token), a send and a connection created (admin), a webhook.
ROUTES = (
    "/v1/session",
    "/v1/messages",
    "/v1/connections",
    "/v1/hooks/trg_01ARZ3NDEKTSV4RRFFQ69G5FAV",
)
_MEDIA = st.sampled_from(
    [
        "multipart/form-data",
        "multipart/form-data; boundary=",
        "multipart/form-data; boundary=x",
        "multipart/mixed",
        "application/x-www-form-urlencoded",
        "text/plain",
        "text/html; charset=utf-8",
        "application/xml",
        "application/octet-stream",
        "application/jsonx",
        "application/vnd.api+json",
        "json",
        "*/*",
    ]
)
_BODY = st.sampled_from([b'{"code":"x"}', b"a=b&c=d", b"--x\r\n\r\n--x--", b"<a/>"]) | st.binary(
    max_size=64
)


def _send(method: str, path: str, token: str | None, body: bytes, content_type: str) -> Reply:
    """The request as the local gateway hands it to the API function."""
    headers = [("content-type", content_type), ("host", "api.local")]
    if token is not None:
        headers.append(("authorization", f"Bearer {token}"))
    route, parameters = _route(method, path)
    event = build_event(Request(method, path, headers, body), route, parameters, "r-1")
    response = lambda_response(load_handler("api").handler(event, LambdaContext()))
    return Reply(response.status, json.loads(response.body or b"null"), dict(response.headers))


def _error_shape(reply: Reply) -> bool:
    return set(reply.body or {}) == {"error"} and {"code", "message"} <= set(reply.body["error"])


@settings(
    max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None
)
@given(path=st.sampled_from(ROUTES), content_type=_MEDIA, body=_BODY)
def test_bodies_declared_as_anything_but_json_are_415(
    api: Any, stack: Any, path: str, content_type: str, body: bytes
) -> None:
    token = None if path.startswith(("/v1/session", "/v1/hooks/")) else stack.admin_token
    reply = _send("POST", path, token, body, content_type)
    assert reply.status == 415 and _error_shape(reply), (content_type, body, reply)
    assert reply.body["error"]["code"] == "unsupported_media_type"
    assert "application/json" in reply.body["error"]["message"]


def test_json_in_any_case_or_undeclared_is_read(api: Any, stack: Any) -> None:
    body = json.dumps({"name": "cased"}).encode()
    for content_type in ("Application/JSON", "application/json; charset=utf-8", ""):
        reply = _send("POST", "/v1/connections", stack.admin_token, body, content_type)
        assert reply.status == 201, (content_type, reply)
    # The sign-in exchange reads a JSON body: a wrong code is its own refusal, not a 415.
    refused = _send("POST", "/v1/session", None, b'{"code": "nope"}', "application/json")
    assert 400 <= refused.status < 500 and refused.status != 415 and _error_shape(refused)
    # A refused token is still refused first, whatever the body says it is.
    stranger = _send("POST", "/v1/messages", "aw1.x.y.z", b"a=b", "multipart/form-data")
    assert stranger.status == 401 and _error_shape(stranger)


def test_the_document_lists_415_on_every_operation_with_a_body(api: Any) -> None:
    document = api("GET", "/v1/openapi.json").body
    with_body = [
        (path, method, operation["responses"])
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if "requestBody" in operation
    ]
    assert len(with_body) > 20
    missing = [(p, m) for p, m, responses in with_body if "415" not in responses]
    assert not missing, missing
