"""Reads template.yaml and creates its resources on moto, so template and code can't drift.

moto's CloudFormation skips HTTP APIs and leaves TTL disabled, so resources are created
here directly from their template properties.
"""

from __future__ import annotations

import io
import json
import secrets
import zipfile
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
TEMPLATE_PATH = REPO_ROOT / "template.yaml"


class _CfnLoader(yaml.SafeLoader):
    """Understands CloudFormation's short-form tags (!Ref, !Sub, !GetAtt …)."""


def _construct_tag(loader: _CfnLoader, tag_suffix: str, node: yaml.Node) -> dict[str, Any]:
    name = "Ref" if tag_suffix == "Ref" else f"Fn::{tag_suffix}"
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
        if tag_suffix == "GetAtt":
            value = value.split(".", 1)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
    return {name: value}


_CfnLoader.add_multi_constructor("!", _construct_tag)


@lru_cache(maxsize=4)
def load_template(path: Path = TEMPLATE_PATH) -> dict[str, Any]:
    with path.open() as handle:
        return yaml.load(handle, Loader=_CfnLoader)


def resources_of_type(template: dict[str, Any], resource_type: str) -> dict[str, dict[str, Any]]:
    return {
        name: resource
        for name, resource in template["Resources"].items()
        if resource["Type"] == resource_type
    }


@dataclass
class LocalResources:
    """Physical names of what was created, keyed by logical id."""

    tables: dict[str, str] = field(default_factory=dict)
    secrets: dict[str, str] = field(default_factory=dict)
    buckets: dict[str, str] = field(default_factory=dict)
    functions: dict[str, str] = field(default_factory=dict)  # logical id -> function name
    state_machines: dict[str, str] = field(default_factory=dict)  # logical id -> ARN
    function_arns: dict[str, str] = field(default_factory=dict)  # logical id -> ARN
    roles: dict[str, str] = field(default_factory=dict)  # logical id -> ARN (IAM roles)
    queues: dict[str, str] = field(default_factory=dict)  # logical id -> queue URL
    queue_arns: dict[str, str] = field(default_factory=dict)  # logical id -> ARN
    schedule_groups: dict[str, str] = field(default_factory=dict)  # logical id -> name
    stack_name: str = "agentworks"  # the prefix of every name, as a stack's name is deployed

    def environment(self) -> dict[str, str]:
        """The function environment template.yaml would give on AWS."""
        return {
            "IDENTITY_TABLE": self.tables["IdentityTable"],
            "MESSAGES_TABLE": self.tables["MessagesTable"],
            "WORK_TABLE": self.tables["WorkTable"],
            "OUTPUTS_BUCKET": self.buckets["OutputsBucket"],
            "SIGNING_SECRET_ARN": self.secrets["SigningSecret"],
            "FUNCTION_CALL_STATE_MACHINE_ARN": self.state_machines["FunctionCallStateMachine"],
            "WORKFLOW_STATE_MACHINE_ARN": self.state_machines["WorkflowRunStateMachine"],
            "SCHEDULER_ROLE_ARN": self.roles["WorkflowSchedulerRole"],
            "TICK_FUNCTION_ARN": self.function_arns["TickFunction"],
            "TICK_DEAD_LETTER_QUEUE_ARN": self.queue_arns["TickDeadLetterQueue"],
            "SCHEDULE_GROUP": self.schedule_groups["WorkflowScheduleGroup"],
            "AGENT_FUNCTION_PREFIX": f"{self.stack_name}-agent-",
            "MCP_SECRET_PREFIX": f"{self.stack_name}/mcp-servers/",
            "A2A_SECRET_PREFIX": f"{self.stack_name}/a2a-agents/",
            "RELAY_STATE_MACHINE_ARN": self.state_machines["RelayRunStateMachine"],
            "RELAY_CODE_FUNCTION": self.functions["RelayCodeFunction"],
            "LISTENERS_TABLE": self.tables["ListenersTable"],
            # The local stack's WebSocket server sets its own (it knows its port).
            "PUSH_ENDPOINT": "https://localapi.execute-api.us-east-1.amazonaws.com/v1",
        }

    def logical_id_of(self, function_name: str) -> str:
        for logical_id, name in self.functions.items():
            if name == function_name:
                return logical_id
        raise KeyError(function_name)


def table_request(logical_id: str, properties: dict[str, Any], prefix: str) -> dict[str, Any]:
    """CreateTable arguments from a template table's properties."""
    request: dict[str, Any] = {
        "TableName": f"{prefix}-{logical_id}",
        "AttributeDefinitions": properties["AttributeDefinitions"],
        "KeySchema": properties["KeySchema"],
        "BillingMode": properties.get("BillingMode", "PAY_PER_REQUEST"),
    }
    if properties.get("GlobalSecondaryIndexes"):
        request["GlobalSecondaryIndexes"] = properties["GlobalSecondaryIndexes"]
    if "StreamSpecification" in properties:
        request["StreamSpecification"] = {
            "StreamEnabled": True,
            **properties["StreamSpecification"],
        }
    return request


