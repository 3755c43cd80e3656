"""Isolation and authority of relay code (issue 9): its Lambda's role reaches no platform
table, locally its process holds only the run's credential; that credential carries the
caller's *current* authority (a revoked caller's running relay cannot send), narrowed to
what relay code may do, and dies with the attempt; a connection outside its bounds cannot
run a Relay or tell it exists."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.integration.relay_support import publish, relay_api, relay_files, start, wait_run
from tests.support.aws_calls import Permission
from tests.support.iam import allowed, role_of_function, role_statements, stack_resolver
from tests.support.sam import translated_template

__all__ = ["relay_api"]

READS_A_TABLE = """
    import os

    async def run(INPUT):
        import boto3

        seen = sorted(k for k in os.environ
                      if k.startswith("AWS_") or k.endswith("_TABLE") or "SECRET" in k)
        try:
            boto3.client("dynamodb", region_name="us-east-1").get_item(
                TableName=INPUT["table"], Key={"pk": {"S": "x"}, "sk": {"S": "y"}})
        except Exception as error:
            return {"denied": type(error).__name__, "environment": seen}
        return {"denied": None, "environment": seen}
"""

SENDS_UNTIL_REFUSED = """
    import time
    from agentworks_relay import platform

    async def run(INPUT):
        platform.send("first", target="agent:watcher", agent_name="billing")
        for _ in range(600):  # the test revokes the caller meanwhile
            time.sleep(0.05)
            platform.request("GET", "/v1/agents")
        return {"never": "refused"}
"""

OVERREACHES = """
    import os
    from agentworks_relay import PlatformError, platform

    def answer(method, path, body=None):
        try:
            platform.request(method, path, body)
        except PlatformError as error:
            return error.status
        return 200

    async def run(INPUT):
        other = f"/api/relays/probe/runs/{INPUT['other_run']}/steps/s/start"
        return {
            "admin": answer("POST", "/v1/connections", {"name": "escalated"}),
            "other_runs_checkpoint": answer("POST", other, {"safe": False}),
            "credential": platform._credential,
            "in_environment": [k for k, v in os.environ.items() if "awr1." in v],
        }
