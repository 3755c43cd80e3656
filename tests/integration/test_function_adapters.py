"""§8: the bedrock and lambda adapters run a real call through Step Functions and the step
runner, with botocore's Stubber standing in for Bedrock and the user's Lambda (no network)."""

from __future__ import annotations

import io
import json
from dataclasses import replace

import boto3
from botocore.response import StreamingBody
from botocore.stub import ANY, Stubber

from agentworks import runtime
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
    client = boto3.client("lambda", region_name="us-east-1")
    stubber = Stubber(client)
    answer = json.dumps({"final_text": "ok", "result": {"summary": "From Lambda."}}).encode()
    stubber.add_response(
        "invoke",
        {"StatusCode": 200, "Payload": StreamingBody(io.BytesIO(answer), len(answer))},
        {
            "FunctionName": "agentworks-agent-summarizer",
            "Payload": ANY,
            "InvocationType": "RequestResponse",
        },
    )
    stubber.activate()
    _install_adapter_clients(stack, lambda_factory=lambda: client)
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
    stubber.assert_no_pending_responses()
