"""§8: the bedrock and lambda adapters run a real call through Step Functions and the step
runner, with botocore's Stubber standing in for Bedrock and moto's Lambda (its invocations
answered in-process) for the user's function (no network). Issue 23: a function serves
only the account its `agentworks:account` tag names."""

from __future__ import annotations

import json
from dataclasses import replace

import boto3
from botocore.stub import ANY, Stubber

from agentworks import limits, runtime
from agentworks.crews.adapters.registry import AdapterClients
from tests.integration.crew_support import wait_for

TERMINAL = {"succeeded", "failed", "interrupted"}
SUMMARY = {"type": "object", "properties": {"summary": {"type": "string"}}, "required": ["summary"]}


def _install_adapter_clients(stack, **factories):
    crews = runtime.build_crews(
        stack.settings,
        stack.client,
        stack.clock,
        s3=boto3.client("s3", region_name="us-east-1"),
        stepfunctions=boto3.client("stepfunctions", region_name="us-east-1"),
        adapter_clients=AdapterClients(**factories),
    )
    runtime.install(replace(stack.services, crews=crews))


def _crew(api, stack, adapter):
    definition = {
        "name": "analyst",
        "instructions": "You summarize contracts.",
        "adapter": adapter,
        "functions": [
            {
                "name": "summarize",
                "description": "Summarize a text",
                "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}},
                "output_schema": SUMMARY,
            }
        ],
    }
    assert api("POST", "/v1/crews", stack.admin_token, definition).status == 201


def test_s8_bedrock_adapter_tool_use_writes_the_result(api, stack, agents):
    client = boto3.client("bedrock-runtime", region_name="us-east-1")
    stubber = Stubber(client)
    usage = {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15}
    stubber.add_response(
        "converse",
        {
            "output": {
                "message": {
                    "role": "assistant",
                    "content": [
                        {
                            "toolUse": {
                                "toolUseId": "t1",
                                "name": "write_result",
                                "input": {"result": {"summary": "Monthly rent."}},
                            }
                        }
                    ],
                }
            },
            "stopReason": "tool_use",
            "usage": usage,
            "metrics": {"latencyMs": 1},
        },
        {"modelId": "test-model", "messages": ANY, "system": ANY, "toolConfig": ANY},
    )
    stubber.add_response(
        "converse",
        {
            "output": {"message": {"role": "assistant", "content": [{"text": "Done."}]}},
            "stopReason": "end_turn",
            "usage": usage,
            "metrics": {"latencyMs": 1},
        },
        {"modelId": "test-model", "messages": ANY, "system": ANY, "toolConfig": ANY},
    )
    stubber.activate()
    _install_adapter_clients(stack, bedrock_runtime_factory=lambda: client)
    _crew(api, stack, {"type": "bedrock", "model_id": "test-model"})
    caller = agents.connection("caller")["token"]
    call_id = api(
        "POST",
        "/v1/calls",
        caller,
        {"target": "crew:analyst", "function": "summarize", "args": {"text": "rent"}},
    ).body["call_id"]
    done = wait_for(api, caller, call_id, TERMINAL)
    assert done["state"] == "succeeded", done
    assert done["result"] == {"summary": "Monthly rent."} and done["final_text"] == "Done."
    stubber.assert_no_pending_responses()


def test_s8_lambda_adapter_invokes_the_users_function(api, stack, agents):
    functions = _bound_functions(stack)
    account = stack.principal(stack.admin_token).account_id
    functions.create(
        "agentworks-agent-summarizer",
        lambda event: {"final_text": "ok", "result": {"summary": "From Lambda."}},
        account_id=account,
    )
    _crew(api, stack, {"type": "lambda", "function_name": "agentworks-agent-summarizer"})
    caller = agents.connection("caller")["token"]
    call_id = api(
        "POST",
        "/v1/calls",
        caller,
        {"target": "crew:analyst", "function": "summarize", "args": {"text": "rent"}},
    ).body["call_id"]
    done = wait_for(api, caller, call_id, TERMINAL)
    assert done["state"] == "succeeded", done
    assert done["result"] == {"summary": "From Lambda."}
    [event] = functions.calls_of("agentworks-agent-summarizer")
    assert event["function"] == "summarize" and event["args"] == {"text": "rent"}


