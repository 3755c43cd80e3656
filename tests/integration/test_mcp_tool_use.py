"""Issue 28 items 2–5 from a hosted agent: a scripted Crew's function call and a scripted
workflow step call an attached server's tools (the real MCP test server), admitted by the
Crew's or the adapter profile's `mcp_tools`, as the run's caller or starter, checked at
call time. A tool no declaration admits is refused before any request reaches the server
(its log is empty); a removed server fails the call with a clear message; an `isError`
result is the tool's error the agent sees, not a platform failure; each call is recorded
on the call or the step (never the secret); no function record or inbox comes of it."""

from __future__ import annotations

import copy
import json
import time
from typing import Any

import pytest

from tests.integration.crew_support import wait_for
from tests.integration.workflow_support import define, start, step_of, wait_run
from tests.support.mcp_test_server import McpTestServer

LOOKUP_INPUT = {"type": "object", "properties": {"tool": {"type": "string"}}}


def _crew(tools: list[str]) -> dict[str, Any]:
    """A Crew whose `lookup` calls the tool its args name and answers what came of it."""
    return {
        "name": "helper",
        "instructions": "Look things up.",
        "adapter": {
            "type": "scripted",
            "rules": [
                {
                    "function": "lookup",
                    "mcp": {
                        "server": "tools",
                        "tool": "{args.tool}",
                        "arguments": {"text": "hello from the crew"},
                    },
                    "result": {"outcome": "{mcp.outcome}", "text": "{mcp.text}"},
                }
            ],
        },
        "functions": [{"name": "lookup", "input_schema": LOOKUP_INPUT}],
        "mcp_tools": [{"server": "tools", "tools": tools}],
    }


def _attach(api: Any, admin: str, server: McpTestServer) -> None:
    body = {
        "name": "tools",
        "url": server.url,
        "headers": {"Authorization": f"Bearer {server.token}"},
    }
    added = api("POST", "/v1/mcp-servers", admin, body)
    assert added.status == 201, added.body


def _lookup(api: Any, token: str, tool: str) -> dict[str, Any]:
    accepted = api(
        "POST",
        "/v1/calls",
        token,
        {"target": "crew:helper", "function": "lookup", "args": {"tool": tool}},
    )
    assert accepted.status == 202, accepted.body
    return wait_for(api, token, accepted.body["call_id"], {"succeeded", "failed", "interrupted"})


def _call_record(stack: Any, call_id: str) -> Any:
    from agentworks.crews.call_store import CallStore

    found = CallStore(stack.client, stack.settings.work_table).get(call_id)
    assert found is not None
    return found[0]


def _everything_stored(stack: Any) -> str:
    """Every item of every table and every S3 object, as text (for the secret's grep)."""
    import boto3

    dynamodb = boto3.client("dynamodb", region_name="us-east-1")
    s3 = boto3.client("s3", region_name="us-east-1")
    parts = []
    for table in dynamodb.list_tables()["TableNames"]:
        parts.append(json.dumps(dynamodb.scan(TableName=table)["Items"]))
    for bucket in s3.list_buckets()["Buckets"]:
        for item in s3.list_objects_v2(Bucket=bucket["Name"]).get("Contents", []):
            parts.append(
                s3.get_object(Bucket=bucket["Name"], Key=item["Key"])["Body"]
                .read()
                .decode("utf-8", "replace")
            )
    return "\n".join(parts)


