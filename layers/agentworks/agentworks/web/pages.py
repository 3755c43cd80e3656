"""The web Inbox and Runs pages (C5), served by the API function itself: one HTML shell, a
few vanilla JS modules and one CSS file, package data of `agentworks.web` (no Node build, nothing
fetched at run time). The page signs in with a one-time link (identity/web_sessions.py) and
then only calls the API; every rule lives behind the API.

GET /inbox, /inbox/…, /messages, /runs and /runs/… answer the shell (the script reads the path);
/inbox/app.js and the modules it imports, /inbox/app.css and /inbox/favicon.svg its script,
style and icon. Each with a strict
Content-Security-Policy: the page loads only its own script and style, and every text it
shows is set with textContent, so a message body with <script> in it is text. The one
connection it may open besides its own origin is the push channel's WebSocket (the
settings' `push_url`, named in the shell's `agentworks-push` meta tag), where a run page
hears that its run changed.
"""

from __future__ import annotations

import html
import re
from functools import cache
from importlib import resources
from typing import Any

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-cache",
}
_SCRIPT = "text/javascript; charset=utf-8"
# The page's ES modules (app.js imports the others), its style and its icon.
ASSETS = {
    **{
        f"/inbox/{name}": (name, _SCRIPT)
        for name in (
            "app.js",
            "core.js",
            "inbox.js",
            "messages.js",
            "push.js",
            "questions.js",
            "runs.js",
            "run_pages.js",
            "workflow_page.js",
        )
    },
    "/inbox/app.css": ("app.css", "text/css; charset=utf-8"),
    "/inbox/favicon.svg": ("favicon.svg", "image/svg+xml"),
}
_SHELL = ("index.html", "text/html; charset=utf-8")
_PUSH_META = '<meta name="agentworks-push" content="">'
ROOTS = ("/inbox", "/messages", "/runs")


@cache
def asset(name: str) -> str:
    return resources.files("agentworks.web").joinpath(name).read_text(encoding="utf-8")


# A WebSocket URL as API Gateway and the local stack give it: scheme, host, port, path;
# nothing that could end the policy's source list or the meta tag's attribute.
_PUSH_URL = re.compile(r"(wss?://[A-Za-z0-9.-]+(?::\d{1,5})?)(?:/[A-Za-z0-9._~/-]*)?")


def push_origin(push_url: str) -> str:
    """`ws[s]://host[:port]` of the push channel's URL ("" when there is none, or it is not
    a plain WebSocket URL): the one origin besides the pages' own they may connect to."""
    matched = _PUSH_URL.fullmatch(push_url.strip())
    return matched.group(1).lower() if matched else ""


def content_security_policy(push_url: str = "") -> str:
    origin = push_origin(push_url)
    if not origin:
        return CONTENT_SECURITY_POLICY
    return CONTENT_SECURITY_POLICY.replace("connect-src 'self';", f"connect-src 'self' {origin};")


def is_page_path(path: str) -> bool:
    return any(path == root or path.startswith(root + "/") for root in ROOTS)


def serve(event: dict[str, Any], push_url: str = "") -> dict[str, Any] | None:
    """The answer for a page path (None for any other path): the asset, or the shell (which
    names the push channel's URL, `push_url`, for the pages to follow their runs)."""
    path = str(event.get("rawPath") or "")
    if not is_page_path(path):
        return None
    method = str(((event.get("requestContext") or {}).get("http") or {}).get("method", "GET"))
    if method.upper() not in ("GET", "HEAD"):
        return {
            "statusCode": 405,
            "headers": {"Content-Type": "application/json", "Allow": "GET, HEAD"},
            "body": '{"error": {"code": "method_not_allowed", "message": '
            '"The Inbox pages answer GET only."}}',
        }
    name, content_type = ASSETS.get(path, _SHELL)
    body = "" if method.upper() == "HEAD" else asset(name)
    if (name, content_type) == _SHELL and push_origin(push_url):
        named = f'<meta name="agentworks-push" content="{html.escape(push_url.strip())}">'
        body = body.replace(_PUSH_META, named)
    return {
        "statusCode": 200,
        "headers": {
            "Content-Type": content_type,
            "Content-Security-Policy": content_security_policy(push_url),
            **SECURITY_HEADERS,
        },
        "body": body,
    }