"""


@pytest.mark.parametrize("table", ["IdentityTable", "MessagesTable", "WorkTable"])
def test_the_relay_code_role_reaches_no_platform_table(table: str) -> None:
    translated = translated_template()
    resolve = stack_resolver(translated)
    statements = role_statements(
        translated, role_of_function(translated, "RelayCodeFunction"), resolve
    )
    arn = str(resolve({"Fn::GetAtt": [table, "Arn"]}))
    for action in (
        "GetItem",
        "Query",
        "Scan",
        "PutItem",
        "UpdateItem",
        "DeleteItem",
        "BatchGetItem",
        "TransactWriteItems",
    ):
        assert not allowed(statements, Permission(f"dynamodb:{action}", arn)), action
    assert not allowed(statements, Permission("dynamodb:GetItem", f"{arn}/index/byAccount"))


def test_the_relay_code_role_has_no_policy_beyond_logs_and_traces() -> None:
    translated = translated_template()
    role = translated["Resources"][role_of_function(translated, "RelayCodeFunction")]
    assert role["Properties"].get("Policies", []) == []
    managed = [str(arn) for arn in role["Properties"].get("ManagedPolicyArns", [])]
    assert all(
        "AWSLambdaBasicExecutionRole" in a or "AWSXrayWriteOnlyAccess" in a for a in managed
    ), managed
    resolve = stack_resolver(translated)
    statements = role_statements(
        translated, role_of_function(translated, "RelayCodeFunction"), resolve
    )
    bucket = str(resolve({"Fn::GetAtt": ["OutputsBucket", "Arn"]}))
    secret = str(resolve({"Ref": "SigningSecret"}))
    assert not allowed(statements, Permission("s3:GetObject", f"{bucket}/relays/x.zip"))
    assert not allowed(statements, Permission("secretsmanager:GetSecretValue", secret))
    assert not allowed(statements, Permission("lambda:InvokeFunction", "*"))


def test_relay_code_that_reads_a_platform_table_directly_is_denied(
    stack: Any, api: Any, agents: Any, relay_api: str
) -> None:
    publish(api, stack.admin_token, relay_files("reader", READS_A_TABLE))
    caller = agents.connection("caller")["token"]
    table = stack.settings.identity_table
    run = start(
        api,
        caller,
        "reader",
        {"function": "run", "input": {"table": table}, "idempotency_key": "k"},
    )
    done = wait_run(api, caller, "reader", run["run_id"])
    assert done["status"] == "succeeded", done
    # Its process has no AWS credentials and no platform names: the read cannot be signed.
    assert done["result"] == {"denied": "NoCredentialsError", "environment": []}


def test_a_revoked_callers_running_relay_is_refused_at_its_next_platform_call(
    stack: Any, api: Any, agents: Any, relay_api: str
) -> None:
    publish(api, stack.admin_token, relay_files("watch", SENDS_UNTIL_REFUSED))
    watcher = agents.named("watcher")
    billing = agents.named("billing")
    billing_id = stack.principal(billing).connection_id
    run = start(api, billing, "watch", {"function": "run", "input": {}, "idempotency_key": "k"})

    def inbox() -> list[str]:
        reply = api("GET", "/v1/messages", watcher, query={"agent_name": "watcher"})
        return [m["body"] for m in reply.body["messages"]]

    deadline = time.monotonic() + 30
    while inbox() != ["first"]:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert api("DELETE", f"/v1/connections/{billing_id}", stack.admin_token).status == 200
    admin_view = "/api/relay-runs/" + run["run_id"]
    deadline = time.monotonic() + 30
    while not api("GET", admin_view, stack.admin_token).body["terminal"]:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    done = api("GET", admin_view, stack.admin_token).body
    assert done["status"] == "failed", done
    assert "401" in done["error"] and done["attempts"] == 1  # refused, and not retried
    assert inbox() == ["first"]


def test_the_run_credential_is_narrowed_scoped_to_its_run_and_dies_with_the_attempt(
    stack: Any, api: Any, agents: Any, relay_api: str
) -> None:
    publish(api, stack.admin_token, relay_files("probe", OVERREACHES))
    # Even an admin's run carries no admin: relay code talks and calls, never administers.
    admin = stack.admin_token
    first = start(
        api,
        admin,
        "probe",
        {"function": "run", "input": {"other_run": "rrun_x"}, "idempotency_key": "a"},
    )
    wait_run(api, admin, "probe", first["run_id"])
    second = start(
        api,
        admin,
        "probe",
        {"function": "run", "input": {"other_run": first["run_id"]}, "idempotency_key": "b"},
    )
    done = wait_run(api, admin, "probe", second["run_id"])
    assert done["status"] == "succeeded", done
    assert done["result"]["admin"] == 403
    assert done["result"]["other_runs_checkpoint"] == 404
    assert done["result"]["in_environment"] == []  # the pipe, not the environment
    leaked = done["result"]["credential"]
    assert api("GET", "/v1/agents", leaked).status == 401  # the run ended: so did it
    unknown = api("GET", "/v1/agents", "awr1.acct_x.rrun_x.nothing")
    assert (unknown.status, unknown.body) == (401, api("GET", "/v1/agents", leaked).body)


def test_a_connection_outside_its_bounds_cannot_run_or_see_a_relay(
    stack: Any, api: Any, agents: Any
) -> None:
    publish(api, stack.admin_token, relay_files("bounded", "async def run(INPUT):\n    return 1\n"))
    inside = agents.connection("inside", token=None)["token"]
    reply = api(
        "POST",
        "/v1/connections",
        stack.admin_token,
        {"name": "outside", "target_bounds": ["relay:other"]},
    )
    outside = reply.body["token"]
    body = {"function": "run", "input": {}, "idempotency_key": "k"}
    refused = api("POST", "/api/relays/bounded/runs", outside, body)
    unknown = api("POST", "/api/relays/no-such-relay/runs", outside, body)
    assert refused.status == 404
    assert (refused.status, refused.body) == (unknown.status, unknown.body)
    assert api("GET", "/api/relays/bounded/releases", outside).status == 404
    assert api("GET", "/api/relays", outside).body == {"relays": []}
    assert api("POST", "/api/relays/bounded/runs", inside, body).status == 202


def test_a_run_credential_reads_only_what_each_surface_role_allows(stack: Any, api: Any) -> None:
    """Issue 23: a relay run's credential (well-formed for a real account, or not) sent to
    every surface that authenticates (HTTP API, MCP, push `$connect`) is refused as a bad
    token, and every AWS call it causes is one the surface's role allows."""
    import json
    import uuid

    from agentworks.ids import new_id
    from tests.integration.test_mcp_handler import event
    from tests.integration.test_push_listeners import _ws_event
    from tests.support.aws_calls import CallRecorder
    from tests.support.handlers import invoke_function
    from tests.support.iam_guard import denials

    account = stack.principal(stack.admin_token).account_id
    tokens = [
        f"awr1.{account}.{new_id('rrun', stack.clock)}.{uuid.uuid4().hex}",
        "awr1.acct_x.rrun_x.nothing",
        "awr1.",
    ]
    recorder = CallRecorder()
    with recorder.recording():
        for token in tokens:
            assert api("GET", "/v1/agents", token).status == 401
            listed = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
            mcp = invoke_function(
                "McpFunction", event("mcp_tools_list.json", token=token, body=listed)
            )
            assert mcp["statusCode"] == 401, mcp
            push = invoke_function(
                "PushFunction", _ws_event("$connect", "wsrelay", token, agent_name="x")
            )
            assert push["statusCode"] == 401 and json.loads(push["body"])["error"]["code"] == (
                "unauthenticated"
            )
    assert {c.function for c in recorder.calls} == {"ApiFunction", "McpFunction"}
    assert denials(recorder.calls, stack.resources) == []
