"""template.yaml through SAM's own translator, offline (what CloudFormation will deploy)."""

from __future__ import annotations

import copy
import os
from functools import lru_cache
from typing import Any

ARTIFACTS = "s3://agentworks-artifacts"


class _NoManagedPolicies:
    """SAM asks IAM for AWS managed policy ARNs; this template names none by short name."""

    def load(self) -> dict[str, str]:
        return {}


def with_s3_uris(template: dict[str, Any], layer_key: str | None = None) -> dict[str, Any]:
    """Local CodeUri/ContentUri paths are what `sam build`/`sam package` replace with S3
    objects named by content hash; `layer_key` stands for the layer's packaged key."""
    swapped = copy.deepcopy(template)
    for logical_id, resource in swapped["Resources"].items():
        props = resource.get("Properties", {})
        for key in ("CodeUri", "ContentUri", "DefinitionUri"):
            if isinstance(props.get(key), str):
                props[key] = f"{ARTIFACTS}/{props[key]}"
        if layer_key is not None and resource["Type"] == "AWS::Serverless::LayerVersion":
            props["ContentUri"] = f"{ARTIFACTS}/{logical_id}/{layer_key}"
    return swapped


def translate(template: dict[str, Any], layer_key: str | None = None) -> dict[str, Any]:
    from samtranslator.translator.transform import transform

    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    return dict(transform(with_s3_uris(template, layer_key), {}, _NoManagedPolicies()))


@lru_cache(maxsize=1)
def translated_template() -> dict[str, Any]:
    """The translated template.yaml (callers must not mutate it)."""
    from agentworks_local.template import load_template

    return translate(load_template())
