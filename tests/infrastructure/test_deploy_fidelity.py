"""What a deploy of template.yaml does that moto and cfn-lint don't show, checked on SAM's
own translation: invoke permissions, alias versions, roles, deletion behaviour."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from agentworks.crews.adapters.lambda_adapter import FUNCTION_NAME_PREFIX
from agentworks_local.template import load_template, resources_of_type
from tests.support.aws_calls import AwsCall, Permission, permissions_for
from tests.support.iam import (
    allowed,
    invoke_gaps,
    role_of_function,
    role_statements,
    stack_resolver,
)
from tests.support.sam import translate, translated_template

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def translated() -> dict[str, Any]:
    return translated_template()


def _statements(translated: dict[str, Any], function: str) -> list[Any]:
    return role_statements(
        translated, role_of_function(translated, function), stack_resolver(translated)
    )


def _version_of(translated: dict[str, Any], function: str) -> str:
    """The logical id of the version the function's alias points at."""
    aliases = [
        r
        for r in translated["Resources"].values()
        if r["Type"] == "AWS::Lambda::Alias"
        and r["Properties"]["FunctionName"] == {"Ref": function}
    ]
    assert len(aliases) == 1, f"{function} should have one alias"
    return str(aliases[0]["Properties"]["FunctionVersion"]["Fn::GetAtt"][0])


def test_a_layer_only_change_publishes_a_new_mcp_version_and_moves_live():
    """All code is in RuntimeLayer: a new layer package (its S3 key is its content hash after
    `sam package`) must give McpFunction a new Version, so SnapStart's `live` serves it."""
    template = load_template()
    before = translate(template, layer_key="content-hash-1")
    after = translate(template, layer_key="content-hash-2")
    assert _version_of(before, "McpFunction") != _version_of(after, "McpFunction")
    mcp = after["Resources"]["McpFunction"]["Properties"]
    assert mcp["SnapStart"] == {"ApplyOn": "PublishedVersions"}

    # The same measure sees the defect: without AutoPublishAliasAllProperties the alias
    # stays on the old version when only the layer changes.
    defective = copy.deepcopy(template)
    del defective["Resources"]["McpFunction"]["Properties"]["AutoPublishAliasAllProperties"]
    assert _version_of(translate(defective, layer_key="content-hash-1"), "McpFunction") == (
        _version_of(translate(defective, layer_key="content-hash-2"), "McpFunction")
    )


def test_every_route_and_the_schedule_can_invoke_their_function(translated):
    """An integration (or authorizer) without an AWS::Lambda::Permission fails every request
    with 500 on AWS, while cfn-lint and the local stack pass."""
    assert invoke_gaps(translated) == []
    apis = resources_of_type(translated, "AWS::ApiGatewayV2::Api")
    assert {"/v1/{proxy+}", "/mcp"} <= set(apis["HttpApi"]["Properties"]["Body"]["paths"])
    assert apis["PushApi"]["Properties"]["ProtocolType"] == "WEBSOCKET"


def test_a_websocket_route_without_its_invoke_permission_is_reported(translated):
    broken = copy.deepcopy(translated)
    del broken["Resources"]["PushInvokePermission"]
    gaps = invoke_gaps(broken)
    assert len(gaps) == 3 and all("PushApi route $" in gap for gap in gaps), gaps
    assert {gap.split()[2].rstrip(":") for gap in gaps} == {"$connect", "$disconnect", "$default"}


def test_a_missing_invoke_permission_is_reported_with_its_route(translated):
    broken = copy.deepcopy(translated)
    del broken["Resources"]["McpFunctionMcpPermission"]
    gaps = invoke_gaps(broken)
    assert len(gaps) == 1 and "route x-amazon-apigateway-any-method /mcp" in gaps[0]
    assert gaps[0].endswith("function:agentworks-McpFunction:live")

    # A permission on the function does not cover the alias the route invokes.
    broken = copy.deepcopy(translated)
    permission = broken["Resources"]["McpFunctionMcpPermission"]["Properties"]
    permission["FunctionName"] = {"Ref": "McpFunction"}
    assert len(invoke_gaps(broken)) == 1


