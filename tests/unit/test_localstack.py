"""The local stack's pieces without sockets or subprocesses: routes read from template.yaml,
API Gateway HTTP API events and responses, the authorizer contract (A3), handler loading by
file path, the scheduled tick and the TTL sweeper, and the private CLI config file."""

from __future__ import annotations

import base64
import json
import stat
from pathlib import Path
from typing import Any

import boto3
import pytest

from agentworks_local.configfile import ConfigError, read_config, write_config
from agentworks_local.gateway import (
    Gateway,
    Request,
    build_event,
    lambda_response,
    routes_from_template,
    select_route,
)
from agentworks_local.handlers import (
    FunctionError,
    FunctionHost,
    FunctionSpec,
    HandlerMissing,
    function_specs,
)
from agentworks_local.scheduler import Scheduler, TtlSweeper, TtlTable

# -- routes from template.yaml -----------------------------------------------------------


def test_routes_are_the_templates_http_api_events() -> None:
    routes = {(r.method, r.path): r.function for r in routes_from_template()}
    # Authentication happens in the functions (A3): no authorizer, so one route per function.
    assert routes == {
        ("ANY", "/v1/{proxy+}"): "ApiFunction",
        ("ANY", "/api/{proxy+}"): "ApiFunction",  # SPEC §7: the Relay API (R2)
        ("ANY", "/mcp"): "McpFunction",
        # Issue 30: every Crew an A2A agent (the account's cards, then each Crew's).
        ("GET", "/a2a"): "A2aFunction",
        ("ANY", "/a2a/{proxy+}"): "A2aFunction",
        # …and external A2A agents' push notifications about tasks calls and steps wait for.
        ("POST", "/a2a-callbacks/{proxy+}"): "A2aFunction",
        # C5: the web Inbox and Runs pages (GET only; tests/infrastructure/test_inbox_routes.py).
        ("GET", "/inbox"): "ApiFunction",
        ("GET", "/inbox/{proxy+}"): "ApiFunction",
        ("GET", "/messages"): "ApiFunction",
        ("GET", "/runs"): "ApiFunction",
        ("GET", "/runs/{proxy+}"): "ApiFunction",
    }


@pytest.mark.parametrize(
    ("method", "path", "route_key", "params"),
    [
        ("GET", "/v1/openapi.json", "ANY /v1/{proxy+}", {"proxy": "openapi.json"}),
        ("GET", "/v1/inboxes/ib_1/state", "ANY /v1/{proxy+}", {"proxy": "inboxes/ib_1/state"}),
        ("DELETE", "/mcp", "ANY /mcp", {}),
    ],
)
def test_route_selection_prefers_exact_routes(
    method: str, path: str, route_key: str, params: dict[str, str]
) -> None:
    selected = select_route(routes_from_template(), method, path)
    assert selected is not None
    assert (selected[0].key, selected[1]) == (route_key, params)


@pytest.mark.parametrize("path", ["/", "/v1", "/v2/whoami", "/mcpx"])
def test_paths_outside_the_template_have_no_route(path: str) -> None:
    assert select_route(routes_from_template(), "GET", path) is None


# -- events and responses ------------------------------------------------------------------


def _route(method: str = "ANY", path: str = "/v1/{proxy+}") -> Any:
    return next(r for r in routes_from_template() if (r.method, r.path) == (method, path))


def test_proxy_event_is_payload_2_0() -> None:
    request = Request(
        method="POST",
        target="/v1/messages?a=1&a=2&b=",
        headers=[
            ("Host", "127.0.0.1:8787"),
            ("Content-Type", "application/json"),
            ("X-Many", "one"),
            ("x-many", "two"),
            ("Cookie", "c1=x; c2=y"),
        ],
        body=b'{"message": "hi"}',
    )
    event = build_event(request, _route(), {"proxy": "messages"}, "req-1")
    assert event["version"] == "2.0"
    assert event["routeKey"] == "ANY /v1/{proxy+}"
    assert (event["rawPath"], event["rawQueryString"]) == ("/v1/messages", "a=1&a=2&b=")
    assert event["queryStringParameters"] == {"a": "1,2", "b": ""}
    assert event["headers"]["x-many"] == "one,two"
    assert "cookie" not in event["headers"]
    assert event["cookies"] == ["c1=x", "c2=y"]
    assert event["pathParameters"] == {"proxy": "messages"}
    assert (event["body"], event["isBase64Encoded"]) == ('{"message": "hi"}', False)
    context = event["requestContext"]
    assert context["http"]["method"] == "POST"
    assert context["http"]["path"] == "/v1/messages"
    assert (context["stage"], context["requestId"], context["domainName"]) == (
        "$default",
        "req-1",
        "127.0.0.1:8787",
    )
    assert isinstance(context["timeEpoch"], int)


