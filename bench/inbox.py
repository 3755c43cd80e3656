"""The web Inbox's size and load time on the local stack (C5, issue 11 "Measure").

`inbox_figures()` starts `agentworks dev` (ephemeral, its own port), signs in by a one-time
link as the page does, then times what a browser fetches to show the Inbox: the HTML shell,
its script and style, and the page's first API call (`GET /v1/conversations`, cookie-signed)
through the local gateway. Figures: the three files' bytes and the median of `rounds` loads.
"""

from __future__ import annotations

import http.client
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from agentworks.web.pages import ASSETS, asset

PAGE_PATHS = ("/inbox", "/inbox/app.js", "/inbox/app.css")
CSRF = {"X-AgentWorks-Requested-With": "inbox"}


def page_bytes() -> int:
    """HTML + JS + CSS as served (UTF-8)."""
    names = ["index.html", *(name for name, _ in ASSETS.values())]
    return sum(len(asset(name).encode()) for name in names)


def _request(
    connection: http.client.HTTPConnection,
    method: str,
    path: str,
    headers: dict[str, str],
    body: Any = None,
) -> tuple[int, bytes, list[tuple[str, str]]]:
    payload = None if body is None else json.dumps(body)
    sent = {**headers, **({"Content-Type": "application/json"} if payload else {})}
    connection.request(method, path, body=payload, headers=sent)
    response = connection.getresponse()
    return response.status, response.read(), response.getheaders()


def _load_ms(url: str, cookie: str) -> float:
    """One Inbox load: the three files and the first API call, on one keep-alive connection
    (as a browser would reuse it)."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=30)
    started = time.perf_counter()
    try:
        for path in PAGE_PATHS:
            status, _, _ = _request(connection, "GET", path, {})
            assert status == 200, (path, status)
        status, _, _ = _request(connection, "GET", "/v1/conversations", {"Cookie": cookie, **CSRF})
        assert status == 200, status
    finally:
        connection.close()
    return (time.perf_counter() - started) * 1000


def _sign_in(url: str, token: str) -> str:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=30)
    try:
        auth = {"Authorization": f"Bearer {token}"}
        status, raw, _ = _request(connection, "POST", "/v1/session/links", auth)
        assert status == 200, raw
        code = json.loads(raw)["code"]
        status, raw, headers = _request(connection, "POST", "/v1/session", CSRF, {"code": code})
        assert status == 200, raw
    finally:
        connection.close()
    [cookie] = [v for k, v in headers if k.lower() == "set-cookie"]
    return cookie.split(";", 1)[0]


def inbox_figures(rounds: int = 20) -> dict[str, float]:
    """{"inbox_page_bytes": …, "inbox_load_ms": …} (median of `rounds` loads, after one
    warm-up load that imports the routes)."""
    from tests.e2e.conftest import start_local_stack

    with tempfile.TemporaryDirectory(prefix="bench-inbox-") as workdir:
        stack = start_local_stack(Path(workdir))
        try:
            cookie = _sign_in(stack.url, stack.admin_token)
            _load_ms(stack.url, cookie)  # warm: the first request of each route imports it
            loads = [_load_ms(stack.url, cookie) for _ in range(rounds)]
        finally:
            stack.stop()
    return {
        "inbox_page_bytes": float(page_bytes()),
        "inbox_load_ms": round(statistics.median(loads), 1),
    }


if __name__ == "__main__":
    print(json.dumps(inbox_figures(), indent=2))
