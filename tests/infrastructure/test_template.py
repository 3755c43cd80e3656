"""template.yaml is the single source of truth: it lints clean, transforms with SAM, and
the local stack's tables are exactly the template's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import boto3
import pytest

from agentworks_local.template import (
    TEMPLATE_PATH,
    create_resources,
    load_template,
    resources_of_type,
)
from tests.support.sam import translate

ROOT = Path(__file__).resolve().parents[2]


def test_template_passes_cfn_lint():
    result = subprocess.run(
        [str(Path(sys.executable).parent / "cfn-lint"), str(TEMPLATE_PATH)],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.fixture(scope="module")
def transformed() -> dict[str, Any]:
    """template.yaml as SAM's own translator turns it into CloudFormation (offline)."""
    return translate(load_template())


def test_template_transforms_with_sam(transformed):
    types = {r["Type"] for r in transformed["Resources"].values()}
    assert {
        "AWS::ApiGatewayV2::Api",
        "AWS::Lambda::Function",
        "AWS::DynamoDB::Table",
        "AWS::Events::Rule",
        "AWS::Lambda::LayerVersion",
    } <= types
    api = transformed["Resources"]["HttpApi"]
    body = json.dumps(api["Properties"])
    assert "/v1/{proxy+}" in body and "/mcp" in body
    # A3: the functions authenticate; an HTTP API authorizer would answer its own bodies.
    assert "x-amazon-apigateway-authorizer" not in body and "securitySchemes" not in body


def test_every_function_is_arm64_python312_with_tracing_and_a_thin_handler(transformed):
    functions = resources_of_type(transformed, "AWS::Lambda::Function")
    # api, mcp, a2a, tick, step runner, workflow runner, relay runner, relay code, push,
    # notifier, webhooks
    assert len(functions) == 11
    for name, fn in functions.items():
        props = fn["Properties"]
        assert props["Runtime"] == "python3.12" and props["Architectures"] == ["arm64"], name
        assert props["TracingConfig"] == {"Mode": "Active"}, name
        assert props["Handler"] == "app.handler"
    for folder in (
        "api",
        "mcp",
        "a2a",
        "tick",
        "step_runner",
        "workflow_runner",
        "relay_runner",
        "push",
        "notifier",
        "webhooks",
    ):
        handler = ROOT / "functions" / folder / "app.py"
        assert handler.exists()
        assert len(handler.read_text().splitlines()) < 80, f"{folder} handler should stay thin"


def test_policies_are_scoped_to_single_tables(transformed):
    roles = resources_of_type(transformed, "AWS::IAM::Role")
    for role in roles.values():
        for policy in role["Properties"].get("Policies", []):
            for statement in policy["PolicyDocument"]["Statement"]:
                actions = (
                    statement["Action"]
                    if isinstance(statement["Action"], list)
                    else [statement["Action"]]
                )
                if any(a.startswith("dynamodb:") for a in actions):
                    assert statement["Resource"] != "*"


def test_local_stack_tables_match_the_template():
    from moto import mock_aws

    template = load_template()
    with mock_aws():
        session = boto3.Session(region_name="us-east-1")
        created = create_resources(session, prefix="check")
        client = session.client("dynamodb")
        for logical_id, resource in resources_of_type(template, "AWS::DynamoDB::Table").items():
            props = resource["Properties"]
            table = client.describe_table(TableName=created.tables[logical_id])["Table"]
            assert table["KeySchema"] == props["KeySchema"]
            assert sorted(
                table["AttributeDefinitions"], key=lambda a: a["AttributeName"]
            ) == sorted(props["AttributeDefinitions"], key=lambda a: a["AttributeName"])
            want = {
                i["IndexName"]: (i["KeySchema"], i["Projection"])
                for i in props.get("GlobalSecondaryIndexes", [])
            }
            got = {
                i["IndexName"]: (i["KeySchema"], i["Projection"])
                for i in table.get("GlobalSecondaryIndexes", [])
            }
            assert got == want
            ttl = client.describe_time_to_live(TableName=created.tables[logical_id])
            spec = props.get("TimeToLiveSpecification")
            if spec:
                assert ttl["TimeToLiveDescription"] == {
                    "TimeToLiveStatus": "ENABLED",
                    "AttributeName": spec["AttributeName"],
                }
        assert set(created.secrets) == set(
            resources_of_type(template, "AWS::SecretsManager::Secret")
        )


def test_state_machines_are_valid_asl_with_resolved_substitutions():
    """moto accepts invalid ASL, so the definitions are checked here."""
    import re

    template = load_template()
    machines = resources_of_type(template, "AWS::Serverless::StateMachine")
    assert machines
    for logical_id, machine in machines.items():
        props = machine["Properties"]
        text = (ROOT / props["DefinitionUri"]).read_text()
        placeholders = set(re.findall(r"\$\{(\w+)\}", text))
        assert placeholders == set(props["DefinitionSubstitutions"]), logical_id
        asl = json.loads(text)
        states = asl["States"]
        assert asl["StartAt"] in states
        targets: set[str] = set()
        for name, state in states.items():
            assert state["Type"] in {
                "Task",
                "Choice",
                "Wait",
                "Pass",
                "Succeed",
                "Fail",
                "Parallel",
                "Map",
            }, name
            nexts = [state.get("Next"), state.get("Default")]
            nexts += [c["Next"] for c in state.get("Choices", [])]
            nexts += [c["Next"] for c in state.get("Catch", [])]
            for target in filter(None, nexts):
                assert target in states, f"{name} -> {target}"
                targets.add(target)
            if state["Type"] in {"Task", "Pass", "Wait", "Parallel", "Map"}:
                assert "Next" in state or state.get("End") is True, name
        assert set(states) - targets <= {asl["StartAt"]}, "unreachable states"


def test_call_outputs_are_removed_after_call_output_retention_days():
    """F8: the outputs bucket's lifecycle rule removes a call's files (under the prefix the
    code writes them to) after CALL_OUTPUT_RETENTION_DAYS, the figure the API tells callers."""
    from agentworks import limits
    from agentworks.crews.outputs import call_prefix

    [bucket] = resources_of_type(load_template(), "AWS::S3::Bucket").values()
    rules = bucket["Properties"]["LifecycleConfiguration"]["Rules"]
    prefix = call_prefix("crew_x", "call_x")
    [rule] = [r for r in rules if prefix.startswith(r["Prefix"]) and r["Status"] == "Enabled"]
    assert rule["ExpirationInDays"] == limits.CALL_OUTPUT_RETENTION_DAYS


def test_a_relay_attempt_ends_within_its_code_functions_timeout():
    """R5: an attempt is given RELAY_RUN_TIMEOUT_SECONDS (functions/relay_code stops the code
    then), under the Lambda timeout of the function that runs the code and of the one that
    waits for it, so the attempt's own timeout fires before Lambda kills either."""
    from agentworks import limits

    functions = resources_of_type(load_template(), "AWS::Serverless::Function")
    for name in ("RelayCodeFunction", "RelayRunnerFunction"):
        assert functions[name]["Properties"]["Timeout"] > limits.RELAY_RUN_TIMEOUT_SECONDS, name
