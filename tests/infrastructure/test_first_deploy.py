"""A first deploy on a new account succeeds with the defaults (issue 23): no concurrency
reserved, samconfig.toml has what `sam deploy` needs, and every grant by name reaches this
stack's resources only."""

from __future__ import annotations

import json
import tomllib
from typing import Any

import pytest

from agentworks_local.template import load_template, resources_of_type
from deploycheck import deploy_config
from tests.infrastructure.test_template import ROOT
from tests.support.sam import translate


@pytest.fixture(scope="module")
def translated() -> dict[str, Any]:
    return translate(load_template())


def test_no_concurrency_is_reserved_by_default():
    parameters = load_template()["Parameters"]
    assert parameters["RelayConcurrency"]["Default"] == 0
    assert parameters["AgentStepConcurrency"]["Default"] == 0


def test_samconfig_has_what_a_first_deploy_needs():
    config = tomllib.loads((ROOT / "samconfig.toml").read_text())["default"]
    deploy = config["deploy"]["parameters"]
    assert config["global"]["parameters"]["stack_name"] == "agentworks"
    assert deploy["resolve_s3"] is True  # the template is over 51,200 bytes
    assert set(deploy["capabilities"].split()) == {"CAPABILITY_IAM", "CAPABILITY_AUTO_EXPAND"}
    assert deploy["confirm_changeset"] is True
    assert "region" not in json.dumps(config)  # from the environment
    assert deploy_config.problems(ROOT, (ROOT / "template.yaml").stat().st_size) == []


def test_state_machines_are_named_by_the_stack_within_80_characters():
    template = load_template()
    machines = resources_of_type(template, "AWS::Serverless::StateMachine")
    for logical_id, machine in machines.items():
        assert machine["Properties"]["Name"] == {"Fn::Sub": f"${{AWS::StackName}}-{logical_id}"}
    assert deploy_config.name_problems(template, "agentworks") == []
    # The longest, FunctionCallStateMachine, leaves 55 characters for the stack's name.
    assert deploy_config.name_problems(template, "x" * 55) == []
    [problem] = deploy_config.name_problems(template, "x" * 56)
    assert problem.startswith("FunctionCallStateMachine's name")
    assert problem.endswith("use a stack name of at most 55")


def _statements(translated: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    found = []
    for logical_id, resource in translated["Resources"].items():
        props = resource.get("Properties", {})
        documents = [p["PolicyDocument"] for p in props.get("Policies", [])]
        if resource["Type"] == "AWS::IAM::ManagedPolicy":
            documents.append(props["PolicyDocument"])
        for document in documents:
            statements = document["Statement"]
            for statement in statements if isinstance(statements, list) else [statements]:
                found.append((logical_id, statement))
    return found


def _resources(statement: dict[str, Any]) -> list[str]:
    resources = statement.get("Resource", [])
    return [json.dumps(r) for r in (resources if isinstance(resources, list) else [resources])]


def test_grants_by_name_name_this_stacks_machines_and_schedules(translated):
    states, schedules = [], []
    for _, statement in _statements(translated):
        for resource in _resources(statement):
            if ":stateMachine:" in resource or ":execution:" in resource:
                states.append(resource)
            if ":schedule/" in resource:
                schedules.append(resource)
    # No pattern that another stack's machine could match: each is a reference, or the
    # name built from this stack's name.
    assert states and not [r for r in states if "*StateMachine" in r or "stateMachine:*" in r]
    by_name = [r for r in states if "${AWS::StackName}-" in r]
    # (a pipeline's child executions are `<machine>/<map run>:<id>`)
    assert {
        r.split("${AWS::StackName}-")[1].split(":")[0].split("/")[0].strip('"}') for r in by_name
    } == {"FunctionCallStateMachine", "WorkflowRunStateMachine"}
    assert schedules == [
        '{"Fn::Sub": "arn:${AWS::Partition}:scheduler:${AWS::Region}:${AWS::AccountId}:'
        'schedule/${WorkflowScheduleGroup}/agentworks-*"}'
    ]
    group = translated["Resources"]["WorkflowScheduleGroup"]
    assert group["Properties"]["Name"] == {"Ref": "AWS::StackName"}


def test_the_mcp_functions_versions_are_retained_and_named_for_pruning(translated):
    [version] = resources_of_type(translated, "AWS::Lambda::Version").values()
    # SAM keeps each replaced SnapStart version: `agentworks ops prune-versions` removes them.
    assert version["DeletionPolicy"] == "Retain"
    assert version["Properties"]["FunctionName"] == {"Ref": "McpFunction"}
    assert translated["Outputs"]["McpFunctionName"]["Value"] == {"Ref": "McpFunction"}
