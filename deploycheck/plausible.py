"""Plausible deployed values for a template's intrinsics (Ref, Fn::GetAtt, Fn::Sub,
Fn::Join, Fn::If): names and ARNs shaped and sized as CloudFormation generates them
(`<stack>-<LogicalId>-<12 characters>`), so a state machine definition can be validated
and a policy measured before any deploy."""

from __future__ import annotations

import json
import re
from typing import Any

STACK = "agentworks"
REGION = "ap-southeast-2"  # one of the longer region names: sizes err on the large side
ACCOUNT = "123456789012"
PSEUDO = {
    "AWS::StackName": STACK,
    "AWS::Region": REGION,
    "AWS::AccountId": ACCOUNT,
    "AWS::Partition": "aws",
    "AWS::URLSuffix": "amazonaws.com",
    "AWS::StackId": f"arn:aws:cloudformation:{REGION}:{ACCOUNT}:stack/{STACK}/"
    "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
    "AWS::NoValue": "",
}
SUFFIX = "A1B2C3D4E5F6"
# SAM's types stand for what they become.
_SAM_TYPES = {
    "AWS::Serverless::Function": "AWS::Lambda::Function",
    "AWS::Serverless::StateMachine": "AWS::StepFunctions::StateMachine",
    "AWS::Serverless::HttpApi": "AWS::ApiGatewayV2::Api",
    "AWS::Serverless::LayerVersion": "AWS::Lambda::LayerVersion",
    "AWS::Serverless::SimpleTable": "AWS::DynamoDB::Table",
}
_SUB = re.compile(r"\$\{([^}!][^}]*)\}")


class Values:
    """Ref/GetAtt values of one template's resources and parameters."""

    def __init__(self, template: dict[str, Any]) -> None:
        self._resources = template.get("Resources", {})
        self._parameters = {
            name: str(spec.get("Default", ""))
            for name, spec in template.get("Parameters", {}).items()
        }

    def ref(self, name: str) -> str:
        if name in PSEUDO:
            return PSEUDO[name]
        if name in self._parameters:
            return self._parameters[name]
        kind = self._type(name)
        physical = f"{STACK}-{name}-{SUFFIX}"
        if kind == "AWS::StepFunctions::StateMachine":
            return f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:{self._machine_name(name)}"
        if kind == "AWS::SQS::Queue":
            return f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{physical}"
        if kind == "AWS::SecretsManager::Secret":
            return f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:{physical}-AbCdEf"
        if kind == "AWS::IAM::ManagedPolicy":
            return f"arn:aws:iam::{ACCOUNT}:policy/{physical}"
        if kind in ("AWS::Lambda::LayerVersion", "AWS::Lambda::Version"):
            return f"arn:aws:lambda:{REGION}:{ACCOUNT}:layer:{physical}:1"
        if kind in ("AWS::ApiGatewayV2::Api", "AWS::ApiGatewayV2::Stage"):
            return "a1b2c3d4e5"
        if kind == "AWS::S3::Bucket":
            return physical.lower()
        return physical

    def attribute(self, name: str, attribute: str) -> str:
        kind = self._type(name)
        physical = f"{STACK}-{name}-{SUFFIX}"
        if attribute == "Name" and kind == "AWS::StepFunctions::StateMachine":
            return self._machine_name(name)
        if attribute == "Arn":
            service = {
                "AWS::Lambda::Function": f"lambda:{REGION}:{ACCOUNT}:function:{physical}",
                "AWS::StepFunctions::StateMachine": f"states:{REGION}:{ACCOUNT}:stateMachine:"
                + self._machine_name(name),
                "AWS::DynamoDB::Table": f"dynamodb:{REGION}:{ACCOUNT}:table/{physical}",
                "AWS::S3::Bucket": f"s3:::{physical.lower()}",
                "AWS::SQS::Queue": f"sqs:{REGION}:{ACCOUNT}:{physical}",
                "AWS::IAM::Role": f"iam::{ACCOUNT}:role/{physical}",
                "AWS::Events::Rule": f"events:{REGION}:{ACCOUNT}:rule/{physical}",
                "AWS::SNS::Topic": f"sns:{REGION}:{ACCOUNT}:{physical}",
            }.get(kind, f"{kind.split('::')[1].lower()}:{REGION}:{ACCOUNT}:{physical}")
            return f"arn:aws:{service}"
        if attribute == "StreamArn":
            return (
                f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{physical}/stream/"
                "2026-12-03T00:00:00.000"
            )
        return physical

    def _type(self, name: str) -> str:
        kind = str(self._resources.get(name, {}).get("Type", ""))
        return _SAM_TYPES.get(kind, kind)

    def _machine_name(self, name: str) -> str:
        given = (self._resources.get(name, {}).get("Properties") or {}).get("Name")
        return str(self.resolve(given)) if given is not None else f"{name}-{SUFFIX}"

    def resolve(self, value: Any) -> Any:
        """`value` with every intrinsic replaced by a plausible deployed value."""
        if isinstance(value, list):
            return [self.resolve(item) for item in value]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            [(key, argument)] = value.items()
            if key == "Ref":
                return self.ref(argument)
            if key == "Fn::GetAtt":
                target = argument.split(".", 1) if isinstance(argument, str) else argument
                return self.attribute(target[0], target[1])
            if key == "Fn::Sub":
                return self._sub(argument)
            if key == "Fn::Join":
                separator, parts = argument
                return separator.join(str(self.resolve(part)) for part in self.resolve(parts))
            if key == "Fn::If":
                return self.resolve(argument[1])  # the branch that caps, names, grants
            if key == "Fn::Select":
                index, items = argument
                return self.resolve(items)[int(self.resolve(index))]
            if key == "Fn::ToJsonString":
                return json.dumps(self.resolve(argument), separators=(",", ":"))
        return {key: self.resolve(item) for key, item in value.items()}

    def _sub(self, argument: Any) -> str:
        text, variables = (argument, {}) if isinstance(argument, str) else argument
        local = {name: str(self.resolve(item)) for name, item in variables.items()}

        def replace(match: re.Match[str]) -> str:
            name = match.group(1)
            if name in local:
                return local[name]
            if "." in name:
                return self.attribute(*name.split(".", 1))
            return self.ref(name)

        return _SUB.sub(replace, text).replace("${!", "${")
