"""Loads the real Lambda handlers (functions/<name>/app.py) and drives them with API Gateway
HTTP API v2.0 events, authorizer first — the same path a deployed request takes."""

from __future__ import annotations

import importlib.util
import json
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[2]


def load_handler(function_dir: str) -> ModuleType:
    name = f"agentworks_fn_{function_dir}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(
        name, ROOT / "functions" / function_dir / "app.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _function_folders() -> dict[str, str]:
    from agentworks_cli.localstack.template import load_template, resources_of_type

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


def http_event(
    method: str,
    path: str,
    token: str | None = None,
    body: Any = None,
    query: dict[str, Any] | None = None,
    raw_body: str | None = None,
) -> dict[str, Any]:
    headers = {"content-type": "application/json", "host": "api.local"}
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    query = {k: str(v) for k, v in (query or {}).items() if v is not None}
    text = raw_body if raw_body is not None else (None if body is None else json.dumps(body))
    return {
        "version": "2.0",
        "routeKey": "ANY /v1/{proxy+}",
        "rawPath": path,
        "rawQueryString": urlencode(query),
        "headers": headers,
        "queryStringParameters": query or None,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "local",
            "domainName": "api.local",
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "127.0.0.1",
                "userAgent": "tests",
            },
            "requestId": str(uuid.uuid4()),
            "routeKey": "ANY /v1/{proxy+}",
            "stage": "$default",
            "time": "01/Jan/2027:00:00:00 +0000",
            "timeEpoch": 0,
        },
        "pathParameters": {"proxy": path.removeprefix("/v1/")},
        "body": text,
        "isBase64Encoded": False,
    }


@dataclass
class Reply:
    status: int
    body: Any
    headers: dict[str, str]


class Api:
    """Authorizer then API function, as HTTP API runs them."""

    def __init__(self) -> None:
        self.authorizer = load_handler("authorizer")
        self.api = load_handler("api")

    def __call__(
        self,
        method: str,
        path: str,
        token: str | None = None,
        body: Any = None,
        query: dict[str, Any] | None = None,
        raw_body: str | None = None,
    ) -> Reply:
        event = http_event(method, path, token, body, query, raw_body)
        if token is None:
            return Reply(401, {"message": "Unauthorized"}, {})
        auth_event = {
            "version": "2.0",
            "type": "REQUEST",
            "routeArn": "arn:aws:execute-api:us-east-1:123456789012:local/$default/ANY/v1",
            "identitySource": [event["headers"]["authorization"]],
            "routeKey": event["routeKey"],
            "rawPath": path,
            "headers": event["headers"],
            "requestContext": event["requestContext"],
        }
        decision = self.authorizer.handler(auth_event, LambdaContext())
        if not decision.get("isAuthorized"):
            return Reply(403, {"message": "Forbidden"}, {})
        event["requestContext"]["authorizer"] = {"lambda": decision["context"]}
        response = self.api.handler(event, LambdaContext())
        text = response.get("body") or "null"
        return Reply(response["statusCode"], json.loads(text), response.get("headers") or {})