# ---- Issue 23: a lambda adapter's function serves the account its tag names ----


def _turn_answer(event: dict) -> dict:
    return {"final_text": "ok", "result": {"summary": f"for {event['args']['text']}"}}


def _two_accounts(stack):
    """Account A (the stack's admin) and account B on the same deployment."""
    b_admin = stack.services.identity.bootstrap("tenant-b").token
    return (
        (stack.admin_token, stack.principal(stack.admin_token).account_id),
        (b_admin, stack.principal(b_admin).account_id),
    )


def _adapter_crew(api, token, name, function_name):
    definition = {
        "name": name,
        "instructions": "You summarize contracts.",
        "adapter": {"type": "lambda", "function_name": function_name},
        "functions": [{"name": "summarize", "description": "Summarize", "output_schema": SUMMARY}],
    }
    return api("POST", "/v1/crews", token, definition)


def _bound_functions(stack):
    from tests.support.agent_functions import AgentFunctions

    functions = AgentFunctions(stack)
    _install_adapter_clients(stack, lambda_factory=lambda: functions.client, clock=stack.clock)
    return functions


def _refusal_of(reply, name):
    """The refusal with the function's name taken out (it is the one thing that differs)."""
    assert reply.status == 400, reply.body
    return json.dumps(reply.body).replace(name.split(":function:")[-1], "<function>")


def test_s8_another_accounts_function_is_refused_like_an_unknown_one(api, stack, agents):
    (a_admin, a_account), (b_admin, _) = _two_accounts(stack)
    functions = _bound_functions(stack)
    functions.create("agentworks-agent-a-summarizer", _turn_answer, account_id=a_account)
    functions.create("agentworks-agent-untagged", _turn_answer)

    # B names A's function, an untagged one, and one that does not exist: one refusal.
    refusals = {
        _refusal_of(_adapter_crew(api, b_admin, f"b{i}", name), name)
        for i, name in enumerate(
            (
                "agentworks-agent-a-summarizer",
                "arn:aws:lambda:us-east-1:123456789012:function:agentworks-agent-a-summarizer",
                "agentworks-agent-untagged",
                "agentworks-agent-nothing-here",
            )
        )
    }
    assert len(refusals) == 1, refusals
    assert "not available to this account" in refusals.pop()
    # Nothing was written: B has no Crews; A's function never ran.
    assert api("GET", "/v1/crews", b_admin).body["crews"] == []
    assert functions.invoked == []
    # A itself cannot use the untagged function either.
    assert _adapter_crew(api, a_admin, "untagged", "agentworks-agent-untagged").status == 400

    # A's own function works for A.
    assert _adapter_crew(api, a_admin, "mine", "agentworks-agent-a-summarizer").status == 201
    caller = agents.connection("caller")["token"]
    call_id = api(
        "POST",
        "/v1/calls",
        caller,
        {"target": "crew:mine", "function": "summarize", "args": {"text": "rent"}},
    ).body["call_id"]
    done = wait_for(api, caller, call_id, TERMINAL)
    assert done["state"] == "succeeded", done
    assert done["result"] == {"summary": "for rent"}
    assert len(functions.calls_of("agentworks-agent-a-summarizer")) == 1


def test_s8_a_profile_naming_another_accounts_function_is_refused(api, stack):
    (_, a_account), (b_admin, _) = _two_accounts(stack)
    functions = _bound_functions(stack)
    functions.create("agentworks-agent-a-writer", _turn_answer, account_id=a_account)
    profiles = [
        {"name": "p", "type": "lambda", "function_name": name}
        for name in ("agentworks-agent-a-writer", "agentworks-agent-nowhere")
    ]
    replies = [api("POST", "/v1/adapters", b_admin, profile) for profile in profiles]
    assert {
        _refusal_of(reply, profile["function_name"])
        for reply, profile in zip(replies, profiles, strict=True)
    } == {_refusal_of(replies[1], "agentworks-agent-nowhere")}
    assert api("GET", "/v1/adapters", b_admin).body["adapters"] == []