def test_an_admitted_call_from_a_crew_succeeds_and_is_recorded(
    api, stack, agents, mcp_server, caplog, capfd
) -> None:
    caplog.set_level("INFO")
    admin = stack.admin_token
    _attach(api, admin, mcp_server)
    assert api("POST", "/v1/crews", admin, _crew(["echo", "fails"])).status == 201
    caller = agents.connection("caller")["token"]

    done = _lookup(api, caller, "echo")
    assert done["state"] == "succeeded", done
    assert done["result"] == {"outcome": "ok", "text": "hello from the crew"}
    seen = mcp_server.wait_for_call("echo")
    assert seen.authorized

    record = _call_record(stack, done["call_id"])
    [call] = record.mcp_calls
    assert call["server"] == "tools" and call["tool"] == "echo" and call["outcome"] == "ok"
    assert call["arguments"] == {"text": "hello from the crew"}
    assert call["result"] == "hello from the crew"
    assert call["result_bytes"] > 0 and call["duration_ms"] >= 0
    # Shown on the call's status (functions status), without its content.
    assert done["mcp_calls"] == [
        {
            "server": "tools",
            "tool": "echo",
            "outcome": "ok",
            "duration_ms": call["duration_ms"],
            "result_bytes": call["result_bytes"],
        }
    ]
    # Counted in usage with the call's end.
    usage = api("GET", "/v1/usage", admin).body
    assert usage["total"]["mcp_tool_calls"] == 1 and usage["total"]["function_calls"] == 1
    # No function record or inbox comes of a tool call: the call is the only one.
    assert [c["call_id"] for c in api("GET", "/v1/calls", admin).body["calls"]] == [done["call_id"]]
    assert mcp_server.token not in _everything_stored(stack)
    captured = capfd.readouterr()
    records = [json.dumps(r.__dict__, default=str) for r in caplog.records]
    logged = captured.out + captured.err + "\n".join(records)
    assert "mcp tool call" in logged  # the call was logged…
    assert mcp_server.token not in logged  # …without the secret
    assert mcp_server.token not in json.dumps(done)


def test_is_error_is_the_tools_error_the_agent_sees(api, stack, agents, mcp_server) -> None:
    admin = stack.admin_token
    _attach(api, admin, mcp_server)
    assert api("POST", "/v1/crews", admin, _crew(["echo", "fails"])).status == 201
    done = _lookup(api, admin, "fails")
    assert done["state"] == "succeeded", done  # not a platform failure
    assert done["result"]["outcome"] == "tool_error"
    assert _call_record(stack, done["call_id"]).mcp_calls[0]["outcome"] == "tool_error"


def test_a_non_admitted_tool_is_refused_before_any_request_reaches_the_server(
    api, stack, agents, mcp_server
) -> None:
    admin = stack.admin_token
    _attach(api, admin, mcp_server)
    assert api("POST", "/v1/crews", admin, _crew(["echo"])).status == 201
    done = _lookup(api, admin, "big")
    assert done["state"] == "succeeded", done
    assert done["result"]["outcome"] == "refused"
    assert "mcp_tools" in done["result"]["text"]
    assert mcp_server.requests == []  # nothing reached the server, not even a listing
    assert _call_record(stack, done["call_id"]).mcp_calls[0]["outcome"] == "refused"


def test_a_removed_server_fails_the_call_clearly(api, stack, agents, mcp_server) -> None:
    admin = stack.admin_token
    _attach(api, admin, mcp_server)
    assert api("POST", "/v1/crews", admin, _crew(["echo"])).status == 201
    assert api("DELETE", "/v1/mcp-servers/tools", admin).status == 200
    done = _lookup(api, admin, "echo")
    assert done["result"]["outcome"] == "refused"
    assert "No MCP server tools is attached" in done["result"]["text"]
    assert mcp_server.requests == []


def test_the_callers_scopes_count_at_call_time(api, stack, agents, mcp_server) -> None:
    """A connection revoked since the run started, or one without the run's scope, calls
    nothing: refused before any request reaches the server."""
    from agentworks.crews.mcp_tool_use import TurnMcpTools
    from agentworks.mcp_servers.declarations import parse_declaration

    _attach(api, stack.admin_token, mcp_server)
    reader = agents.connection("reader", scopes=["functions:read"])
    declared = parse_declaration([{"server": "tools", "tools": ["echo"]}])
    for principal, why in (
        (lambda: None, "revoked or expired"),
        (lambda: stack.principal(reader["token"]), "lacks the 'functions:call' scope"),
    ):
        tools = TurnMcpTools(
            stack.services.mcp_servers, declared, principal, "functions:call", lambda n, d: n
        )
        assert tools.tools() == []
        outcome = tools.call("tools", "echo", {"text": "x"})
        assert outcome.outcome == "refused" and why in outcome.text, outcome
        assert tools.calls[0]["outcome"] == "refused"
    assert mcp_server.requests == []


