"""Attached MCP servers over HTTP (issue 28 items 1, 2, 5, 3 in part), against a real MCP
server the test starts (official SDK, streamable HTTP, bearer-protected; its log shows
every request that reached it): an admin attaches, shows (tools fetched with the official
client), updates (rotating the secret), calls and removes a server; the secret is in no
response, record or log line; a non-admitted tool is refused before any request leaves;
the server's 401 is a clear error; SSRF rules hold at add and at call; another account
cannot list, call or see the server."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from agentworks import limits
from agentworks.errors import McpServerFailed, NotAdmitted
from agentworks.mcp_servers.declarations import parse_declaration
from agentworks.outbound.urls import ALLOW_LOOPBACK_ENV
from tests.support.mcp_test_server import McpTestServer

BASE = "/v1/mcp-servers"


def _attach(api: Any, token: str, server: McpTestServer, name: str = "tools", **more: Any) -> Any:
    body = {"name": name, "url": server.url, "headers": {"Authorization": f"Bearer {server.token}"}}
    return api("POST", BASE, token, {**body, **more})


def _call(
    api: Any, token: str, tool: str, arguments: Any, name: str = "tools", **query: Any
) -> Any:
    return api("POST", f"{BASE}/{name}/tools/{tool}:call", token, arguments, query or None)


def test_an_admin_attaches_shows_calls_updates_and_removes_a_server(api, stack, mcp_server):
    admin = stack.admin_token
    added = _attach(api, admin, mcp_server, name="Tools")
    assert added.status == 201, added.body
    assert added.body["name"] == "tools" and added.body["url"] == mcp_server.url
    assert added.body["header_names"] == ["Authorization"] and added.body["version"] == 1
    again = _attach(api, admin, mcp_server)
    assert again.status == 409 and "mcp-servers update tools" in again.body["error"]["message"]

    listed = api("GET", BASE, admin)
    assert [s["name"] for s in listed.body["mcp_servers"]] == ["tools"]
    shown = api("GET", f"{BASE}/tools", admin)
    assert shown.status == 200 and shown.body["tools_error"] is None
    assert sorted(t["name"] for t in shown.body["tools"]) == ["big", "echo", "fails", "slow"]

    echoed = _call(api, admin, "echo", {"text": "hello"})
    assert echoed.status == 200, echoed.body
    assert echoed.body["is_error"] is False
    assert echoed.body["content"] == [{"type": "text", "text": "hello"}]
    assert mcp_server.wait_for_call("echo").authorized

    changed = api("PATCH", f"{BASE}/tools", admin, {"headers": {"Authorization": "Bearer old"}})
    assert changed.status == 200 and changed.body["version"] == 2, changed.body
    refused = _call(api, admin, "echo", {"text": "x"})
    assert (refused.status, refused.body["error"]["code"]) == (502, "mcp_server_failed")
    assert "HTTP 401" in refused.body["error"]["message"]
    assert "mcp-servers update" in refused.body["error"]["message"]

    removed = api("DELETE", f"{BASE}/tools", admin)
    assert removed.status == 200 and removed.body == {"name": "tools", "removed": True}
    assert api("GET", f"{BASE}/tools", admin).status == 404
    assert _call(api, admin, "echo", {"text": "x"}).status == 404
    assert api("GET", BASE, admin).body == {"mcp_servers": []}


def _secret_ids(stack: Any) -> list[str]:
    import boto3

    client = boto3.client("secretsmanager", region_name="us-east-1")
    return [s["Name"] for s in client.list_secrets()["SecretList"] if "/mcp-servers/" in s["Name"]]


def test_one_secret_per_server_rotated_by_update_deleted_with_the_server(api, stack, mcp_server):
    import boto3

    client = boto3.client("secretsmanager", region_name="us-east-1")
    assert _attach(api, stack.admin_token, mcp_server).status == 201
    (secret,) = _secret_ids(stack)
    assert secret.startswith("agentworks/mcp-servers/")
    stored = json.loads(client.get_secret_value(SecretId=secret)["SecretString"])
    assert stored == {"Authorization": f"Bearer {mcp_server.token}"}
    body = {"headers": {"Authorization": "Bearer rotated-1"}}
    assert api("PATCH", f"{BASE}/tools", stack.admin_token, body).status == 200
    assert _secret_ids(stack) == [secret]
    rotated = json.loads(client.get_secret_value(SecretId=secret)["SecretString"])
    assert rotated == {"Authorization": "Bearer rotated-1"}
    assert api("DELETE", f"{BASE}/tools", stack.admin_token).status == 200
    assert _secret_ids(stack) == []


def test_the_secret_appears_in_no_response_record_or_log_line(
    api, stack, mcp_server, capfd, caplog
):
    admin = stack.admin_token
    answers = [
        _attach(api, admin, mcp_server),
        api("GET", BASE, admin),
        api("GET", f"{BASE}/tools", admin),
        _call(api, admin, "echo", {"text": "hi"}),
        _call(api, admin, "fails", {}),
        _call(api, admin, "slow", {"seconds": 5}, timeout=0.5),
        api("PATCH", f"{BASE}/tools", admin, {"headers": {"Authorization": "Bearer wrong-one"}}),
        _call(api, admin, "echo", {"text": "hi"}),
    ]
    assert mcp_server.wait_for_call("echo").authorized
    secret = mcp_server.token
    for answer in answers:
        text = json.dumps(answer.body) + json.dumps(answer.headers)
        assert secret not in text and "wrong-one" not in text, text[:300]
    items = []
    for table in (stack.settings.work_table, stack.settings.identity_table):
        items += stack.client.scan(TableName=table)["Items"]
    records = json.dumps(items)
    assert "MCPSERVER#tools" in records  # the server's item is there…
    assert secret not in records and "wrong-one" not in records  # …without its secret
    captured = capfd.readouterr()
    records = [json.dumps(r.__dict__, default=str) for r in caplog.records]
    logged = captured.out + captured.err + "\n".join(records)
    assert "mcp tool call" in logged  # the calls were logged…
    assert secret not in logged and "wrong-one" not in logged  # …without the secret


def test_a_non_admitted_tool_is_refused_before_any_request_reaches_the_server(
    api, stack, mcp_server
):
    assert _attach(api, stack.admin_token, mcp_server).status == 201
    principal = stack.principal(stack.admin_token)
    service = stack.services.mcp_servers
    declaration = parse_declaration([{"server": "tools", "tools": ["echo"]}])
    before = len(mcp_server.requests)
    for server, tool in (("tools", "fails"), ("other", "echo"), ("tools", "ECHO")):
        with pytest.raises(NotAdmitted):
            service.call(principal, server, tool, {}, declaration=declaration)
    with pytest.raises(NotAdmitted):
        service.call(principal, "tools", "echo", {"text": "x"}, declaration=())
    assert mcp_server.requests[before:] == []  # nothing reached the server
    admitted = service.call(principal, "tools", "echo", {"text": "x"}, declaration=declaration)
    assert admitted.content == [{"type": "text", "text": "x"}]
    every = parse_declaration([{"server": "tools", "tools": ["*"]}])
    assert service.call(principal, "tools", "fails", {}, declaration=every).is_error


def test_is_error_results_are_the_tools_errors_not_platform_failures(api, stack, mcp_server):
    assert _attach(api, stack.admin_token, mcp_server).status == 201
    failed = _call(api, stack.admin_token, "fails", {})
    assert failed.status == 200 and failed.body["is_error"] is True
    assert failed.body["content"][0]["text"] == "the tool failed on purpose"


def test_a_slow_tool_fails_its_call_at_the_timeout(api, stack, mcp_server):
    assert _attach(api, stack.admin_token, mcp_server).status == 201
    slow = _call(api, stack.admin_token, "slow", {"seconds": 20}, timeout=0.5)
    assert (slow.status, slow.body["error"]["code"]) == (502, "mcp_server_failed")
    assert "did not answer within 0.5 s" in slow.body["error"]["message"]


def test_a_result_holds_its_bound_and_fails_just_past_it(api, stack, mcp_server):
    assert _attach(api, stack.admin_token, mcp_server).status == 201
    principal = stack.principal(stack.admin_token)
    service = stack.services.mcp_servers
    big = _call(api, stack.admin_token, "big", {})
    assert big.status == 502 and "at most 262,144 are passed on" in big.body["error"]["message"]
    # The documented rule: compact JSON of each content item and of the structured content.
    # echo gives {"type":"text","text":T} and {"result":T}: 38 bytes around two copies of T.
    overhead = len('{"type":"text","text":""}') + len('{"result":""}')
    at_bound = (limits.MCP_RESULT_MAX_BYTES - overhead) // 2
    assert overhead + 2 * at_bound == limits.MCP_RESULT_MAX_BYTES
    fits = service.call(principal, "tools", "echo", {"text": "y" * at_bound})
    assert fits.size == limits.MCP_RESULT_MAX_BYTES
    with pytest.raises(McpServerFailed, match="262,146 bytes"):
        service.call(principal, "tools", "echo", {"text": "y" * (at_bound + 1)})


def test_cancelling_ends_an_in_flight_call(api, stack, mcp_server):
    assert _attach(api, stack.admin_token, mcp_server).status == 201
    principal = stack.principal(stack.admin_token)
    cancel = threading.Event()
    outcome: list[BaseException] = []

    def call() -> None:
        try:
            stack.services.mcp_servers.call(
                principal, "tools", "slow", {"seconds": 30}, timeout=30, cancel=cancel
            )
        except BaseException as error:
            outcome.append(error)

    caller = threading.Thread(target=call)
    caller.start()
    assert mcp_server.slow_started.wait(10)  # the call is in flight at the server
    cancel.set()
    caller.join(10)
    assert not caller.is_alive(), "the cancelled call is still waiting"
    assert isinstance(outcome[0], McpServerFailed) and "cancelled" in outcome[0].message


def test_the_tool_list_is_kept_a_minute(api, stack, mcp_server):
    assert _attach(api, stack.admin_token, mcp_server).status == 201

    def lists() -> int:
        return len([s for s in mcp_server.requests if s.rpc_method == "tools/list"])

    assert api("GET", f"{BASE}/tools", stack.admin_token).body["tools"]
    first = lists()
    assert first >= 1
    assert api("GET", f"{BASE}/tools", stack.admin_token).body["tools"]
    assert lists() == first  # within the minute: the cached list
    stack.clock.advance(limits.MCP_TOOLS_CACHE_SECONDS + 1)
    assert api("GET", f"{BASE}/tools", stack.admin_token).body["tools"]
    assert lists() > first


def test_a_tool_the_server_does_not_offer_fails_clearly(api, stack, mcp_server):
    assert _attach(api, stack.admin_token, mcp_server).status == 201
    before = len(mcp_server.calls())
    missing = _call(api, stack.admin_token, "gone", {})
    assert (missing.status, missing.body["error"]["code"]) == (404, "unavailable")
    assert "offers no tool gone" in missing.body["error"]["message"]
    assert len(mcp_server.calls()) == before


def test_a_redirecting_server_is_not_followed(api, stack, mcp_server):
    body = {"name": "moved", "url": mcp_server.redirect_url}
    assert api("POST", BASE, stack.admin_token, body).status == 201
    shown = api("GET", f"{BASE}/moved", stack.admin_token).body
    assert shown["tools"] is None and "redirect (HTTP 307)" in shown["tools_error"]
    assert [s.path for s in mcp_server.requests] == ["/redirect"] * len(mcp_server.requests)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9/mcp",
        "https://127.0.0.1/mcp",
        "https://10.1.2.3/mcp",
        "https://169.254.169.254/latest",
        "https://[::1]/mcp",
        "https://[fe80::1]/mcp",
        "https://192.168.0.10/mcp",
        "https://user:pw@example.com/mcp",
        "ftp://example.com/mcp",
    ],
)
def test_refused_urls_are_refused_at_add(api, stack, url):
    refused = api("POST", BASE, stack.admin_token, {"name": "x", "url": url})
    assert (refused.status, refused.body["error"]["field"]) == (400, "url"), refused.body
    assert api("GET", BASE, stack.admin_token).body == {"mcp_servers": []}


def test_the_outbound_rules_hold_again_at_call_time(api, stack, mcp_server, monkeypatch):
    assert _attach(api, stack.admin_token, mcp_server).status == 201
    monkeypatch.setenv(ALLOW_LOOPBACK_ENV, "0")  # as deployed: loopback is refused
    before = len(mcp_server.requests)
    refused = _call(api, stack.admin_token, "echo", {"text": "x"})
    assert (refused.status, refused.body["error"]["code"]) == (502, "mcp_server_failed")
    assert "refused" in refused.body["error"]["message"]
    shown = api("GET", f"{BASE}/tools", stack.admin_token).body
    assert "refused" in shown["tools_error"]
    assert len(mcp_server.requests) == before


def test_another_account_cannot_list_call_or_see_the_server(api, stack, mcp_server):
    assert _attach(api, stack.admin_token, mcp_server).status == 201
    intruder = stack.services.identity.bootstrap("intruder").token
    before = len(mcp_server.requests)
    assert api("GET", BASE, intruder).body == {"mcp_servers": []}
    for method, path, body in (
        ("GET", f"{BASE}/{{}}", None),
        ("PATCH", f"{BASE}/{{}}", {"url": "https://example.com/mcp"}),
        ("DELETE", f"{BASE}/{{}}", None),
        ("POST", f"{BASE}/{{}}/tools/echo:call", {"text": "x"}),
    ):
        theirs = api(method, path.format("tools"), intruder, body)
        unknown = api(method, path.format("nobody"), intruder, body)
        assert theirs.status == 404 and json.dumps(theirs.body) == json.dumps(unknown.body)
    assert len(mcp_server.requests) == before  # nothing reached the server
    shown = api("GET", f"{BASE}/tools", stack.admin_token).body
    assert shown["version"] == 1 and shown["url"] == mcp_server.url  # nothing changed


def test_attaching_is_account_wide_administration_with_an_own_token(api, stack, agents):
    from agentworks.identity.models import ALL_SCOPES

    body = {"name": "b2", "scopes": list(ALL_SCOPES), "target_bounds": ["crew:contracts"]}
    bounded = api("POST", "/v1/connections", stack.admin_token, body).body["token"]
    reader = agents.connection("reader")["token"]
    for token in (bounded, reader):
        refused = api("POST", BASE, token, {"name": "t", "url": "https://example.com/mcp"})
        assert (refused.status, refused.body["error"]["code"]) == (403, "forbidden")
        assert api("GET", BASE, token).status == 403
    assert api("GET", BASE, stack.admin_token).body == {"mcp_servers": []}


def test_calling_needs_the_mcp_servers_call_scope(api, stack, agents, mcp_server):
    from agentworks.identity.models import ALL_SCOPES, MCP_SERVERS_CALL

    assert _attach(api, stack.admin_token, mcp_server).status == 201
    lacking = [s for s in ALL_SCOPES if s != MCP_SERVERS_CALL]
    admin = agents.connection("admin-no-call", scopes=lacking)["token"]
    refused = _call(api, admin, "echo", {"text": "x"})
    assert (refused.status, refused.body["error"]["code"]) == (403, "forbidden")
    assert MCP_SERVERS_CALL in refused.body["error"]["message"]
    assert mcp_server.calls() == []


def test_the_servers_of_an_account_are_bounded(api, stack):
    bound = limits.MCP_SERVERS_PER_ACCOUNT
    for n in range(bound):
        body = {"name": f"s{n}", "url": "https://mcp.invalid/mcp"}
        assert api("POST", BASE, stack.admin_token, body).status == 201
    assert len(api("GET", BASE, stack.admin_token).body["mcp_servers"]) == bound
    past = api("POST", BASE, stack.admin_token, {"name": "past", "url": "https://mcp.invalid/mcp"})
    assert (past.status, past.body["error"]["code"]) == (409, "limit_reached")


def _tool(token: str, secret: str, **arguments: Any) -> dict[str, Any]:
    """One call of the `mcp_servers` MCP tool through the MCP function's handler; its
    answer never holds `secret`."""
    from tests.integration.test_mcp_handler import event
    from tests.support.handlers import invoke_function

    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "mcp_servers", "arguments": arguments},
    }
    reply = invoke_function("McpFunction", event("mcp_tools_list.json", token=token, body=body))
    assert reply["statusCode"] == 200, reply
    assert secret not in reply["body"]
    result: dict[str, Any] = json.loads(reply["body"])["result"]
    return result


def test_the_mcp_admin_tool_attaches_shows_and_removes_a_server(stack, mcp_server):
    admin, secret = stack.admin_token, mcp_server.token
    definition = {
        "name": "tools",
        "url": mcp_server.url,
        "headers": {"Authorization": f"Bearer {mcp_server.token}"},
    }
    added = _tool(admin, secret, action="add", definition=definition)
    assert not added.get("isError"), added
    assert added["structuredContent"]["header_names"] == ["Authorization"]
    shown = _tool(admin, secret, action="show", name="tools")["structuredContent"]
    assert sorted(t["name"] for t in shown["tools"]) == ["big", "echo", "fails", "slow"]
    listed = _tool(admin, secret, action="list")["structuredContent"]
    assert [s["name"] for s in listed["mcp_servers"]] == ["tools"]
    rotated = _tool(
        admin,
        secret,
        action="update",
        name="tools",
        definition={"headers": {"Authorization": "Bearer x"}},
    )
    assert rotated["structuredContent"]["version"] == 2
    refused = _tool(
        admin, secret, action="add", definition={**definition, "url": "https://10.0.0.1/"}
    )
    assert refused["isError"] and "Refused MCP server URL" in json.dumps(refused)
    assert _tool(admin, secret, action="remove", name="tools")["structuredContent"] == {
        "name": "tools",
        "removed": True,
    }
    gone = _tool(admin, secret, action="show", name="tools")
    assert gone["isError"] and gone["structuredContent"]["error"]["code"] == "unavailable"


def test_the_connection_goes_to_the_address_that_was_checked(mcp_server, monkeypatch):
    """DNS rebinding: the name answers a loopback address (allowed locally) when checked,
    then an unroutable one. The client must connect to the checked address, never
    resolving the name again: resolved twice, it would hang on the second and time out."""
    import socket

    from agentworks.mcp_servers import client

    real = socket.getaddrinfo
    answers: list[str] = []

    def rebinding(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host != "tools.rebind.test":
            return real(host, port, *args, **kwargs)
        address = "127.0.0.1" if not answers else "192.0.2.1"
        answers.append(address)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, int(port)))]

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    port = mcp_server.url.split(":")[2].split("/")[0]
    endpoint = client.Endpoint(
        f"http://tools.rebind.test:{port}/mcp", {"Authorization": f"Bearer {mcp_server.token}"}
    )
    tools = client.list_tools(endpoint, timeout=5)
    assert sorted(t.name for t in tools) == ["big", "echo", "fails", "slow"]
    assert answers == ["127.0.0.1"]  # resolved once: by the check
    # The next operation checks again and refuses what the name answers now.
    with pytest.raises(client.ServerFailure, match="refused now"):
        client.list_tools(endpoint, timeout=5)


def test_a_secret_deleted_outside_says_so_and_update_gives_it_back(api, stack, mcp_server):
    import boto3

    assert _attach(api, stack.admin_token, mcp_server).status == 201
    (secret,) = _secret_ids(stack)
    client = boto3.client("secretsmanager", region_name="us-east-1")
    client.delete_secret(SecretId=secret, ForceDeleteWithoutRecovery=True)
    shown = api("GET", f"{BASE}/tools", stack.admin_token)
    assert shown.status == 200 and "credentials are gone" in shown.body["tools_error"]
    failed = _call(api, stack.admin_token, "echo", {"text": "x"})
    assert failed.status == 502 and "credentials are gone" in failed.body["error"]["message"]
    body = {"headers": {"Authorization": f"Bearer {mcp_server.token}"}}
    assert api("PATCH", f"{BASE}/tools", stack.admin_token, body).status == 200
    echoed = _call(api, stack.admin_token, "echo", {"text": "back"})
    assert echoed.status == 200 and echoed.body["content"][0]["text"] == "back"