def create_resources(session: Any, prefix: str = "agentworks") -> LocalResources:
    """Creates every table (keys, GSIs, TTL, streams), queue and secret of template.yaml.

    Tables, buckets and secrets a restored state already holds are kept as they are (their
    data, and the signing key, is what the restart is for); the rest is made anew."""
    template = load_template()
    dynamodb = session.client("dynamodb")
    existing_tables = set(dynamodb.list_tables().get("TableNames", []))
    created = LocalResources(stack_name=prefix)
    for logical_id, resource in resources_of_type(template, "AWS::DynamoDB::Table").items():
        properties = resource["Properties"]
        request = table_request(logical_id, properties, prefix)
        created.tables[logical_id] = request["TableName"]
        if request["TableName"] in existing_tables:
            continue
        dynamodb.create_table(**request)
        ttl = properties.get("TimeToLiveSpecification")
        if ttl and ttl.get("Enabled"):
            dynamodb.update_time_to_live(
                TableName=request["TableName"],
                TimeToLiveSpecification={"AttributeName": ttl["AttributeName"], "Enabled": True},
            )
    s3 = session.client("s3")
    existing_buckets = {b["Name"] for b in s3.list_buckets().get("Buckets", [])}
    for logical_id in resources_of_type(template, "AWS::S3::Bucket"):
        bucket = f"{prefix}-{logical_id}".lower()
        if bucket not in existing_buckets:
            s3.create_bucket(Bucket=bucket)
        created.buckets[logical_id] = bucket
    _create_functions_and_state_machines(session, template, prefix, created)
    sqs = session.client("sqs")
    for logical_id in resources_of_type(template, "AWS::SQS::Queue"):
        # CreateQueue of an existing queue returns it (its dead letters are kept).
        url = sqs.create_queue(QueueName=f"{prefix}-{logical_id}")["QueueUrl"]
        created.queues[logical_id] = url
        created.queue_arns[logical_id] = sqs.get_queue_attributes(
            QueueUrl=url, AttributeNames=["QueueArn"]
        )["Attributes"]["QueueArn"]
    _create_schedule_groups(session, template, prefix, created)
    secrets_client = session.client("secretsmanager")
    existing_secrets = {
        s["Name"]: s["ARN"] for s in secrets_client.list_secrets().get("SecretList", [])
    }
    for logical_id in resources_of_type(template, "AWS::SecretsManager::Secret"):
        name = f"{prefix}-{logical_id}"
        created.secrets[logical_id] = (
            existing_secrets.get(name)
            or secrets_client.create_secret(Name=name, SecretString=secrets.token_urlsafe(48))[
                "ARN"
            ]
        )
    return created


def _create_schedule_groups(
    session: Any, template: dict[str, Any], prefix: str, created: LocalResources
) -> None:
    from botocore.exceptions import ClientError

    scheduler = session.client("scheduler")
    for logical_id in resources_of_type(template, "AWS::Scheduler::ScheduleGroup"):
        name = f"{prefix}-{logical_id}"
        try:
            scheduler.create_schedule_group(Name=name)
        except ClientError as error:  # a restored state has it already
            if error.response.get("Error", {}).get("Code") != "ConflictException":
                raise
        created.schedule_groups[logical_id] = name


_TRUST = json.dumps(
    {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": ["lambda.amazonaws.com", "states.amazonaws.com"]},
                "Action": "sts:AssumeRole",
            }
        ],
    }
)


def _placeholder_zip() -> bytes:
    """moto wants code for a function; the local stack runs the real handler instead."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("app.py", "def handler(event, context):\n    return event\n")
    return buffer.getvalue()


def _substitute(
    definition: str, substitutions: dict[str, Any], created: LocalResources, arns: dict[str, str]
) -> str:
    """Applies DefinitionSubstitutions (moto ignores them) with resolved values."""
    for key, value in substitutions.items():
        if isinstance(value, dict) and "Fn::GetAtt" in value:
            resolved = arns[value["Fn::GetAtt"][0]]
        elif isinstance(value, dict) and "Ref" in value:
            ref = value["Ref"]
            resolved = (
                created.functions.get(ref)
                or created.tables.get(ref)
                or created.buckets.get(ref)
                or ref
            )
        else:
            resolved = str(value)
        definition = definition.replace("${" + key + "}", resolved)
    return definition


def _create_functions_and_state_machines(
    session: Any, template: dict[str, Any], prefix: str, created: LocalResources
) -> None:
    role = session.client("iam").create_role(
        RoleName=f"{prefix}-local-execution", AssumeRolePolicyDocument=_TRUST
    )["Role"]["Arn"]
    lambdas = session.client("lambda")
    arns: dict[str, str] = {}
    for logical_id, resource in resources_of_type(template, "AWS::Serverless::Function").items():
        name = f"{prefix}-{logical_id}"
        arns[logical_id] = lambdas.create_function(
            FunctionName=name,
            Runtime="python3.12",
            Role=role,
            Handler=resource["Properties"].get("Handler", "app.handler"),
            Code={"ZipFile": _placeholder_zip()},
        )["FunctionArn"]
        created.functions[logical_id] = name
        created.function_arns[logical_id] = arns[logical_id]
    iam = session.client("iam")
    existing_roles = {r["RoleName"]: r["Arn"] for r in iam.list_roles().get("Roles", [])}
    for logical_id in resources_of_type(template, "AWS::IAM::Role"):
        role_name = f"{prefix}-{logical_id}"
        created.roles[logical_id] = (
            existing_roles.get(role_name)
            or iam.create_role(RoleName=role_name, AssumeRolePolicyDocument=_TRUST)["Role"]["Arn"]
        )
    sfn = session.client("stepfunctions")
    for logical_id, resource in resources_of_type(
        template, "AWS::Serverless::StateMachine"
    ).items():
        properties = resource["Properties"]
        definition = (REPO_ROOT / properties["DefinitionUri"]).read_text()
        definition = _substitute(
            definition, properties.get("DefinitionSubstitutions", {}), created, arns
        )
        created.state_machines[logical_id] = sfn.create_state_machine(
            name=f"{prefix}-{logical_id}", definition=definition, roleArn=role
        )["stateMachineArn"]