def _workflow(tool: str) -> dict[str, Any]:
    return {
        "workflowId": "research",
        "stages": [{"steps": [{"label": "look", "adapter": "researcher", "prompt": tool}]}],
    }


PROFILE: dict[str, Any] = {
    "name": "researcher",
    "type": "scripted",
    "rules": [
        {
            "when": "^(\\w+)$",
            "mcp": {"server": "tools", "tool": "{match.1}", "arguments": {"text": "from a step"}},
            "reply": "{mcp.outcome}: {mcp.text}",
        }
    ],
    "mcp_tools": [{"server": "tools", "tools": ["echo"]}],
}


def test_an_admitted_call_from_a_workflow_step_succeeds_and_is_recorded(
    api, stack, mcp_server
) -> None:
    admin = stack.admin_token
    _attach(api, admin, mcp_server)
    define(api, admin, copy.deepcopy(PROFILE))
    run = wait_run(api, admin, start(api, admin, _workflow("echo")))
    step = step_of(run, "look")
    assert run["status"] == "succeeded", run
    assert step["output"] == "ok: from a step"
    assert mcp_server.wait_for_call("echo").authorized
    found = _step_record(stack, run["runId"])
    [call] = found.mcp_calls
    assert (call["server"], call["tool"], call["outcome"]) == ("tools", "echo", "ok")
    assert call["arguments"] == {"text": "from a step"} and call["result"] == "from a step"
    assert step["mcpCalls"] == [
        {
            "server": "tools",
            "tool": "echo",
            "outcome": "ok",
            "durationMs": call["duration_ms"],
            "resultBytes": call["result_bytes"],
        }
    ]
    assert api("GET", "/v1/usage", admin).body["total"]["mcp_tool_calls"] == 1
    assert mcp_server.token not in _everything_stored(stack)


def test_a_workflow_step_cannot_call_a_tool_its_profile_does_not_admit(
    api, stack, mcp_server
) -> None:
    admin = stack.admin_token
    _attach(api, admin, mcp_server)
    define(api, admin, copy.deepcopy(PROFILE))
    run = wait_run(api, admin, start(api, admin, _workflow("big")))
    assert step_of(run, "look")["output"].startswith("refused: ")
    assert mcp_server.requests == []


def test_a_workflow_steps_large_call_is_kept_beside_its_session(api, stack, mcp_server) -> None:
    """A call whose arguments and result pass the record's inline bound is kept in S3,
    beside the step's session, and the step's record names it."""
    import boto3

    admin = stack.admin_token
    _attach(api, admin, mcp_server)
    define(api, admin, copy.deepcopy(PROFILE))
    text = "x" * 2048  # with its result, past MCP_CALL_RECORD_INLINE_MAX_BYTES
    bulky = copy.deepcopy(PROFILE)
    bulky["name"] = "bulky"
    bulky["rules"][0]["mcp"]["arguments"] = {"text": text}
    define(api, admin, bulky)
    workflow = _workflow("echo")
    workflow["stages"][0]["steps"][0]["adapter"] = "bulky"
    run = wait_run(api, admin, start(api, admin, workflow))
    assert run["status"] == "succeeded", run
    [call] = _step_record(stack, run["runId"]).mcp_calls
    assert call["content_file"] == f"sessions/{run['runId']}/000-00-00/mcp-calls/001.json"
    assert "arguments" not in call and "result" not in call
    s3 = boto3.client("s3", region_name="us-east-1")
    kept = s3.get_object(Bucket=stack.settings.outputs_bucket, Key=call["content_file"])
    assert json.loads(kept["Body"].read()) == {"arguments": {"text": text}, "result": text}


