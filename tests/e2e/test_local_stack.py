"""The local stack itself over plain HTTP (`agentworks dev`, §11): API Gateway behaviour of
the routes template.yaml declares, the bootstrap admin config (A6), revocation on the next
request (A3), the TTL sweeper, and a clean Ctrl-C.

The last test stops the module's stack: keep it last.
"""

from __future__ import annotations

import json
import re
import socket
import stat
import subprocess
import time
import urllib.error
import urllib.request
from typing import Any

import pytest

from tests.e2e.conftest import EPHEMERAL, LocalStack, _dev_command, http

pytestmark = pytest.mark.e2e


def _moto_dynamodb(local_stack: LocalStack) -> Any:
    return local_stack.aws("dynamodb")


UNAUTHENTICATED = {
    "error": {
        "code": "unauthenticated",
        "message": "Missing, invalid, expired or revoked token. "
        "Send 'Authorization: Bearer <token>'.",
    }
}


def test_openapi_is_served_without_a_token(local_stack: LocalStack) -> None:
    """§10: the OpenAPI document is the one public path (identity.bearer.PUBLIC_PATHS)."""
    status, document, headers = http("GET", f"{local_stack.url}/v1/openapi.json")
    assert status == 200
    assert document["openapi"].startswith("3.")
    assert "/v1/messages" in document["paths"]
    assert headers.get("apigw-requestid")


def test_missing_and_bad_tokens_get_the_error_shape(local_stack: LocalStack) -> None:
    """A3: the function authenticates, so a missing or refused token is a 401 in the API's
    own error shape (not API Gateway's {"message": …}), the same body for both."""
    assert http("GET", f"{local_stack.url}/v1/whoami")[:2] == (401, UNAUTHENTICATED)
    bad = http("GET", f"{local_stack.url}/v1/whoami", token="aw1.x.y.not-a-token")
    assert bad[:2] == (401, UNAUTHENTICATED)


def test_unknown_route_is_gateway_404(local_stack: LocalStack) -> None:
    status, body, _ = http("GET", f"{local_stack.url}/v2/whoami", token=local_stack.admin_token)
    assert (status, body) == (404, {"message": "Not Found"})


def test_mcp_route_needs_a_token(local_stack: LocalStack) -> None:
    """§10: /mcp takes bearer auth like every route but the OpenAPI document; the refusal is
    a JSON-RPC error whose data holds the API's error shape."""
    status, body, _ = http("POST", f"{local_stack.url}/mcp", body={})
    assert status == 401
    assert body["error"]["data"] == UNAUTHENTICATED


def test_admin_config_token_works_on_whoami(local_stack: LocalStack) -> None:
    """A6: the stack bootstraps an account and writes its admin connection as a CLI config."""
    config = json.loads(local_stack.admin_config.read_text())
    assert config["url"] == local_stack.url
    status, who, _ = http("GET", f"{config['url']}/v1/whoami", token=config["token"])
    assert status == 200
    assert who["account_id"] == config["account_id"]
    assert who["connection_id"] == config["connection_id"]
    assert "admin" in who["scopes"]
    # The banner printed the same token, once.
    assert local_stack.stdout().count(f"  {config['token']}\n") == 1


def test_config_file_is_private(local_stack: LocalStack) -> None:
    """The config holds a bearer token: file 0600 in a 0700 directory the stack created."""
    assert stat.S_IMODE(local_stack.admin_config.stat().st_mode) == 0o600
    assert stat.S_IMODE(local_stack.admin_config.parent.stat().st_mode) == 0o700


def test_revocation_counts_on_the_next_request(local_stack: LocalStack) -> None:
    """A3: a revoked connection's very next request is refused (nothing is cached)."""
    admin = local_stack.admin_token
    status, created, _ = http(
        "POST", f"{local_stack.url}/v1/connections", token=admin, body={"name": "short-lived"}
    )
    assert status == 201, created
    token = created["token"]
    assert http("GET", f"{local_stack.url}/v1/whoami", token=token)[0] == 200
    status, revoked, _ = http(
        "DELETE", f"{local_stack.url}/v1/connections/{created['connection_id']}", token=admin
    )
    assert status == 200, revoked
    status, body, _ = http("GET", f"{local_stack.url}/v1/whoami", token=token)
    assert (status, body) == (401, UNAUTHENTICATED)