def test_the_state_machine_role_may_invoke_every_task_function(translated):
    machine = translated["Resources"]["FunctionCallStateMachine"]["Properties"]
    resolve = stack_resolver(translated)
    substitutions = {k: resolve(v) for k, v in machine["DefinitionSubstitutions"].items()}
    text = (
        ROOT
        / load_template()["Resources"]["FunctionCallStateMachine"]["Properties"]["DefinitionUri"]
    ).read_text()
    for key, value in substitutions.items():
        text = text.replace("${" + key + "}", value)
    role = machine["RoleArn"]["Fn::GetAtt"][0]
    statements = role_statements(translated, role, resolve)
    invoked = set()
    for state in json.loads(text)["States"].values():
        if state["Type"] != "Task":
            continue
        resource = state["Resource"]
        if resource.startswith("arn:aws:states:::lambda:invoke"):
            resource = state["Parameters"]["FunctionName"]
        assert resource.startswith("arn:aws:lambda:"), f"unchecked task resource {resource}"
        invoked.add(resource)
        assert allowed(statements, Permission("lambda:InvokeFunction", resource)), resource
    assert invoked == {resolve({"Fn::GetAtt": ["StepRunnerFunction", "Arn"]})}


def test_outputs_bucket_survives_stack_deletion_like_the_tables():
    """A non-empty bucket would fail the stack's deletion; Retain keeps it (and its files)."""
    resources = load_template()["Resources"]
    retained = ["OutputsBucket", "IdentityTable", "MessagesTable", "WorkTable"]
    for logical_id in retained:
        assert resources[logical_id].get("DeletionPolicy") == "Retain", logical_id
        assert resources[logical_id].get("UpdateReplacePolicy") == "Retain", logical_id


def _documented_model_id() -> str:
    source = (ROOT / "layers/agentworks/agentworks/crews/adapters/bedrock.py").read_text()
    match = re.search(r"model_id:\s*(\S+)", source)
    assert match
    return match.group(1)


def test_s8_step_runner_may_call_the_documented_bedrock_inference_profile(translated):
    """Converse is authorized by bedrock:InvokeModel; a `us.` profile needs the profile and
    the foundation model in each region it routes to."""
    model = _documented_model_id()
    assert model.startswith("us.")
    statements = _statements(translated, "StepRunnerFunction")
    converse = AwsCall("StepRunnerFunction", "bedrock-runtime", "Converse", {"modelId": model})
    needed = permissions_for(converse)
    assert len(needed) == 4  # the profile + three US regions
    missing = [p for p in needed if not allowed(statements, p)]
    assert missing == []
    for statement in statements:
        assert not any(a.lower() == "bedrock:converse" for a in statement.actions)


@pytest.mark.parametrize("runner", ["StepRunnerFunction", "WorkflowRunnerFunction"])
def test_s8_runners_may_invoke_exactly_the_lambda_adapters_prefix_when_tagged(translated, runner):
    """Issue 23: only functions the AWS account's owner tagged agentworks:account (the code
    checks the value; IAM that the owner bound it to some account at all)."""
    statements = _statements(translated, runner)
    arn = "arn:aws:lambda:us-east-1:123456789012:function:"
    bound = (("agentworks:account", "acct_01A"),)

    def invoke(name: str, tags: tuple[tuple[str, str], ...] | None = bound) -> Permission:
        return Permission("lambda:InvokeFunction", f"{arn}{name}", resource_tags=tags)

    assert allowed(statements, invoke(f"{FUNCTION_NAME_PREFIX}x"))
    assert not allowed(statements, invoke(f"{FUNCTION_NAME_PREFIX}x", tags=()))
    assert not allowed(statements, invoke(f"{FUNCTION_NAME_PREFIX}x", tags=(("team", "a"),)))
    assert not allowed(statements, invoke("billing"))
    assert not allowed(statements, invoke("agentworks-ApiFunction"))
    for action in ("lambda:GetFunction", "lambda:ListTags"):  # reading the binding
        assert allowed(statements, Permission(action, f"{arn}{FUNCTION_NAME_PREFIX}x"))
        assert not allowed(statements, Permission(action, f"{arn}billing"))