def test_a_workflow_steps_calls_are_recorded_when_its_turn_then_fails(
    api, stack, mcp_server
) -> None:
    admin = stack.admin_token
    _attach(api, admin, mcp_server)
    profile = {
        "name": "quitter",
        "type": "scripted",
        "entrypoint": "tests.support.workflow_agents:echoes_then_fails",
        "mcp_tools": [{"server": "tools", "tools": ["echo"]}],
    }
    define(api, admin, profile)
    workflow = _workflow("said before failing")
    workflow["stages"][0]["steps"][0]["adapter"] = "quitter"
    run = wait_run(api, admin, start(api, admin, workflow))
    step = step_of(run, "look")
    assert (step["status"], step["error"]) == ("failed", "gave up after the tool answered")
    [call] = _step_record(stack, run["runId"]).mcp_calls
    assert (call["tool"], call["outcome"], call["result"]) == ("echo", "ok", "said before failing")
    assert api("GET", "/v1/usage", admin).body["total"]["mcp_tool_calls"] == 1


def _step_record(stack: Any, run_id: str) -> Any:
    from agentworks.workflows.records import Position
    from agentworks.workflows.run_store import RunStore

    runs = RunStore(stack.client, stack.settings.work_table, lambda: None, "")
    found = runs.get_step(run_id, Position(0, 0, 0))
    assert found is not None
    return found[0]