def test_binary_body_is_base64_and_absent_body_is_omitted() -> None:
    binary = Request("POST", "/mcp", [("Content-Type", "application/octet-stream")], b"\x00\xff")
    event = build_event(binary, _route("ANY", "/mcp"), {}, "r")
    assert event["isBase64Encoded"] is True
    assert base64.b64decode(event["body"]) == b"\x00\xff"
    empty = build_event(Request("GET", "/mcp", []), _route("ANY", "/mcp"), {}, "r")
    assert "body" not in empty and "queryStringParameters" not in empty
    assert "pathParameters" not in empty


def test_lambda_response_conversion() -> None:
    plain = lambda_response(
        {"statusCode": 201, "headers": {"X-A": "1"}, "body": "{}", "cookies": ["s=1"]}
    )
    assert plain.status == 201
    assert ("X-A", "1") in plain.headers and ("Set-Cookie", "s=1") in plain.headers
    encoded = lambda_response(
        {"statusCode": 200, "body": base64.b64encode(b"\x01").decode(), "isBase64Encoded": True}
    )
    assert encoded.body == b"\x01"
    # Without statusCode HTTP API answers 200 with the result as JSON.
    inferred = lambda_response({"ok": True})
    assert (inferred.status, json.loads(inferred.body)) == (200, {"ok": True})


# -- the gateway with fake functions ---------------------------------------------------------