def test_body_over_10_mib_is_413_before_any_function(local_stack: LocalStack) -> None:
    """HTTP API's own payload limit (10 MiB) answers 413."""
    request = urllib.request.Request(
        f"{local_stack.url}/v1/messages",
        data=b"x" * (10 * 1024 * 1024 + 1),
        method="POST",
        headers={"Authorization": f"Bearer {local_stack.admin_token}"},
    )
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with pytest.raises(urllib.error.HTTPError) as refused:
        opener.open(request, timeout=30)
    assert refused.value.code == 413
    assert json.loads(refused.value.read()) == {"message": "Request Entity Too Large"}


def test_ttl_sweeper_deletes_expired_items(local_stack: LocalStack) -> None:
    """moto never expires items; the stack deletes those whose TTL (Number) is past, as
    DynamoDB would, and leaves live, TTL-less and non-Number ones alone."""
    client = _moto_dynamodb(local_stack)
    table = next(t for t in client.list_tables()["TableNames"] if t.endswith("MessagesTable"))
    now = int(time.time())
    items = {
        "expired": {"expires_ttl": {"N": str(now - 60)}},
        "live": {"expires_ttl": {"N": str(now + 3600)}},
        "no-ttl": {},
        "text-ttl": {"expires_ttl": {"S": str(now - 60)}},
    }
    for name, extra in items.items():
        client.put_item(
            TableName=table, Item={"pk": {"S": f"E2E#{name}"}, "sk": {"S": "seed"}, **extra}
        )

    def present(name: str) -> bool:
        key = {"pk": {"S": f"E2E#{name}"}, "sk": {"S": "seed"}}
        return "Item" in client.get_item(TableName=table, Key=key, ConsistentRead=True)

    deadline = time.monotonic() + 20  # the fixture sweeps every second
    while present("expired") and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not present("expired")
    assert present("live") and present("no-ttl") and present("text-ttl")


def test_moto_executes_step_functions(local_stack: LocalStack) -> None:
    """§11: workflow execution needs moto's Step Functions runner switched on."""
    sfn = local_stack.aws("stepfunctions")
    definition = {"StartAt": "Echo", "States": {"Echo": {"Type": "Pass", "End": True}}}
    machine = sfn.create_state_machine(
        name="e2e-pass",
        definition=json.dumps(definition),
        roleArn="arn:aws:iam::123456789012:role/e2e",
    )["stateMachineArn"]
    execution = sfn.start_execution(stateMachineArn=machine, name="run-1", input='{"n": 1}')
    deadline = time.monotonic() + 15
    while (described := sfn.describe_execution(executionArn=execution["executionArn"]))[
        "status"
    ] == "RUNNING" and time.monotonic() < deadline:
        time.sleep(0.2)
    assert described["status"] == "SUCCEEDED"
    assert json.loads(described["output"]) == {"n": 1}


def test_request_log_has_one_line_per_request_without_secrets(local_stack: LocalStack) -> None:
    """The console shows `METHOD path status ms` per request, never tokens or bodies."""
    marker = "a body that must never be logged"
    http("GET", f"{local_stack.url}/v1/whoami")
    http(
        "POST",
        f"{local_stack.url}/v1/messages",
        token=local_stack.admin_token,
        body={"message": marker, "target": "agent:nobody-here"},
    )
    log = local_stack.stderr()
    assert "POST /v1/messages 404 " in log
    assert "GET /v1/whoami 401 " in log
    assert marker not in log
    assert local_stack.admin_token not in log
    assert "Traceback" not in log


