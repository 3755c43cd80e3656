"""template.yaml as CloudFormation receives it: read with its short-form tags, then put
through SAM's own translator offline (AWS managed policies by short name stay unresolved:
the template names none)."""

from __future__ import annotations

import copy
import logging
import os
from pathlib import Path
from typing import Any

# What `sam build`/`sam package` put in place of local paths (an S3 object per artifact).
ARTIFACT_KEY = "0" * 32


class TranslationError(Exception):
    """SAM's translator refused the template (its messages are the exception's args)."""


def load(path: Path) -> dict[str, Any]:
    """The template as a dict, short-form tags (`!Ref`, `!Sub`…) in their long form: the
    local stack's own reading of it (a copy: that one is cached and shared)."""
    from agentworks_local.template import load_template

    return copy.deepcopy(load_template(path.resolve()))


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
