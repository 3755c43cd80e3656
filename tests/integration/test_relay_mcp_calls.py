"""Relay code calls attached MCP servers' tools (issue 28, Relay SDK): `await
platform.mcp(NAME).call(TOOL, args)` goes through the API with the run's credential,
against a real MCP server (official SDK, streamable HTTP, bearer-protected; its request log
shows what reached it). The Relay's `mcp_tools` (of the run's pinned release, read on the
server side) admits each call before anything is sent; an `isError` result reaches the code
as a result, refusals and failures as McpCallError; each call is recorded on the run (and
its step), counted in usage, and shown by the run's view; the server's secret reaches
neither the code's process nor any answer, record or log line."""

from __future__ import annotations

import json
import textwrap
import threading
from dataclasses import replace
from typing import Any

import yaml

from agentworks import limits
from tests.integration.relay_support import live_credential, publish, relay_api, start, wait_run
from tests.support.mcp_test_server import McpTestServer

__all__ = ["relay_api"]

SERVERS = "/v1/mcp-servers"

CODE = """
    import os
    from agentworks_relay import McpCallError, platform, step

    async def _refusal(server, tool, args):
        try:
            await platform.mcp(server).call(tool, args)
        except McpCallError as error:
            return [error.status, error.code, error.message]
        return None

    async def run(INPUT):
        echoed = await platform.mcp("tools").call("echo", {"text": "hello"})

        async def check():
            failed = await platform.mcp("tools").call("fails", {})
            return {"is_error": failed.is_error, "text": failed.text}

        checked = await step("check", check)
        return {
            "echo": echoed.text,
            "echo_is_error": echoed.is_error,
            "structured": echoed.structured_content,
            "checked": checked,
            "not_admitted": await _refusal("tools", "slow", {"seconds": 1}),
            "not_attached": await _refusal("nowhere", "echo", {"text": "x"}),
            "environment": dict(os.environ),
        }
"""


def mcp_relay(name: str, mcp_tools: list[dict[str, Any]], source: str = CODE) -> dict[str, str]:
    manifest = {
        "name": name,
        "description": "calls attached MCP servers",
        "functions": [
            {"name": "run", "entrypoint": "main:run", "input_schema": {"type": "object"}}
        ],
        "mcp_tools": mcp_tools,
    }
    return {"relay.yaml": yaml.safe_dump(manifest), "main.py": textwrap.dedent(source)}


def attach(api: Any, token: str, server: McpTestServer, name: str = "tools") -> None:
    body = {"name": name, "url": server.url, "headers": {"Authorization": f"Bearer {server.token}"}}
    reply = api("POST", SERVERS, token, body)
    assert reply.status == 201, reply.body


def call(api: Any, credential: str, tool: str, args: Any, server: str = "tools", **query: Any):
    return api("POST", f"{SERVERS}/{server}/tools/{tool}:call", credential, args, query or None)