@pytest.mark.parametrize("runner", ["StepRunnerFunction", "WorkflowRunnerFunction"])
def test_s8_agent_function_grants_name_this_stack_only(translated, runner):
    """Issue 23: a stack named `staging` invokes `staging-agent-*`, never another stack's
    `agentworks-agent-*` in the same AWS account, and says so in AGENT_FUNCTION_PREFIX."""
    statements = role_statements(
        translated,
        role_of_function(translated, runner),
        stack_resolver(translated, prefix="staging"),
    )
    arn = "arn:aws:lambda:us-east-1:123456789012:function:"
    bound = (("agentworks:account", "acct_01A"),)
    invoke = "lambda:InvokeFunction"
    assert allowed(statements, Permission(invoke, f"{arn}staging-agent-x", resource_tags=bound))
    assert not allowed(
        statements, Permission(invoke, f"{arn}agentworks-agent-x", resource_tags=bound)
    )
    for action in ("lambda:GetFunction", "lambda:ListTags"):
        assert not allowed(statements, Permission(action, f"{arn}agentworks-agent-x"))
    environment = translated["Resources"][runner]["Properties"]["Environment"]["Variables"]
    assert environment["AGENT_FUNCTION_PREFIX"] == {"Fn::Sub": "${AWS::StackName}-agent-"}


# Actions known to be called by no function; granting them widens what a compromised
# function can do. (Every grant against every recorded call: test_iam_coverage.py.)
UNUSED = (
    "dynamodb:Scan",
    "dynamodb:BatchWriteItem",
    "dynamodb:DescribeTable",
    "s3:DeleteObject",
    "s3:PutObjectAcl",
    "s3:PutLifecycleConfiguration",
    "s3:GetLifecycleConfiguration",
    "states:SendTaskFailure",
    "bedrock:Converse",
)


@pytest.mark.parametrize(
    "function", ["ApiFunction", "McpFunction", "StepRunnerFunction", "TickFunction"]
)
def test_roles_grant_none_of_the_known_unused_actions_and_no_wildcards(translated, function):
    granted = {a.lower() for s in _statements(translated, function) for a in s.actions}
    assert granted.isdisjoint(a.lower() for a in UNUSED), granted
    assert not any(a.endswith("*") for a in granted), "no action wildcards"
    # Only the client surface reads calls in a batch (GET /v1/calls, the Runs page); every
    # authenticating role reads a connection's ancestors in one batch, from the identity
    # table alone (issue 24: ends_with_parent through every generation).
    surface = function in ("ApiFunction", "McpFunction")
    batch_tables = {
        resource.split(":table/", 1)[1].split("/", 1)[0]
        for s in _statements(translated, function)
        if any(a.lower() == "dynamodb:batchgetitem" for a in s.actions)
        for resource in s.resources
    }
    assert "agentworks-IdentityTable" in batch_tables
    assert (batch_tables != {"agentworks-IdentityTable"}) is surface, batch_tables


def test_an_http_api_authorizer_needs_its_own_invoke_permission():
    """SAM adds none for an HTTP API Lambda authorizer unless asked: every request would
    fail with 500. (The template authenticates in the functions; this guards a comeback.)"""
    template = copy.deepcopy(load_template())
    template["Resources"]["AuthorizerFunction"] = {
        "Type": "AWS::Serverless::Function",
        "Properties": {"CodeUri": "functions/api", "Handler": "app.handler"},
    }
    bearer = {
        "FunctionArn": {"Fn::GetAtt": ["AuthorizerFunction", "Arn"]},
        "AuthorizerPayloadFormatVersion": "2.0",
        "EnableSimpleResponses": True,
        "Identity": {"Headers": ["Authorization"]},
    }
    auth = {"DefaultAuthorizer": "Bearer", "Authorizers": {"Bearer": bearer}}
    template["Resources"]["HttpApi"]["Properties"]["Auth"] = auth
    gaps = invoke_gaps(translate(template))
    assert len(gaps) == 1 and "authorizer Bearer" in gaps[0], gaps
    bearer["EnableFunctionDefaultPermissions"] = True
    assert invoke_gaps(translate(template)) == []
