"""The deploy gate's tools: cfn-lint over the translated template, asl-validator over the
state machines, `sam build` and the built sizes. asl-validator and the SAM CLI are
installed by `make check-deploy`; without them their tests are skipped here (the make
target itself always runs them)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deploycheck import asl, build, lint, sizes, statemachines
from deploycheck.template import load, translate
from tests.infrastructure.test_template import ROOT


def test_cfn_lint_passes_the_template_before_and_after_the_transform():
    source = ROOT / "template.yaml"
    assert lint.lint(source, translate(load(source)), ROOT) == []


def test_cfn_lint_reports_a_cycle_only_the_translated_template_has(tmp_path: Path):
    source = tmp_path / "t.yaml"
    source.write_text("Resources:\n  Q:\n    Type: AWS::SQS::Queue\n")
    template = {"AWSTemplateFormatVersion": "2010-09-09"}
    template["Resources"] = {
        "A": {
            "Type": "AWS::SQS::Queue",
            "Properties": {"QueueName": {"Fn::GetAtt": ["B", "QueueName"]}},
        },
        "B": {
            "Type": "AWS::SQS::Queue",
            "Properties": {"QueueName": {"Fn::GetAtt": ["A", "QueueName"]}},
        },
    }
    findings = lint.lint(source, template, ROOT)
    assert findings and all(f.startswith("translated:") for f in findings)
    assert any(":E3004:" in f for f in findings)


needs_asl = pytest.mark.skipif(
    asl.validator(ROOT) is None, reason="asl-validator not installed (make check-deploy)"
)


@needs_asl
def test_every_state_machine_is_valid_asl():
    found = statemachines.definitions(load(ROOT / "template.yaml"), ROOT)
    assert [(v.logical_id, v.detail) for v in asl.validate(found, ROOT) if not v.valid] == []


@needs_asl
def test_a_broken_definition_is_refused():
    broken = statemachines.Definition(
        "Broken",
        "broken.asl.json",
        json.dumps({"StartAt": "A", "States": {"A": {"Type": "Pass", "Next": "Nowhere"}}}),
        (),
    )
    unfilled = statemachines.Definition(
        "Unfilled",
        "u.asl.json",
        json.dumps({"StartAt": "A", "States": {"A": {"Type": "Succeed"}}}),
        ("X",),
    )
    verdicts = {v.logical_id: v for v in asl.validate([broken, unfilled], ROOT)}
    assert not verdicts["Broken"].valid
    assert "broken.asl.json" in verdicts["Broken"].detail
    assert (
        not verdicts["Unfilled"].valid and "no substitution for: X" in verdicts["Unfilled"].detail
    )


@pytest.mark.skipif(build.sam(ROOT) is None, reason="SAM CLI not installed (make check-deploy)")
def test_sam_build_succeeds_and_every_function_fits(tmp_path: Path):
    built, output = build.build(ROOT / "template.yaml", ROOT, tmp_path / "build")
    assert built, output[-3000:]
    template = load(ROOT / "template.yaml")
    found = sizes.measures(template, tmp_path / "build")
    functions = [m for m in found if m.what.endswith(" unzipped")]
    assert len(functions) == sum(
        1 for r in template["Resources"].values() if r["Type"] == "AWS::Serverless::Function"
    )
    assert [str(m) for m in found if m.over] == []
    # The layer is most of every function: a build that lost it would be a few KB.
    assert min(m.value for m in functions) > 10_000_000
