"""The web Inbox and Runs pages (C5), served by the API function itself: one HTML shell, a
few vanilla JS modules and one CSS file, package data of `agentworks.web` (no Node build, nothing
fetched at run time). The page signs in with a one-time link (identity/web_sessions.py) and
then only calls the API; every rule lives behind the API.

GET /inbox, /inbox/…, /messages, /runs and /runs/… answer the shell (the script reads the path);
/inbox/app.js and the modules it imports, /inbox/app.css and /inbox/favicon.svg its script,
style and icon. Each with a strict
Content-Security-Policy: the page loads only its own script and style, and every text it
shows is set with textContent, so a message body with <script> in it is text.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
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
ROOTS = ("/inbox", "/messages", "/runs")


@cache
def asset(name: str) -> str:
    return resources.files("agentworks.web").joinpath(name).read_text(encoding="utf-8")


def is_page_path(path: str) -> bool:
    return any(path == root or path.startswith(root + "/") for root in ROOTS)


def serve(event: dict[str, Any]) -> dict[str, Any] | None:
    """The answer for a page path (None for any other path): the asset, or the shell."""
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
    return {
        "statusCode": 200,
        "headers": {"Content-Type": content_type, **SECURITY_HEADERS},
        "body": body,
    }
