"""samconfig.toml: what `sam deploy` needs for this template. A template body over
51,200 bytes must be uploaded through S3, so the deploy needs `resolve_s3 = true` or an
`s3_bucket`; the roles SAM generates need CAPABILITY_IAM."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from deploycheck.limits import needs_s3_upload

SAMCONFIG = Path("samconfig.toml")
MAX_STATE_MACHINE_NAME = 80


def _deploy_parameters(config: dict[str, Any]) -> dict[str, Any]:
    default = config.get("default", {})
    return {
        **default.get("global", {}).get("parameters", {}),
        **default.get("deploy", {}).get("parameters", {}),
    }


def stack_name(root: Path) -> str:
    """The stack name samconfig.toml deploys to (SAM's default when it names none)."""
    path = root / SAMCONFIG
    parameters = _deploy_parameters(tomllib.loads(path.read_text())) if path.exists() else {}
    return str(parameters.get("stack_name", "sam-app"))


def name_problems(template: dict[str, Any], stack: str) -> list[str]:
    """State machine names built from the stack's name must stay within 80 characters."""
    found = []
    for logical_id, resource in template.get("Resources", {}).items():
        name = (resource.get("Properties") or {}).get("Name")
        if resource.get("Type") != "AWS::Serverless::StateMachine" or name is None:
            continue
        text = name.get("Fn::Sub", "") if isinstance(name, dict) else str(name)
        resolved = text.replace("${AWS::StackName}", stack)
        if len(resolved) > MAX_STATE_MACHINE_NAME:
            room = MAX_STATE_MACHINE_NAME - (len(text) - len("${AWS::StackName}"))
            found.append(
                f"{logical_id}'s name {resolved!r} is over {MAX_STATE_MACHINE_NAME} "
                f"characters: use a stack name of at most {room}"
            )
    return found


def problems(root: Path, source_bytes: int) -> list[str]:
    """What in samconfig.toml would make `sam deploy` of this template fail."""
    path = root / SAMCONFIG
    if not path.exists():
        return [f"{SAMCONFIG} is missing: `sam deploy` would ask for every setting"]
    parameters = _deploy_parameters(tomllib.loads(path.read_text()))
    found = []
    if needs_s3_upload(source_bytes) and not (
        parameters.get("resolve_s3") is True or parameters.get("s3_bucket")
    ):
        found.append(
            f"the template is {source_bytes:,} bytes (over 51,200): set resolve_s3 = true "
            f"or s3_bucket in {SAMCONFIG} so it is uploaded through S3"
        )
    capabilities = parameters.get("capabilities", "")
    if isinstance(capabilities, list):
        capabilities = " ".join(capabilities)
    if "CAPABILITY_IAM" not in capabilities.split():
        found.append(f"{SAMCONFIG}: capabilities must include CAPABILITY_IAM (SAM's roles)")
    return found


def describe(root: Path, source_bytes: int) -> str:
    """One line on how the template reaches CloudFormation."""
    if not needs_s3_upload(source_bytes):
        return f"template body {source_bytes:,} bytes: sent directly (limit 51,200)"
    return (
        f"template body {source_bytes:,} bytes, over the 51,200 of a direct upload: "
        f"sent through S3 (resolve_s3 in {SAMCONFIG})"
    )