def test_relay_code_calls_admitted_tools_and_each_call_is_recorded_on_its_run(
    stack: Any,
    api: Any,
    agents: Any,
    relay_api: str,
    mcp_server: McpTestServer,
    capfd: Any,
    caplog: Any,
) -> None:
    admin = stack.admin_token
    attach(api, admin, mcp_server)
    declared = [
        {"server": "tools", "tools": ["echo", "fails"]},
        {"server": "nowhere", "tools": ["echo"]},
    ]
    release = publish(api, admin, mcp_relay("caller", declared))
    assert release["mcp_tools"] == declared
    caller = agents.connection("caller")["token"]
    before = {table: _keys(stack, table) for table in _tables(stack)}
    run = start(api, caller, "caller", {"function": "run", "input": {}, "idempotency_key": "k"})
    done = wait_run(api, caller, "caller", run["run_id"])
    assert done["status"] == "succeeded", done
    # The calls made records on the run and usage counters only: no function call record,
    # no inbox, no message.
    written = {t: _keys(stack, t) - before[t] for t in before}
    assert {pk.split("#")[0] for pk, _ in written[stack.settings.work_table]} <= {
        "RRUN",
        "RRKEY",
        "USAGE",
    }, written
    assert all(not keys for t, keys in written.items() if t != stack.settings.work_table), written
    result = done["result"]
    assert (result["echo"], result["echo_is_error"]) == ("hello", False)
    assert result["structured"] == {"result": "hello"}
    # The tool's own error reaches the code as a result, not an exception.
    assert result["checked"] == {"is_error": True, "text": "the tool failed on purpose"}
    status, code, message = result["not_admitted"]
    assert (status, code) == (403, "not_admitted") and "mcp_tools" in message
    status, code, message = result["not_attached"]
    assert (status, code) == (404, "unavailable") and "nowhere" in message
    # Only the admitted calls reached the server, with the server's own credentials.
    assert [c.tool for c in mcp_server.calls()] == ["echo", "fails"]
    assert all(c.authorized for c in mcp_server.calls())

    calls = {(c["tool"], c["server"]): c for c in done["mcp_calls"]}
    assert [(c["server"], c["tool"], c["outcome"], c["step"]) for c in done["mcp_calls"]] == [
        ("tools", "echo", "ok", None),
        ("tools", "fails", "tool_error", "check"),
        ("tools", "slow", "refused", None),
        ("nowhere", "echo", "refused", None),
    ]
    echo = calls[("echo", "tools")]
    assert echo["arguments"] == {"text": "hello"} and echo["attempt"] == 1
    assert echo["result"]["content"] == [{"type": "text", "text": "hello"}]
    # result_bytes by the documented rule: compact JSON of each content item and of the
    # structured content.
    assert echo["result_bytes"] == len('{"type":"text","text":"hello"}') + len('{"result":"hello"}')
    assert echo["duration_ms"] >= 0 and echo["error"] is None
    assert calls[("slow", "tools")]["result_bytes"] == 0
    assert not done["mcp_calls_more"]
    # Counted in usage: the calls that reached for the server.
    today = api("GET", "/v1/usage", admin).body["days"][-1]
    assert today["relay_mcp_tool_calls"] == 2
    # The secret is nowhere the code or the caller can see, nor in any record or log line.
    secret = mcp_server.token
    assert secret not in json.dumps(result["environment"])
    assert secret not in json.dumps(done)
    items = json.dumps(stack.client.scan(TableName=stack.settings.work_table)["Items"])
    assert "MCPCALL#" in items and secret not in items
    captured = capfd.readouterr()
    records = [json.dumps(r.__dict__, default=str) for r in caplog.records]
    logged = captured.out + captured.err + "\n".join(records)
    assert "mcp tool call" in logged and "RelayMcpToolCalls" in logged
    assert secret not in logged


LEGACY = """
    def run(INPUT, ctx):
        github = ctx.platform.mcp("tools")
        inside = ctx.step("fetch", lambda: github.call_sync("echo", {"text": "in a step"}).text)
        return {"outside": github.call_sync("echo", {"text": "plain"}).text, "inside": inside}
"""


def test_legacy_code_calls_without_await_and_its_step_is_recorded(
    stack: Any, api: Any, agents: Any, relay_api: str, mcp_server: McpTestServer
) -> None:
    attach(api, stack.admin_token, mcp_server)
    declared = [{"server": "tools", "tools": ["echo"]}]
    publish(api, stack.admin_token, mcp_relay("legacy", declared, LEGACY))
    caller = agents.connection("caller")["token"]
    run = start(api, caller, "legacy", {"function": "run", "input": {}, "idempotency_key": "k"})
    done = wait_run(api, caller, "legacy", run["run_id"])
    assert done["result"] == {"outside": "plain", "inside": "in a step"}, done
    assert [(c["step"], c["outcome"]) for c in done["mcp_calls"]] == [("fetch", "ok"), (None, "ok")]


def test_a_removed_server_fails_the_call_clearly(
    stack: Any, api: Any, agents: Any, relay_api: str, mcp_server: McpTestServer
) -> None:
    credential, _ = _live_run(stack, api, agents, mcp_server, [{"server": "tools", "tools": ["*"]}])
    assert call(api, credential, "echo", {"text": "x"}).status == 200
    assert api("DELETE", f"{SERVERS}/tools", stack.admin_token).status == 200
    before = len(mcp_server.requests)
    gone = call(api, credential, "echo", {"text": "x"})
    assert (gone.status, gone.body["error"]["code"]) == (404, "unavailable")
    assert "No MCP server named tools" in gone.body["error"]["message"]
    assert "removed" in gone.body["error"]["message"]
    assert mcp_server.requests[before:] == []
    # A tool the server no longer offers fails clearly too.
    attach(api, stack.admin_token, mcp_server)
    missing = call(api, credential, "vanished", {})
    assert (missing.status, missing.body["error"]["code"]) == (404, "unavailable")
    assert "offers no tool vanished" in missing.body["error"]["message"]