def test_the_bedrock_tool_loop_calls_the_mcp_tool_and_returns_its_result(
    api, stack, agents, mcp_server
) -> None:
    """Converse (botocore's Stubber) offers the admitted tools with their servers' input
    schemas under Bedrock-safe names; a toolUse is called on the real server, its result
    goes back as the toolResult (status error for isError) and the final answer ends it."""
    import boto3
    from botocore.stub import ANY, Stubber

    from agentworks.crews.adapters.base import TurnRequest
    from agentworks.crews.adapters.bedrock import BedrockAdapter
    from agentworks.crews.mcp_tool_use import TurnMcpTools
    from agentworks.mcp_servers.declarations import parse_declaration

    _attach(api, stack.admin_token, mcp_server)
    caller = stack.principal(agents.connection("caller")["token"])
    tools = TurnMcpTools(
        stack.services.mcp_servers,
        parse_declaration([{"server": "tools", "tools": ["echo", "fails"]}]),
        lambda: caller,
        "functions:call",
        lambda name, data: name,
    )
    client = boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    offered: list[dict[str, Any]] = []

    def converse(content: list[dict[str, Any]], stop: str) -> dict[str, Any]:
        return {
            "output": {"message": {"role": "assistant", "content": content}},
            "stopReason": stop,
            "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
            "metrics": {"latencyMs": 1},
        }

    def use(tool_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
        return {"toolUse": {"toolUseId": tool_id, "name": name, "input": args}}

    with Stubber(client) as stubber:
        stubber.add_response(
            "converse",
            converse(
                [use("t1", "mcp_tools_echo", {"text": "hi"}), use("t2", "mcp_tools_fails", {})],
                "tool_use",
            ),
            {"modelId": ANY, "system": ANY, "messages": ANY, "toolConfig": ANY},
        )
        stubber.add_response(
            "converse",
            converse([{"text": "The echo said hi."}], "end_turn"),
            {"modelId": ANY, "system": ANY, "messages": ANY, "toolConfig": ANY},
        )

        def seen(params: dict[str, Any], **_: Any) -> None:
            offered.append(copy.deepcopy(params))  # the adapter goes on using its list

        client.meta.events.register("provide-client-params.bedrock-runtime.Converse", seen)
        adapter = BedrockAdapter({"type": "bedrock", "model_id": "m"}, lambda: client)
        result = adapter.run_turn(
            TurnRequest("helper", "", {}, "message", "Say hi through echo.", mcp_tools=tools)
        )
        stubber.assert_no_pending_responses()

    assert result.final_text == "The echo said hi."
    specs = {t["toolSpec"]["name"]: t["toolSpec"] for t in offered[0]["toolConfig"]["tools"]}
    assert {"mcp_tools_echo", "mcp_tools_fails", "human_feedback"} <= set(specs)
    assert "mcp_tools_big" not in specs and "mcp_tools_slow" not in specs  # not admitted
    shown = api("GET", "/v1/mcp-servers/tools", stack.admin_token).body["tools"]
    echo_schema = next(t for t in shown if t["name"] == "echo")["input_schema"]
    assert specs["mcp_tools_echo"]["inputSchema"]["json"] == echo_schema  # as given
    returned = offered[1]["messages"][-1]["content"]
    assert returned[0]["toolResult"] == {
        "toolUseId": "t1",
        "content": [{"text": "hi"}],
    }
    assert returned[1]["toolResult"]["status"] == "error"
    assert [c["outcome"] for c in tools.calls] == ["ok", "tool_error"]
    assert [s.tool for s in mcp_server.calls()] == ["echo", "fails"]


def _token_tools(stack: Any, principal: Any, tools: list[str]) -> Any:
    from agentworks.crews.mcp_tool_use import TurnMcpTools
    from agentworks.mcp_servers.declarations import parse_declaration

    return TurnMcpTools(
        stack.services.mcp_servers,
        parse_declaration([{"server": "tools", "tools": tools}]),
        lambda: principal,
        "functions:call",
        lambda name, data: name,
        time_left=lambda: 30.0,
        tokens=stack.services.mcp_token_calls,
    )


def test_a_lambda_agents_call_token_calls_its_turns_tools_only(
    api, stack, agents, mcp_server
) -> None:
    """The lambda adapter's event carries the admitted tools and a token for the call route:
    it calls those tools as the run's caller until it expires; another tool, another
    account's server, an expired token, a revoked caller or another route are refused."""
    from agentworks.crews.adapters.base import TurnRequest
    from agentworks.crews.adapters.lambda_adapter import request_payload

    _attach(api, stack.admin_token, mcp_server)
    created = agents.connection("caller")
    caller = stack.principal(created["token"])
    tools = _token_tools(stack, caller, ["echo"])
    payload = request_payload(TurnRequest("helper", "", {}, "message", "hi", mcp_tools=tools))
    [offered] = payload["mcp_tools"]
    assert (offered["server"], offered["name"]) == ("tools", "echo")
    assert offered["call_path"] == "/v1/mcp-servers/tools/tools/echo:call"
    token = payload["mcp_call_token"]
    assert mcp_server.token not in json.dumps(payload)

    echoed = api("POST", offered["call_path"], token, {"text": "from lambda"})
    assert echoed.status == 200, echoed.body
    assert echoed.body["content"] == [{"type": "text", "text": "from lambda"}]
    other_tool = api("POST", "/v1/mcp-servers/tools/tools/fails:call", token, {})
    assert (other_tool.status, other_tool.body["error"]["code"]) == (404, "unavailable")
    assert api("GET", "/v1/mcp-servers", token).status == 401  # no other route
    assert api("GET", "/v1/calls", token).status == 401
    assert [s.tool for s in mcp_server.calls()] == ["echo"]  # fails never reached it

    # Another account: its token names its own account, where no server is attached.
    other = stack.services.identity.bootstrap("other-account")
    elsewhere = _token_tools(stack, stack.principal(other.token), ["echo"])
    foreign = elsewhere.call_token(elsewhere.tools() or [_echo()])
    refused = api("POST", "/v1/mcp-servers/tools/tools/echo:call", foreign, {"text": "x"})
    assert (refused.status, refused.body["error"]["code"]) == (404, "unavailable")

    # Expired: the turn's remaining time (30 s here) is its life.
    stack.clock.advance(31)
    assert api("POST", offered["call_path"], token, {"text": "late"}).status == 401
    fresh = tools.call_token(tools.tools())
    assert api("POST", offered["call_path"], fresh, {"text": "again"}).status == 200
    # The caller revoked: every token of its runs stops at once.
    assert (
        api("DELETE", f"/v1/connections/{created['connection_id']}", stack.admin_token).status
        == 200
    )
    assert api("POST", offered["call_path"], fresh, {"text": "revoked"}).status == 401
    assert [s.tool for s in mcp_server.calls()] == ["echo", "echo"]


def _echo() -> Any:
    from agentworks.crews.adapters.tool_use import McpTool

    return McpTool("tools", "echo", "", {"type": "object"})


def test_a_call_token_lasts_the_turn_and_at_most_its_bound(stack, agents) -> None:
    from agentworks import limits
    from agentworks.errors import Unauthenticated

    caller = stack.principal(agents.connection("caller")["token"])
    tokens = stack.services.mcp_token_calls
    for asked, lasts in (
        (10.0, 10.0),
        (limits.MCP_CALL_TOKEN_MAX_SECONDS, limits.MCP_CALL_TOKEN_MAX_SECONDS),
        (limits.MCP_CALL_TOKEN_MAX_SECONDS + 100, limits.MCP_CALL_TOKEN_MAX_SECONDS),
    ):
        token, turn = tokens.mint(caller, "functions:call", [("tools", "echo")], asked)
        granted = tokens.authenticate(token)
        assert granted.scopes == frozenset() and granted.mcp_grant is not None
        assert (granted.mcp_grant.tools, granted.mcp_grant.turn) == ((("tools", "echo"),), turn)
        assert granted.credential == "mcp_call"
        stack.clock.advance(lasts - 1)
        tokens.authenticate(token)  # still good a second before
        stack.clock.advance(1)
        with pytest.raises(Unauthenticated):
            tokens.authenticate(token)
    forged = tokens.mint(caller, "functions:call", [("tools", "echo")], 60)[0][:-2] + "xx"
    with pytest.raises(Unauthenticated):
        tokens.authenticate(forged)
    lacking, _ = tokens.mint(caller, "admin", [("tools", "echo")], 60)  # a scope it lacks
    with pytest.raises(Unauthenticated):
        tokens.authenticate(lacking)


def test_cancelling_the_run_cancels_its_steps_in_flight_call(api, stack, mcp_server) -> None:
    """A step's call of a slow tool (60 s) ends when its run is cancelled: the run is read
    again every MCP_CANCEL_POLL_SECONDS while the call is out, and the cancelled call ends
    the turn (which counts it on the run) well before the tool would have answered."""
    from agentworks import limits
    from agentworks.workflows.run_store import RunStore

    admin = stack.admin_token
    _attach(api, admin, mcp_server)
    profile = copy.deepcopy(PROFILE)
    profile["rules"][0]["mcp"]["arguments"] = {"seconds": 60}
    profile["mcp_tools"] = [{"server": "tools", "tools": ["slow"]}]
    define(api, admin, profile)
    run_id = start(api, admin, _workflow("slow"))
    assert mcp_server.slow_started.wait(20)
    runs = RunStore(stack.client, stack.settings.work_table, lambda: None, "")
    assert runs.read_end(run_id).mcp_tool_calls == 0  # type: ignore[union-attr]
    assert api("POST", f"/v1/workflows/{run_id}/cancel", admin).status == 200
    # How soon is for `make bench`; here only that the cancel, not the tool's end, ended
    # it: the wait gives up well inside the tool's 60 s, and the call's record (below)
    # says it was cancelled.
    gives_up = time.monotonic() + 40 + limits.MCP_CANCEL_POLL_SECONDS
    while runs.read_end(run_id).mcp_tool_calls == 0:  # type: ignore[union-attr]
        assert time.monotonic() < gives_up, "the call was not cancelled"
        time.sleep(0.05)
    assert not mcp_server.release.is_set()  # it did not simply run out
    assert wait_run(api, admin, run_id)["status"] == "cancelled"
    # The step keeps `cancelled` and the call the cancel cut short is recorded on it.
    deadline = time.monotonic() + 30
    while not (found := _step_record(stack, run_id)).mcp_calls:
        assert time.monotonic() < deadline, "the cancelled step lost its call's record"
        time.sleep(0.05)
    assert found.status == "cancelled"
    [call] = found.mcp_calls
    assert (call["tool"], call["outcome"]) == ("slow", "failed")
    assert "cancelled" in call["result"]


def _lambda_crew(api: Any, stack: Any, tools: list[str], answer: Any) -> Any:
    """A Crew whose `lookup` is the user's agent function `answer(event)` (the lambda
    adapter), on crews built with the attached MCP servers and call tokens."""
    from dataclasses import replace

    import boto3

    from agentworks import runtime
    from agentworks.crews.adapters.registry import AdapterClients
    from tests.support.agent_functions import AgentFunctions

    functions = AgentFunctions(stack)
    crews = runtime.build_crews(
        stack.settings,
        stack.client,
        stack.clock,
        s3=boto3.client("s3", region_name="us-east-1"),
        stepfunctions=boto3.client("stepfunctions", region_name="us-east-1"),
        adapter_clients=AdapterClients(lambda_factory=lambda: functions.client, clock=stack.clock),
        starter_principal=stack.services.identity.live_principal,
        mcp_servers=stack.services.mcp_servers,
        mcp_token_calls=stack.services.mcp_token_calls,
    )
    runtime.install(replace(stack.services, crews=crews))
    account = stack.principal(stack.admin_token).account_id
    functions.create("agentworks-agent-lookup", answer, account_id=account)
    definition = _crew(tools)
    definition["adapter"] = {"type": "lambda", "function_name": "agentworks-agent-lookup"}
    assert api("POST", "/v1/crews", stack.admin_token, definition).status == 201
    return functions


def test_a_lambda_agents_token_calls_are_recorded_on_its_call_and_counted(
    api, stack, agents, mcp_server
) -> None:
    """Calls the user's function makes with its turn's token go onto the call's record in
    the same shape as the platform's own (large content kept in S3, never the secret),
    show on its status and are counted in usage with the call's end."""
    import boto3

    _attach(api, stack.admin_token, mcp_server)
    long_text = "x" * 3000  # past the record's inline bound

    def agent(event: dict[str, Any]) -> dict[str, Any]:
        paths = {t["name"]: t["call_path"] for t in event["mcp_tools"]}
        token = event["mcp_call_token"]
        echoed = api("POST", paths["echo"], token, {"text": "by token"})
        failed = api("POST", paths["fails"], token, {})
        api("POST", paths["echo"], token, {"text": long_text})
        said = echoed.body["content"][0]["text"]
        return {"final_text": "ok", "result": {"said": said, "failed": failed.body["is_error"]}}

    _lambda_crew(api, stack, ["echo", "fails"], agent)
    caller = agents.connection("caller")["token"]
    done = _lookup(api, caller, "echo")
    assert done["state"] == "succeeded", done
    assert done["result"] == {"said": "by token", "failed": True}

    record = _call_record(stack, done["call_id"])
    first, second, third = record.mcp_calls
    assert (first["tool"], first["outcome"], first["arguments"], first["result"]) == (
        "echo",
        "ok",
        {"text": "by token"},
        "by token",
    )
    assert (second["tool"], second["outcome"]) == ("fails", "tool_error")
    assert "arguments" not in third and third["content_file"].startswith("mcp-turns/")
    kept = boto3.client("s3", region_name="us-east-1").get_object(
        Bucket=stack.settings.outputs_bucket, Key=third["content_file"]
    )
    assert json.loads(kept["Body"].read()) == {
        "arguments": {"text": long_text},
        "result": long_text,
    }
    assert [(c["tool"], c["outcome"]) for c in done["mcp_calls"]] == [
        ("echo", "ok"),
        ("fails", "tool_error"),
        ("echo", "ok"),
    ]
    assert api("GET", "/v1/usage", stack.admin_token).body["total"]["mcp_tool_calls"] == 3
    assert mcp_server.token not in _everything_stored(stack)


def test_a_turns_token_makes_at_most_its_bound_of_calls(api, stack, agents, mcp_server) -> None:
    """MCP_CALLS_PER_TURN_MAX holds for calls by token as for the platform's own: the
    bound's call is made, the next is refused (409) before it reaches the server, and the
    turn's record holds exactly the bound."""
    from agentworks import limits

    _attach(api, stack.admin_token, mcp_server)
    caller = stack.principal(agents.connection("caller")["token"])
    tools = _token_tools(stack, caller, ["echo"])
    token = tools.call_token(tools.tools())
    path = "/v1/mcp-servers/tools/tools/echo:call"
    for n in range(limits.MCP_CALLS_PER_TURN_MAX):
        assert api("POST", path, token, {"text": f"call {n}"}).status == 200
    refused = api("POST", path, token, {"text": "one too many"})
    assert (refused.status, refused.body["error"]["code"]) == (409, "limit_reached")
    assert len(mcp_server.calls("echo")) == limits.MCP_CALLS_PER_TURN_MAX
    taken = tools.take_calls()
    assert [c["arguments"]["text"] for c in taken] == [
        f"call {n}" for n in range(limits.MCP_CALLS_PER_TURN_MAX)
    ]
    assert tools.take_calls() == taken  # read once: taking again adds nothing


def test_a_crews_message_run_calls_its_admitted_tools_for_the_sender(
    api, stack, agents, mcp_server
) -> None:
    """A message to a Crew is answered by a run offered the Crew's admitted tools, called
    as the message's sender (who holds `messages:send`): the reply carries the tool's
    result, the run's record the call, and usage counts it with the run's end."""
    from tests.integration.test_crew_messages import wait_for_messages

    admin = stack.admin_token
    _attach(api, admin, mcp_server)
    definition = _crew(["echo"])
    definition["messaging"] = "on"
    definition["adapter"]["rules"].append(
        {
            "when": "look it up",
            "mcp": {"server": "tools", "tool": "echo", "arguments": {"text": "from a message"}},
            "reply": "the tool said: {mcp.text} ({mcp.outcome})",
        }
    )
    assert api("POST", "/v1/crews", admin, definition).status == 201
    sender = agents.connection("sender")["token"]
    message = {"target": "crew:helper", "message": "look it up"}
    sent = api("POST", "/v1/messages", sender, message)
    assert sent.status in (200, 201, 202), sent.body
    [reply] = wait_for_messages(api, sender, sent.body["inbox_id"])
    assert reply["body"] == "the tool said: from a message (ok)"
    assert [s.tool for s in mcp_server.calls()] == ["echo"]
    deadline = time.monotonic() + 30
    while api("GET", "/v1/usage", admin).body["total"]["mcp_tool_calls"] != 1:
        assert time.monotonic() < deadline, "the run's end never counted its tool call"
        time.sleep(0.05)


def test_cancelling_the_run_ends_its_lambda_agents_token_call(api, stack, mcp_server) -> None:
    """A workflow step's lambda agent calls the slow tool by token; cancelling the run ends
    that call: the API re-reads the run the token was minted for while the call is out,
    ending the call, and the agent gets a 502 that says why."""
    import threading

    import boto3

    from agentworks import runtime
    from agentworks.crews.adapters.registry import AdapterClients
    from agentworks.signing import Signer
    from tests.support.agent_functions import AgentFunctions

    functions = AgentFunctions(stack)
    runtime.install(
        runtime.build_services(
            stack.settings,
            stack.client,
            Signer(b"test-signing-key-0123456789"),
            stack.clock,
            s3=boto3.client("s3", region_name="us-east-1"),
            stepfunctions=boto3.client("stepfunctions", region_name="us-east-1"),
            scheduler=boto3.client("scheduler", region_name="us-east-1"),
            adapter_clients=AdapterClients(
                lambda_factory=lambda: functions.client, clock=stack.clock
            ),
        )
    )
    admin = stack.admin_token
    _attach(api, admin, mcp_server)
    answered: list[Any] = []
    agent_done = threading.Event()

    def agent(event: dict[str, Any]) -> dict[str, Any]:
        [slow] = event["mcp_tools"]
        answered.append(api("POST", slow["call_path"], event["mcp_call_token"], {"seconds": 60}))
        agent_done.set()
        return {"final_text": "done"}

    account = stack.principal(admin).account_id
    functions.create("agentworks-agent-slow", agent, account_id=account)
    profile = {
        "name": "waiter",
        "type": "lambda",
        "function_name": "agentworks-agent-slow",
        "mcp_tools": [{"server": "tools", "tools": ["slow"]}],
    }
    assert api("POST", "/v1/adapters", admin, profile).status == 201
    flow = {
        "workflowId": "wait",
        "stages": [{"steps": [{"label": "w", "adapter": "waiter", "prompt": "Go"}]}],
    }
    run_id = start(api, admin, flow)
    assert mcp_server.slow_started.wait(20)
    assert api("POST", f"/v1/workflows/{run_id}/cancel", admin).status == 200
    # The tool would answer after 60 s; the agent hears of the cancel well before.
    assert agent_done.wait(30), "the token's call outlived its run"
    [reply] = answered
    assert reply.status == 502, reply.body
    assert "was in flight; the call was cancelled" in reply.body["error"]["message"]
