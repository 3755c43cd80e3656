"""Reads template.yaml and creates its resources on moto, so template and code can't drift.

moto's CloudFormation skips HTTP APIs and leaves TTL disabled, so resources are created
here directly from their template properties.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parents[3]
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

    def environment(self) -> dict[str, str]:
        """The function environment template.yaml's Globals would give on AWS."""
        return {
            "IDENTITY_TABLE": self.tables["IdentityTable"],
            "MESSAGES_TABLE": self.tables["MessagesTable"],
            "SIGNING_SECRET_ARN": self.secrets["SigningSecret"],
        }


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
    """Creates every table (keys, GSIs, TTL, streams) and secret of template.yaml."""
    template = load_template()
    dynamodb = session.client("dynamodb")
    created = LocalResources()
    for logical_id, resource in resources_of_type(template, "AWS::DynamoDB::Table").items():
        properties = resource["Properties"]
        request = table_request(logical_id, properties, prefix)
        dynamodb.create_table(**request)
        ttl = properties.get("TimeToLiveSpecification")
        if ttl and ttl.get("Enabled"):
            dynamodb.update_time_to_live(
                TableName=request["TableName"],
                TimeToLiveSpecification={"AttributeName": ttl["AttributeName"], "Enabled": True},
            )
        created.tables[logical_id] = request["TableName"]
    secrets_client = session.client("secretsmanager")
    for logical_id in resources_of_type(template, "AWS::SecretsManager::Secret"):
        arn = secrets_client.create_secret(
            Name=f"{prefix}-{logical_id}", SecretString=secrets.token_urlsafe(48)
        )["ARN"]
        created.secrets[logical_id] = arn
    return created