def test_another_accounts_server_is_refused_like_an_unknown_name(
    stack: Any, api: Any, agents: Any, relay_api: str, mcp_server: McpTestServer
) -> None:
    other = stack.services.identity.bootstrap("other-account").token
    attach(api, other, mcp_server, name="theirs")  # attached in the other account only
    declared = [{"server": "theirs", "tools": ["echo"]}, {"server": "nobody", "tools": ["echo"]}]
    credential, _ = _live_run(stack, api, agents, mcp_server, declared)
    before = len(mcp_server.requests)
    theirs = call(api, credential, "echo", {"text": "x"}, server="theirs")
    unknown = call(api, credential, "echo", {"text": "x"}, server="nobody")
    assert theirs.status == unknown.status == 404
    assert json.dumps(theirs.body).replace("theirs", "NAME") == json.dumps(unknown.body).replace(
        "nobody", "NAME"
    )
    assert mcp_server.requests[before:] == []


def test_a_non_admitted_call_reaches_no_server_even_with_the_scope_elsewhere(
    stack: Any, api: Any, agents: Any, relay_api: str, mcp_server: McpTestServer
) -> None:
    credential, _ = _live_run(
        stack, api, agents, mcp_server, [{"server": "tools", "tools": ["echo"]}]
    )
    before = len(mcp_server.requests)
    for tool in ("fails", "slow", "ECHO"):
        refused = call(api, credential, tool, {})
        assert (refused.status, refused.body["error"]["code"]) == (403, "not_admitted")
    assert mcp_server.requests[before:] == []  # not even the tool list was fetched
    # Another connection's token is not a relay's: without mcp-servers:call it is refused.
    plain = agents.connection("plain")["token"]
    assert call(api, plain, "echo", {"text": "x"}).status == 403


def test_a_run_that_ends_cancels_its_in_flight_call(
    stack: Any, api: Any, agents: Any, relay_api: str, mcp_server: McpTestServer, monkeypatch: Any
) -> None:
    # The call re-reads its run this often; the default is short already, a test's shorter.
    monkeypatch.setattr(limits, "RELAY_MCP_RUN_WATCH_SECONDS", 0.05)
    credential, run_id = _live_run(
        stack, api, agents, mcp_server, [{"server": "tools", "tools": ["slow"]}]
    )
    answers: list[Any] = []
    caller = threading.Thread(
        target=lambda: answers.append(call(api, credential, "slow", {"seconds": 20}, timeout=25))
    )
    caller.start()
    assert mcp_server.slow_started.wait(10)  # in flight at the server
    store = stack.services.relays.host._runs
    run, version = store.get(run_id)
    store.replace(replace(run, status="failed", credential_hash="", error="timed out"), version)
    caller.join(15)
    assert not caller.is_alive(), "the call outlived its run"
    ended = answers[0]
    assert (ended.status, ended.body["error"]["code"]) == (502, "mcp_server_failed")
    assert "was cancelled" in ended.body["error"]["message"]
    shown = api("GET", f"/api/relays/caller/runs/{run_id}", stack.admin_token).body
    assert [c["outcome"] for c in shown["mcp_calls"]] == ["cancelled"]
    # An ended run's credential calls nothing more.
    assert call(api, credential, "slow", {"seconds": 1}).status == 401


def test_a_call_waits_at_most_the_runs_remaining_time(
    stack: Any, api: Any, agents: Any, relay_api: str, mcp_server: McpTestServer
) -> None:
    credential, run_id = _live_run(
        stack, api, agents, mcp_server, [{"server": "tools", "tools": ["slow"]}]
    )
    store = stack.services.relays.host._runs
    run, version = store.get(run_id)
    now_ms = int(stack.clock.now() * 1000)
    limit_ms = limits.RELAY_RUN_TIMEOUT_SECONDS * 1000
    # 2.5 s left in the attempt: the call gets 1.5 s (a moment is kept to answer).
    store.replace(replace(run, attempt_started_at=now_ms - limit_ms + 2500), version)
    slow = call(api, credential, "slow", {"seconds": 20}, timeout=25)
    assert (slow.status, slow.body["error"]["code"]) == (502, "mcp_server_failed")
    assert "did not answer within 1.5 s" in slow.body["error"]["message"]
    # No time left at all: refused before anything is sent.
    run, version = store.get(run_id)
    store.replace(replace(run, attempt_started_at=now_ms - limit_ms + 1000), version)
    before = len(mcp_server.requests)
    late = call(api, credential, "slow", {"seconds": 1})
    assert late.status == 502 and "No time is left" in late.body["error"]["message"]
    assert [r for r in mcp_server.requests[before:] if r.rpc_method == "tools/call"] == []


