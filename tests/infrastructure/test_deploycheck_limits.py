"""The deploy gate's quotas (deploycheck.limits, deploy_config, statemachines): each
measured on the translated template with plausible deployed values."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from deploycheck import deploy_config, limits, statemachines
from deploycheck.template import load, translate
from tests.infrastructure.test_template import ROOT


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return load(ROOT / "template.yaml")


@pytest.fixture(scope="module")
def translated(template) -> dict[str, Any]:
    return translate(template)


def test_the_template_is_within_every_limit(translated):
    found = limits.template_measures(translated, (ROOT / "template.yaml").stat().st_size)
    found += limits.resource_measures(translated)
    assert [str(m) for m in found if m.over] == []
    kinds = {m.what.rsplit(" ", 1)[-1] for m in found}
    assert {"policies", "policy", "environment", "transform", "widgets"} <= kinds


def test_a_role_over_the_inline_policy_limit_is_reported():
    statement = {
        "Effect": "Allow",
        "Action": "s3:GetObject",
        "Resource": "arn:aws:s3:::b/" + "k" * 60,
    }
    role = {
        "Type": "AWS::IAM::Role",
        "Properties": {
            "Policies": [{"PolicyName": "p", "PolicyDocument": {"Statement": [statement] * 150}}]
        },
    }
    [measure] = [
        m for m in limits.resource_measures({"Resources": {"BigRole": role}}) if "BigRole" in m.what
    ]
    assert measure.over and measure.value > limits.MAX_ROLE_INLINE_CHARS
    assert str(measure).startswith("OVER BigRole inline policies:")


def test_whitespace_does_not_count_and_intrinsics_count_as_deployed():
    document = {"Statement": [{"Resource": {"Fn::GetAtt": ["Table", "Arn"]}, "Sid": "a b"}]}
    role = {"Type": "AWS::IAM::Role", "Properties": {"Policies": [{"PolicyDocument": document}]}}
    table = {"Type": "AWS::DynamoDB::Table"}
    chars = limits.role_policy_chars({"Resources": {"R": role, "Table": table}})["R"]
    arn = "arn:aws:dynamodb:ap-southeast-2:123456789012:table/agentworks-Table-A1B2C3D4E5F6"
    assert chars == len(
        json.dumps({"Statement": [{"Resource": arn, "Sid": "ab"}]}).replace(" ", "")
    )


def test_a_large_template_needs_s3_in_samconfig(tmp_path: Path):
    assert deploy_config.problems(ROOT, 94_000) == []  # the repository's samconfig.toml
    (tmp_path / "samconfig.toml").write_text(
        'version = 0.1\n[default.deploy.parameters]\ncapabilities = "CAPABILITY_IAM"\n'
    )
    [problem] = deploy_config.problems(tmp_path, 94_000)
    assert "resolve_s3" in problem
    assert deploy_config.problems(tmp_path, 50_000) == []


def test_every_state_machine_of_the_template_is_read_and_filled(template):
    found = statemachines.definitions(template, ROOT)
    machines = {
        name
        for name, resource in template["Resources"].items()
        if resource["Type"] == "AWS::Serverless::StateMachine"
    }
    assert {d.logical_id for d in found} == machines
    for definition in found:
        assert definition.unfilled == ()
        assert "${" not in definition.text
        json.loads(definition.text)


def test_a_new_machine_and_a_missing_substitution_are_seen(tmp_path: Path):
    (tmp_path / "m.asl.json").write_text(
        '{"StartAt": "A", "States": {"A": {"Type": "Task", '
        '"Resource": "${Fn}", "Next": "${Later}"}}}'
    )
    template = {
        "Resources": {
            "Fn": {"Type": "AWS::Serverless::Function"},
            "NewMachine": {
                "Type": "AWS::Serverless::StateMachine",
                "Properties": {
                    "DefinitionUri": "m.asl.json",
                    "DefinitionSubstitutions": {"Fn": {"Fn::GetAtt": "Fn.Arn"}},
                },
            },
        }
    }
    [definition] = statemachines.definitions(template, tmp_path)
    assert definition.logical_id == "NewMachine"
    assert definition.unfilled == ("Later",)
    assert ":function:agentworks-Fn-" in definition.text
