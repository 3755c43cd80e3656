"""Loads the real Lambda handlers (functions/<name>/app.py) and drives them with API Gateway
HTTP API v2.0 events built by the local stack's gateway — the path a deployed request takes."""

from __future__ import annotations

import functools
import importlib.util
import json
import sys
import threading
import uuid
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import urlencode

from agentworks_local.gateway import (
    Request,
    Route,
    build_event,
    lambda_response,
    routes_from_template,
    select_route,
)

ROOT = Path(__file__).resolve().parents[2]


_LOADING = threading.Lock()


def load_handler(function_dir: str) -> ModuleType:
    # Under the lock: parallel steps invoke a function for its first time together, and
    # a second thread must not see the module before its handler is defined.
    with _LOADING:
        return _load_handler(function_dir)


def _load_handler(function_dir: str) -> ModuleType:
    name = f"agentworks_fn_{function_dir}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(
        name, ROOT / "functions" / function_dir / "app.py"
    )
    assert spec and spec.loader
    folder = str(ROOT / "functions" / function_dir)
    if folder not in sys.path:  # as on Lambda: sibling modules import by name
        sys.path.append(folder)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    _attribute_aws_calls(module, function_dir)
    return module


def _attribute_aws_calls(module: ModuleType, function_dir: str) -> None:
    """AWS calls made while the handler runs count as its function's (IAM coverage test)."""
    from tests.support.aws_calls import running

    by_folder = {folder: logical_id for logical_id, folder in _function_folders().items()}
    logical_id = by_folder.get(function_dir, function_dir)
    inner = module.handler

    @functools.wraps(inner)
    def handler(event: Any, context: Any) -> Any:
        with running(logical_id):
            return inner(event, context)

    module.handler = handler


def _function_folders() -> dict[str, str]:
    from agentworks_local.template import load_template, resources_of_type

    functions = resources_of_type(load_template(), "AWS::Serverless::Function")
    return {lid: Path(f["Properties"]["CodeUri"]).name for lid, f in functions.items()}


def invoke_function(logical_id: str, event: Any) -> Any:
    """What Lambda does for an invoke: the function's handler, with a context."""
    return load_handler(_function_folders()[logical_id]).handler(event, LambdaContext())


class LambdaContext:
    function_name = "local"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:local"
    aws_request_id = "local-request"

    def get_remaining_time_in_millis(self) -> int:
        return 29_000


def http_request(
    method: str,
    path: str,
    token: str | None = None,
    body: Any = None,
    query: dict[str, Any] | None = None,
    raw_body: str | None = None,
    headers: list[tuple[str, str]] | None = None,
) -> Request:
    """An HTTP request as a client sends it (`headers`: more of them, e.g. a cookie)."""
    headers = [("content-type", "application/json"), ("host", "api.local"), *(headers or [])]
    if token is not None:
        headers.append(("authorization", f"Bearer {token}"))
    query = {k: str(v) for k, v in (query or {}).items() if v is not None}
    text = raw_body if raw_body is not None else (None if body is None else json.dumps(body))
    target = path + (f"?{urlencode(query)}" if query else "")
    return Request(method, target, headers, (text or "").encode())


def http_event(method: str, path: str, **request: Any) -> dict[str, Any]:
    """The payload-2.0 event HTTP API gives the function routed for `path` — built by the
    local stack's gateway from template.yaml's routes."""
    http = http_request(method, path, **request)
    route, parameters = _route(method, path)
    return build_event(http, route, parameters, str(uuid.uuid4()))


@lru_cache(maxsize=1)
def _routes() -> list[Route]:
    return routes_from_template()


def _route(method: str, path: str) -> tuple[Route, dict[str, str]]:
    selected = select_route(_routes(), method, path)
    assert selected is not None, f"no route for {method} {path} in template.yaml"
    return selected


@dataclass
class Reply:
    status: int
    body: Any
    headers: dict[str, str]


class Api:
    """The API function behind HTTP API's routes (it authenticates the bearer token itself)."""

    def __init__(self) -> None:
        self.api = load_handler("api")

    def __call__(
        self,
        method: str,
        path: str,
        token: str | None = None,
        body: Any = None,
        query: dict[str, Any] | None = None,
        raw_body: str | None = None,
        headers: list[tuple[str, str]] | None = None,
    ) -> Reply:
        http = http_request(method, path, token, body, query, raw_body, headers)
        route, parameters = _route(method, path)
        event = build_event(http, route, parameters, str(uuid.uuid4()))
        function = (
            self.api
            if route.function == "ApiFunction"
            else load_handler(_function_folders()[route.function])
        )
        response = lambda_response(function.handler(event, LambdaContext()))
        return Reply(response.status, json.loads(response.body or b"null"), dict(response.headers))

    def raw(self, method: str, path: str, body: bytes, headers: dict[str, str]) -> Reply:
        """A request with these exact body bytes and headers and no token (a webhook)."""
        http = http_request(method, path, raw_body=body.decode())
        http = Request(http.method, http.target, [*http.headers, *headers.items()], body)
        route, parameters = _route(method, path)
        event = build_event(http, route, parameters, str(uuid.uuid4()))
        response = lambda_response(self.api.handler(event, LambdaContext()))
        return Reply(response.status, json.loads(response.body or b"null"), dict(response.headers))