def test_arguments_and_results_inline_up_to_the_bound_and_in_s3_past_it(
    stack: Any, api: Any, agents: Any, relay_api: str, mcp_server: McpTestServer
) -> None:
    credential, run_id = _live_run(
        stack, api, agents, mcp_server, [{"server": "tools", "tools": ["echo"]}]
    )

    def kept_bytes(text: str) -> int:  # the documented rule: both as compact JSON
        arguments = json.dumps({"text": text}, separators=(",", ":"))
        result = json.dumps(
            {
                "is_error": False,
                "content": [{"type": "text", "text": text}],
                "structured_content": {"result": text},
            },
            separators=(",", ":"),
        )
        return len(arguments.encode()) + len(result.encode())

    # Three copies of the text are kept (argument, content, structured content): the
    # longest text that fits is within 2 bytes of the bound, one more character passes it.
    text = "y" * ((limits.RELAY_MCP_CALL_INLINE_MAX_BYTES - kept_bytes("")) // 3)
    assert kept_bytes(text) >= limits.RELAY_MCP_CALL_INLINE_MAX_BYTES - 2
    assert kept_bytes(text) <= limits.RELAY_MCP_CALL_INLINE_MAX_BYTES
    assert call(api, credential, "echo", {"text": text}).status == 200
    past = text + "y"
    assert kept_bytes(past) > limits.RELAY_MCP_CALL_INLINE_MAX_BYTES
    assert call(api, credential, "echo", {"text": past}).status == 200
    shown = api("GET", f"/api/relays/caller/runs/{run_id}", stack.admin_token).body
    inline, stored = shown["mcp_calls"][-2:]
    assert inline["arguments"] == {"text": text} and inline["content_file"] is None
    assert stored["arguments"] is None and stored["result"] is None
    s3 = stack.services.relays.runs._calls._s3()
    body = s3.get_object(Bucket=stack.settings.outputs_bucket, Key=stored["content_file"])
    kept = json.loads(body["Body"].read())
    assert kept["arguments"] == {"text": past}
    assert kept["result"]["structured_content"] == {"result": past}


def test_the_run_view_shows_its_first_calls_and_says_when_there_are_more(
    stack: Any, api: Any, agents: Any, relay_api: str, mcp_server: McpTestServer, monkeypatch: Any
) -> None:
    monkeypatch.setattr(limits, "RELAY_MCP_CALLS_SHOWN", 2)
    credential, run_id = _live_run(
        stack, api, agents, mcp_server, [{"server": "tools", "tools": ["echo"]}]
    )

    def shown() -> dict[str, Any]:
        return dict(api("GET", f"/api/relays/caller/runs/{run_id}", stack.admin_token).body)

    for n in (1, 2):
        assert call(api, credential, "echo", {"text": str(n)}).status == 200
    at_bound = shown()
    assert [c["arguments"]["text"] for c in at_bound["mcp_calls"]] == ["1", "2"]
    assert at_bound["mcp_calls_more"] is False
    assert call(api, credential, "echo", {"text": "3"}, step="third").status == 200
    past = shown()
    assert [c["arguments"]["text"] for c in past["mcp_calls"]] == ["1", "2"]
    assert past["mcp_calls_more"] is True
    # The step a call names must be a step's name.
    bad = call(api, credential, "echo", {"text": "x"}, step="no spaces")
    assert (bad.status, bad.body["error"]["code"]) == (400, "invalid_request")


def _tables(stack: Any) -> list[str]:
    return [stack.settings.work_table, stack.settings.messages_table]


def _keys(stack: Any, table: str) -> set[tuple[str, str]]:
    items = stack.client.scan(TableName=table)["Items"]
    return {(i["pk"]["S"], i["sk"]["S"]) for i in items}


def _live_run(
    stack: Any, api: Any, agents: Any, server: McpTestServer, declared: list[dict[str, Any]]
) -> tuple[str, str]:
    """A run of a Relay declaring `declared`, running again with a fresh credential (as the
    host does at an attempt's start), for calls made as its code makes them."""
    attach_if_missing(api, stack.admin_token, server)
    publish(
        api,
        stack.admin_token,
        mcp_relay("caller", declared, "async def run(INPUT):\n    return 1\n"),
    )
    caller = agents.connection("runner")["token"]
    run = start(api, caller, "caller", {"function": "run", "input": {}, "idempotency_key": "k"})
    return live_credential(stack, run["run_id"]), run["run_id"]


def attach_if_missing(api: Any, admin: str, server: McpTestServer) -> None:
    if api("GET", f"{SERVERS}/tools", admin).status == 404:
        attach(api, admin, server)
