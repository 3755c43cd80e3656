"""template.yaml as CloudFormation receives it: read with its short-form tags, then put
through SAM's own translator offline (AWS managed policies by short name stay unresolved:
the template names none)."""

from __future__ import annotations

import copy
import logging
import os
from pathlib import Path
from typing import Any

import yaml

# What `sam build`/`sam package` put in place of local paths (an S3 object per artifact).
ARTIFACT_KEY = "0" * 32


class TranslationError(Exception):
    """SAM's translator refused the template (its messages are the exception's args)."""


class _Loader(yaml.SafeLoader):
    pass


def _tag(loader: _Loader, suffix: str, node: yaml.Node) -> dict[str, Any]:
    value: Any
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
    if suffix == "GetAtt" and isinstance(value, str):
        value = value.split(".", 1)
    return {suffix if suffix in ("Ref", "Condition") else "Fn::" + suffix: value}


_Loader.add_multi_constructor("!", _tag)


def load(path: Path) -> dict[str, Any]:
    """The template as a dict, short-form tags (`!Ref`, `!Sub`…) in their long form."""
    with path.open() as f:
        return dict(yaml.load(f, Loader=_Loader))


def translate(template: dict[str, Any]) -> dict[str, Any]:
    """The template after the SAM transform (what CloudFormation deploys)."""
    from samtranslator.public.exceptions import InvalidDocumentException
    from samtranslator.translator.transform import transform

    class _NoManagedPolicies:
        def load(self) -> dict[str, str]:
            return {}

    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    # The translator warns of its own unpublished metrics when garbage-collected.
    logging.getLogger("samtranslator").setLevel(logging.ERROR)
    packaged = copy.deepcopy(template)
    for logical_id, resource in packaged.get("Resources", {}).items():
        props = resource.get("Properties") or {}
        for key in ("CodeUri", "ContentUri", "DefinitionUri"):
            if isinstance(props.get(key), str):
                props[key] = f"s3://artifacts/{logical_id}/{ARTIFACT_KEY}"
    try:
        return dict(transform(packaged, {}, _NoManagedPolicies()))
    except InvalidDocumentException as e:
        raise TranslationError(*(cause.message for cause in e.causes)) from e