class FakeHost:
    """Records invocations; answers from a table of canned results."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.specs = function_specs()
        self.output = type("Output", (), {"path": None})()

    def spec(self, logical_id: str) -> FunctionSpec:
        return self.specs[logical_id]

    def invoke(self, logical_id: str, event: dict[str, Any]) -> Any:
        self.calls.append((logical_id, event))
        answer = self.answers[logical_id]
        if isinstance(answer, Exception):
            raise answer
        return answer


def _request(path: str = "/v1/whoami", token: str | None = "tok", method: str = "GET") -> Request:
    headers = [("Host", "127.0.0.1:8787")]
    if token is not None:
        headers.append(("Authorization", f"Bearer {token}"))
    return Request(method, path, headers)


def _gateway(answers: dict[str, Any]) -> tuple[Gateway, FakeHost]:
    host = FakeHost(answers)
    return Gateway(host, warn=lambda line: None), host  # type: ignore[arg-type]


def test_requests_reach_the_function_with_their_headers() -> None:
    """A3: the gateway passes the Authorization header through; the function decides."""
    gateway, host = _gateway({"ApiFunction": {"statusCode": 200, "body": '{"ok": true}'}})
    response = gateway.handle(_request("/v1/whoami?x=1"))
    assert response.status == 200
    ((name, event),) = host.calls
    assert name == "ApiFunction"
    assert event["headers"]["authorization"] == "Bearer tok"
    assert "authorizer" not in event["requestContext"]
    assert gateway.handle(_request("/v1/openapi.json", token=None)).status == 200


def test_missing_handler_is_501_and_a_crash_is_500() -> None:
    gateway, _ = _gateway({"McpFunction": HandlerMissing("no functions/mcp/app.py")})
    missing = gateway.handle(_request("/mcp", method="POST"))
    assert missing.status == 501
    assert json.loads(missing.body)["error"]["code"] == "not_implemented"
    crash = FunctionError("ApiFunction", RuntimeError("boom"))
    gateway, _ = _gateway({"ApiFunction": crash})
    failed = gateway.handle(_request())
    assert (failed.status, json.loads(failed.body)) == (500, {"message": "Internal Server Error"})


def test_oversized_body_is_413_before_any_function() -> None:
    gateway, host = _gateway({})
    request = Request("POST", "/v1/messages", [("Authorization", "Bearer t")], b"x" * (10 << 20))
    request.body += b"x"
    response = gateway.handle(request)
    assert response.status == 413 and host.calls == []


# -- handlers loaded by file path -----------------------------------------------------------


def _spec(tmp_path: Path, source: str | None, name: str = "probe") -> FunctionSpec:
    code = tmp_path / name
    code.mkdir()
    if source is not None:
        (code / "app.py").write_text(source)
    return FunctionSpec(
        "ProbeFunction", code, "app.handler", 256, 7, {"Tick": {"Type": "Schedule"}}
    )


def test_handler_is_loaded_by_path_under_a_unique_module_name(tmp_path: Path) -> None:
    source = (
        "def handler(event, context):\n    return [__name__, context.memory_limit_in_mb, event]\n"
    )
    host = FunctionHost({"ProbeFunction": _spec(tmp_path, source, "probe_a")})
    name, memory, event = host.invoke("ProbeFunction", {"n": 1})
    assert (name, memory, event) == ("agentworks_fn_probe_a", 256, {"n": 1})


def test_handler_written_later_is_picked_up(tmp_path: Path) -> None:
    spec = _spec(tmp_path, None, "probe_b")
    host = FunctionHost({"ProbeFunction": spec})
    with pytest.raises(HandlerMissing):
        host.handler("ProbeFunction")
    (spec.code_dir / "app.py").write_text("def handler(event, context):\n    return 'ok'\n")
    assert host.invoke("ProbeFunction", {}) == "ok"


def test_handler_that_fails_to_import_is_a_function_error(tmp_path: Path) -> None:
    """An init error fails the invoke (the gateway answers 500), it does not kill the stack."""
    host = FunctionHost({"ProbeFunction": _spec(tmp_path, "raise RuntimeError('init')", "probe_d")})
    with pytest.raises(FunctionError, match="init"):
        host.invoke("ProbeFunction", {})


def test_scheduler_tick_sends_a_scheduled_event(tmp_path: Path) -> None:
    source = "seen = []\ndef handler(event, context):\n    seen.append(event)\n"
    host = FunctionHost({"ProbeFunction": _spec(tmp_path, source, "probe_c")})
    scheduler = Scheduler(host, sweeper=None)
    scheduler.tick_once()
    module = __import__("sys").modules["agentworks_fn_probe_c"]
    (event,) = module.seen
    assert (event["detail-type"], event["source"], event["detail"]) == (
        "Scheduled Event",
        "aws.events",
        {},
    )
    assert event["resources"][0].endswith(":rule/agentworks-ProbeFunction-Tick")


# -- TTL sweeper ------------------------------------------------------------------------------


@pytest.fixture
def ttl_table() -> Any:
    from moto import mock_aws

    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(
            TableName="t",
            AttributeDefinitions=[
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
            ],
            KeySchema=[
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"},
            ],
            BillingMode="PAY_PER_REQUEST",
        )
        yield client


def test_ttl_sweeper_deletes_only_what_dynamodb_would(ttl_table: Any) -> None:
    now = 1_800_000_000
    ttl_values = {
        "due": {"N": str(now)},
        "past": {"N": str(now - 3600)},
        "future": {"N": str(now + 1)},
        "text": {"S": str(now - 3600)},
        "ancient": {"N": str(now - 6 * 365 * 24 * 3600)},  # over five years: DynamoDB skips
    }
    for name, value in ttl_values.items():
        ttl_table.put_item(
            TableName="t", Item={"pk": {"S": name}, "sk": {"S": "x"}, "expires_ttl": value}
        )
    ttl_table.put_item(TableName="t", Item={"pk": {"S": "none"}, "sk": {"S": "x"}})
    sweeper = TtlSweeper(ttl_table, [TtlTable("t", "expires_ttl", ("pk", "sk"))], lambda: now)
    assert sweeper.sweep_once() == 2
    left = {i["pk"]["S"] for i in ttl_table.scan(TableName="t")["Items"]}
    assert left == {"future", "text", "ancient", "none"}


# -- CLI config ------------------------------------------------------------------------------


def test_config_is_written_0600_in_a_new_0700_directory(tmp_path: Path) -> None:
    path = tmp_path / "new" / "config.json"
    write_config(path, {"url": "http://127.0.0.1:8787", "token": "aw1.secret"})
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert read_config(path)["token"] == "aw1.secret"
    path.chmod(0o644)
    write_config(path, {"url": "u", "token": "t2"})  # rewriting makes it private again
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.parametrize(
    ("content", "reason"),
    [(None, "no AgentWorks config"), ("[1]", "JSON object"), ("{", "not valid JSON")],
)
def test_unreadable_config_is_one_clear_error(
    tmp_path: Path, content: str | None, reason: str
) -> None:
    path = tmp_path / "config.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ConfigError, match=reason):
        read_config(path)


def test_dev_keeps_a_config_for_another_server_aside(tmp_path: Path) -> None:
    """`make run` must not silently destroy the login to a deployed stack."""
    from agentworks_local.dev import _keep_remote_config

    path = tmp_path / "config.json"
    assert _keep_remote_config(path) is None  # nothing there yet
    write_config(path, {"url": "http://127.0.0.1:8787", "token": "old-local"})
    assert _keep_remote_config(path) is None  # a previous local stack's: replaced
    remote = {"url": "https://abc.execute-api.eu-west-1.amazonaws.com", "token": "aw1.remote"}
    write_config(path, remote)
    kept = _keep_remote_config(path)
    assert kept == tmp_path / "config.json.bak"
    assert read_config(kept) == remote
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600


def test_dev_seconds_settings_take_zero_only_where_it_means_something(monkeypatch) -> None:
    """The TTL lag may be 0 (the default: sweep expired items at once); a tick interval
    may not."""
    from agentworks_local.dev import StartError
    from agentworks_local.dev_command import _env_seconds

    monkeypatch.setenv("AGENTWORKS_DEV_TTL_LAG_SECONDS", "0")
    assert _env_seconds("AGENTWORKS_DEV_TTL_LAG_SECONDS", 0.0, allow_zero=True) == 0.0
    monkeypatch.setenv("AGENTWORKS_DEV_TICK_SECONDS", "0")
    with pytest.raises(StartError, match="more than 0"):
        _env_seconds("AGENTWORKS_DEV_TICK_SECONDS", 5.0)
    monkeypatch.setenv("AGENTWORKS_DEV_TTL_LAG_SECONDS", "-1")
    with pytest.raises(StartError, match="0 or more"):
        _env_seconds("AGENTWORKS_DEV_TTL_LAG_SECONDS", 0.0, allow_zero=True)


def test_a_taken_port_is_answered_with_a_free_one(tmp_path: Path) -> None:
    """Issue 29: `make run` next to a running stack suggests a port that is free, not the
    next one up (the running stack's push channel), in both of the ways to give it."""
    import re
    import socket

    from agentworks_local.dev import DevStack, StartError

    with socket.socket() as api, socket.socket() as push:
        api.bind(("127.0.0.1", 0))
        api.listen()
        taken = api.getsockname()[1]
        try:
            push.bind(("127.0.0.1", taken + 1))  # the running stack's push channel
            push.listen()
        except OSError:
            pytest.skip("the port after a free one is taken here")
        stack = DevStack(port=taken, config_path=tmp_path / "config.json")
        with pytest.raises(StartError) as refused:
            stack.start()
    message = str(refused.value)
    assert message.startswith(f"port {taken} on 127.0.0.1 is already in use")
    suggested = re.search(
        r"agentworks dev --port (\d+) \(from the Makefile: make run PORT=(\d+)\)", message
    )
    assert suggested is not None, message
    assert suggested.group(1) == suggested.group(2)
    free = int(suggested.group(1))
    assert free not in (taken, taken + 1)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", free))  # free indeed


def test_make_run_takes_the_port() -> None:
    import subprocess

    root = Path(__file__).resolve().parents[2]
    planned = subprocess.run(
        ["make", "-n", "run", "PORT=9123"], cwd=root, capture_output=True, text=True, check=True
    ).stdout
    assert "agentworks dev --port 9123" in planned
