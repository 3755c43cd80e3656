"""The deploy gate's cycle check (deploycheck.cycles): a loop of references is found in
the translated template, printed edge by edge, and the edge to cut is named."""

from __future__ import annotations

from typing import Any

import pytest

from deploycheck import cycles
from deploycheck.template import load, translate
from tests.infrastructure.test_template import ROOT


def _cyclic() -> dict[str, Any]:
    """A runner whose environment names the API, whose route invokes a function that
    starts the machine, which invokes the runner: the loop issue 23 found."""
    arn = "arn:aws:states:::lambda:invoke"
    return {
        "Resources": {
            "Api": {
                "Type": "AWS::ApiGatewayV2::Api",
                "Properties": {"Target": {"Fn::GetAtt": ["Front", "Arn"]}},
            },
            "Front": {
                "Type": "AWS::Lambda::Function",
                "Properties": {
                    "Role": {"Fn::GetAtt": ["FrontRole", "Arn"]},
                    "Environment": {"Variables": {"MACHINE": {"Ref": "Machine"}}},
                },
            },
            "FrontRole": {"Type": "AWS::IAM::Role", "Properties": {}},
            "Machine": {
                "Type": "AWS::StepFunctions::StateMachine",
                "Properties": {
                    "DefinitionString": arn,
                    "DefinitionSubstitutions": {"Runner": {"Fn::GetAtt": "Runner.Arn"}},
                },
            },
            "Runner": {
                "Type": "AWS::Lambda::Function",
                "Properties": {
                    "Environment": {
                        "Variables": {
                            "API_URL": {"Fn::Sub": "https://${Api}.execute-api.${AWS::Region}"}
                        }
                    }
                },
            },
            "Alone": {"Type": "AWS::SQS::Queue", "DependsOn": "Runner"},
        }
    }


def test_a_cycle_is_found_printed_edge_by_edge_and_its_cut_named():
    [component] = cycles.find(_cyclic())
    assert component.resources == ("Api", "Front", "Machine", "Runner")
    [cycle] = component.cycles
    assert [str(link) for link in cycle] == [
        "Api.Properties.Target → Front",
        "Front.Properties.Environment.Variables.MACHINE → Machine",
        "Machine.Properties.DefinitionSubstitutions.Runner → Runner",
        "Runner.Properties.Environment.Variables.API_URL → Api",
    ]
    # Both environment edges break the loop; the tie goes by name, and either is learnable
    # at run time. A substitution or the API's own target is never preferred over them.
    best = component.cuts[0]
    assert best.all_broken and best.edge.kind == "environment"
    assert str(best.edge) == "Front.Properties.Environment.Variables.MACHINE → Machine"
    text = "\n".join(cycles.describe(component))
    assert "cut: Front.Properties.Environment.Variables.MACHINE → Machine" in text
    assert "learn the value at run time" in text


def test_the_edge_in_every_cycle_is_the_one_to_cut():
    template = _cyclic()
    # A second loop through the API that does not pass through Front's environment.
    template["Resources"]["FrontRole"]["Properties"] = {
        "Policies": [{"PolicyDocument": {"Resource": {"Fn::Sub": "${Machine.Name}"}}}]
    }
    [component] = cycles.find(template)
    assert len(component.cycles) == 2
    best = component.cuts[0]
    assert best.all_broken and best.cycles_broken == 2
    assert str(best.edge) == "Runner.Properties.Environment.Variables.API_URL → Api"


def test_sub_variables_depends_on_and_literals_are_read_right():
    template = {
        "Resources": {
            "A": {
                "Type": "AWS::SNS::Topic",
                "DependsOn": ["B"],
                "Properties": {
                    "Name": {"Fn::Sub": ["${x}-${!NotARef}-${AWS::Region}", {"x": {"Ref": "C"}}]}
                },
            },
            "B": {"Type": "AWS::SNS::Topic"},
            "C": {"Type": "AWS::SNS::Topic"},
        }
    }
    assert [str(e) for e in cycles.edges(template)] == [
        "A.DependsOn → B",
        "A.Properties.Name.x → C",
    ]
    assert cycles.find(template) == []


@pytest.fixture(scope="module")
def translated() -> dict[str, Any]:
    return translate(load(ROOT / "template.yaml"))


def test_the_translated_template_has_no_cycle(translated):
    assert cycles.find(translated) == []
    # …and the runner's URL is read at run time: no edge from it to the API.
    assert not [
        e
        for e in cycles.edges(translated)
        if e.source == "RelayRunnerFunction" and e.target == "HttpApi"
    ]
