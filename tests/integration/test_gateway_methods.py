"""The local gateway over a real socket (as `agentworks dev` serves it): a method no route
serves — QUERY, FOO, anything — is a 405 in the API's error shape with `Allow`, never the
HTTP server's 501 page; and a body declared as multipart without its boundary is a 415
in that shape, on the unauthenticated sign-in exchange too (issue 24 §4)."""

from __future__ import annotations

import http.client
import json
from typing import Any
from urllib.parse import urlsplit

from tests.support.relay_gateway import serving


def _request(
    url: str, method: str, path: str, headers: dict[str, str], body: bytes = b""
) -> tuple[int, Any, dict[str, str]]:
    where = urlsplit(url)
    connection = http.client.HTTPConnection(where.hostname or "", where.port, timeout=30)
    try:
        connection.request(method, path, body=body or None, headers=headers)
        response = connection.getresponse()
        raw = response.read()
        return response.status, json.loads(raw or b"null"), dict(response.getheaders())
    finally:
        connection.close()


def _error_shape(body: Any) -> bool:
    return (
        isinstance(body, dict)
        and set(body) == {"error"}
        and set(body["error"])
        >= {
            "code",
            "message",
        }
    )


def test_unknown_methods_are_405_in_the_error_shape(stack: Any) -> None:
    auth = {"Authorization": f"Bearer {stack.admin_token}"}
    with serving(stack.services) as url:
        for method, path in (
            ("QUERY", "/v1/messages"),
            ("FOO", "/v1/whoami"),
            ("QUERY", "/mcp"),
            ("PROPFIND", "/v1/nowhere"),
        ):
            status, body, headers = _request(url, method, path, auth, b'{"q": 1}')
            assert status == 405 and _error_shape(body), (method, path, status, body)
            assert body["error"]["code"] == "method_not_allowed"
            assert "GET" in headers["Allow"] and method not in headers["Allow"]
        # HTTP's own methods are routed as before: the function knows the path's methods.
        status, body, headers = _request(url, "CONNECT", "/v1/whoami", auth)
        assert (status, headers.get("Allow")) == (405, "GET") and _error_shape(body)
        status, body, _ = _request(url, "GET", "/v1/whoami", auth)
        assert status == 200 and body["account_id"]


def test_multipart_without_a_boundary_is_415_over_http(stack: Any) -> None:
    multipart = {"Content-Type": "multipart/form-data"}
    with serving(stack.services) as url:
        status, body, _ = _request(url, "POST", "/v1/session", multipart, b'{"code": "x"}')
        assert status == 415 and _error_shape(body), (status, body)
        auth = {**multipart, "Authorization": f"Bearer {stack.admin_token}"}
        status, body, _ = _request(url, "POST", "/v1/connections", auth, b'{"name": "n"}')
        assert status == 415 and body["error"]["code"] == "unsupported_media_type"