def test_s8_retagging_a_function_to_another_account_stops_its_calls(api, stack, agents):
    (a_admin, a_account), (_, b_account) = _two_accounts(stack)
    functions = _bound_functions(stack)
    name = "agentworks-agent-moving"
    functions.create(name, _turn_answer, account_id=a_account)
    assert _adapter_crew(api, a_admin, "mover", name).status == 201
    caller = agents.connection("caller")["token"]
    call = {"target": "crew:mover", "function": "summarize", "args": {"text": "lease"}}

    def run() -> dict:
        call_id = api("POST", "/v1/calls", caller, call).body["call_id"]
        return wait_for(api, caller, call_id, TERMINAL)

    assert run()["state"] == "succeeded"
    functions.bind(name, b_account)  # the operator gives the function to account B
    # Within the cache window the container still holds A's binding…
    assert run()["state"] == "succeeded"
    assert len(functions.calls_of(name)) == 2
    # …after it, A's calls are refused before any invoke, as for an unknown function.
    stack.clock.advance(limits.AGENT_FUNCTION_BINDING_CACHE_SECONDS + 1)
    refused = run()
    assert refused["state"] == "failed", refused
    assert any("not available to this account" in e for e in refused["errors"]), refused
    assert len(functions.calls_of(name)) == 2


def test_s8_a_workflow_steps_lambda_profile_stops_when_its_function_moves(api, stack):
    """The workflow runner checks the binding before every invoke too."""
    from agentworks.signing import Signer
    from tests.integration.workflow_support import wait_run
    from tests.support.agent_functions import AgentFunctions

    (a_admin, a_account), (_, b_account) = _two_accounts(stack)
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
    name = "agentworks-agent-step-writer"
    functions.create(name, lambda event: {"final_text": f"wrote {event['prompt']}"}, a_account)
    profile = {"name": "writer", "type": "lambda", "function_name": name}
    assert api("POST", "/v1/adapters", a_admin, profile).status == 201
    flow = {
        "workflowId": "write",
        "stages": [{"steps": [{"label": "w", "adapter": "writer", "prompt": "Go"}]}],
    }

    def run() -> dict:
        started = api("POST", "/v1/workflows", a_admin, flow)
        assert started.status in (200, 201, 202), started.body
        return wait_run(api, a_admin, started.body["runId"])

    ran = run()
    assert ran["status"] == "succeeded", ran
    assert ran["stages"][0]["steps"][0]["output"] == "wrote Go"
    functions.bind(name, b_account)
    stack.clock.advance(limits.AGENT_FUNCTION_BINDING_CACHE_SECONDS + 1)
    refused = run()
    assert refused["status"] == "failed", refused
    assert "not available to this account" in json.dumps(refused), refused
    assert len(functions.calls_of(name)) == 1


def test_s8_over_mcp_another_accounts_function_is_refused_like_an_unknown_one(stack):
    """The same rule when a Crew is defined through the MCP function (its role reads tags)."""
    from tests.integration.test_mcp_crews_tools import Tools
    from tests.integration.test_mcp_handler import load_handler_module

    (_, a_account), (b_admin, _) = _two_accounts(stack)
    functions = _bound_functions(stack)
    functions.create("agentworks-agent-a-mcp", _turn_answer, account_id=a_account)
    tools = Tools(load_handler_module(), b_admin)
    errors = []
    for name in ("agentworks-agent-a-mcp", "agentworks-agent-none"):
        definition = {
            "name": "viamcp",
            "instructions": "x",
            "adapter": {"type": "lambda", "function_name": name},
            "functions": [{"name": "f", "description": "f"}],
        }
        error = tools.error("crews", action="create", definition=definition)
        errors.append(json.dumps(error).replace(name, "<function>"))
    assert errors[0] == errors[1] and "not available to this account" in errors[0]
    assert functions.invoked == []