def test_busy_port_is_one_line_and_exit_code_2(local_stack: LocalStack, tmp_path: Any) -> None:
    """A second `agentworks dev` on the same port says so in one line and exits 2."""
    port = local_stack.url.rsplit(":", 1)[1]
    done = subprocess.run(
        _dev_command(int(port), tmp_path / "second.json", EPHEMERAL),
        capture_output=True,
        text=True,
        timeout=60,
        env=local_stack.env,
    )
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and f"port {port}" in errors[0] and "--port" in errors[0]
    assert not (tmp_path / "second.json").exists()


def test_bedrock_crew_call_fails_clearly_and_the_console_stays_one_line_per_request(
    local_stack: LocalStack,
) -> None:
    """A Crew with the bedrock adapter: moto has no Bedrock, so the call fails with a message
    naming the local stack (not `500 <!doctype html>`), and the console holds only request
    lines — moto's traceback and the functions' metrics go to the function log."""
    token = local_stack.admin_token
    status, _, _ = http("POST", f"{local_stack.url}/v1/crews", token=token, body=BEDROCK_CREW)
    assert status == 201
    status, call, _ = http(
        "POST",
        f"{local_stack.url}/v1/calls",
        token=token,
        body={"target": "crew:modelled", "function": "ask", "args": {}},
    )
    assert status == 202, call
    deadline = time.monotonic() + 30
    while True:
        _, call, _ = http("GET", f"{local_stack.url}/v1/calls/{call['call_id']}", token=token)
        if call["terminal"] or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert call["state"] == "failed", call
    (error,) = call["errors"]
    assert "Bedrock is not available on the local stack; " in error
    assert "doctype" not in error.lower()
    console = [line for line in local_stack.stderr().splitlines() if line.strip()]
    request_line = re.compile(r"^[A-Z]+ /\S* \d{3} \d+ms$")
    others = [
        line
        for line in console
        if not request_line.match(line) and not line.startswith(("Starting", "warning:"))
    ]
    assert others == [], others
    assert "Traceback" not in local_stack.stderr() and '"_aws"' not in local_stack.stderr()


def test_trace_and_unserved_methods_are_405_in_the_error_shape(local_stack: LocalStack) -> None:
    """Bad input never gets a 5xx: TRACE reaches the function (not the server's 501 HTML)
    and every method a path does not serve is a 405 with `Allow` and the error shape."""
    for method, path, allowed in (
        ("TRACE", "/v1/messages", "GET, POST"),
        ("PUT", "/v1/whoami", "GET"),
    ):
        status, body, headers = http(
            method, f"{local_stack.url}{path}", token=local_stack.admin_token
        )
        assert status == 405, (method, path, status, body)
        assert body["error"]["code"] == "method_not_allowed" and headers["Allow"] == allowed


def test_a_default_stack_refuses_local_webhook_receivers(local_stack: LocalStack) -> None:
    """Issue 24 §3: without `--allow-loopback-webhooks` the local stack sends only where a
    deployed one would (tests/e2e/test_cli_audit.py runs a receiver with the option)."""
    for url in ("http://127.0.0.1:9/hook", "https://localhost:9/hook", "https://10.0.0.1/h"):
        status, body, _ = http(
            "POST",
            f"{local_stack.url}/v1/webhooks",
            token=local_stack.admin_token,
            body={"url": url, "events": ["agent_asked"]},
        )
        assert status == 400 and body["error"]["code"] == "invalid_request", (url, body)
    assert "public https:// addresses only" in local_stack.stdout()


# Last: it stops the module's local stack.
def test_ctrl_c_stops_cleanly(local_stack: LocalStack) -> None:
    """Ctrl-C (SIGINT) stops gateway, scheduler and moto, prints "stopped" and exits 0.
    Runs last: it stops the module's stack."""
    assert local_stack.stop() == 0
    assert local_stack.stdout().rstrip().endswith("stopped")
    port = int(local_stack.url.rsplit(":", 1)[1])
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", port), 2):
        pass


BEDROCK_CREW = {
    "name": "modelled",
    "instructions": "Answer briefly.",
    "adapter": {"type": "bedrock", "model_id": "us.anthropic.claude-3-5-haiku-20241022-v1:0"},
    "functions": [{"name": "ask", "description": "Ask", "input_schema": {"type": "object"}}],
}
