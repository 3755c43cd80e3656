"""The quotas a deploy meets that cfn-lint does not measure, on the translated template.

Sizes are measured with plausible deployed values in place of intrinsics
(`plausible.Values`), so a policy or body near its limit shows before a deploy does.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from deploycheck.plausible import Values

# CloudFormation (per template).
MAX_RESOURCES = 500
MAX_OUTPUTS = 200
MAX_PARAMETERS = 200
MAX_MAPPINGS = 200
MAX_DIRECT_BODY_BYTES = 51_200  # a larger body must be uploaded through S3
MAX_S3_BODY_BYTES = 1_000_000  # through S3 (also the processed template's limit)
# IAM: all inline policies of one role together; one managed policy (whitespace not counted).
MAX_ROLE_INLINE_CHARS = 10_240
MAX_MANAGED_POLICY_CHARS = 6_144
# Lambda: a function's environment variables (names and values together).
MAX_ENVIRONMENT_BYTES = 4_096
# CloudWatch dashboards: widgets, metrics per widget, metrics per dashboard (the quotas
# page names no byte limit for the body).
MAX_DASHBOARD_WIDGETS = 500
MAX_WIDGET_METRICS = 500
MAX_DASHBOARD_METRICS = 2_500
_WHITESPACE = re.compile(r"\s")


@dataclass(frozen=True)
class Measure:
    """One measured figure against its limit."""

    what: str
    value: int
    limit: int
    unit: str = ""

    @property
    def over(self) -> bool:
        return self.value > self.limit

    def __str__(self) -> str:
        verdict = "OVER" if self.over else "ok"
        unit = f" {self.unit}" if self.unit else ""
        return f"{verdict:4} {self.what}: {self.value:,} of {self.limit:,}{unit}"


def _chars(document: Any) -> int:
    """IAM counts a policy's characters without whitespace."""
    return len(_WHITESPACE.sub("", json.dumps(document, separators=(",", ":"))))


def template_measures(translated: dict[str, Any], source_bytes: int) -> list[Measure]:
    """Counts and body sizes of the template CloudFormation receives."""
    minified = len(json.dumps(translated, separators=(",", ":")).encode())
    return [
        Measure("resources after the SAM transform", len(translated["Resources"]), MAX_RESOURCES),
        Measure("outputs", len(translated.get("Outputs", {})), MAX_OUTPUTS),
        Measure("parameters", len(translated.get("Parameters", {})), MAX_PARAMETERS),
        Measure("mappings", len(translated.get("Mappings", {})), MAX_MAPPINGS),
        Measure(
            "template body (source, uploaded through S3)", source_bytes, MAX_S3_BODY_BYTES, "B"
        ),
        Measure("template after the transform (minified)", minified, MAX_S3_BODY_BYTES, "B"),
    ]


def needs_s3_upload(source_bytes: int) -> bool:
    """Over 51,200 bytes, `sam deploy` must upload the template (resolve_s3 or s3_bucket)."""
    return source_bytes > MAX_DIRECT_BODY_BYTES


def role_policy_chars(translated: dict[str, Any]) -> dict[str, int]:
    """Each role's inline policies together, in IAM's characters."""
    values = Values(translated)
    return {
        logical_id: sum(
            _chars(values.resolve(policy["PolicyDocument"]))
            for policy in resource["Properties"].get("Policies", [])
        )
        for logical_id, resource in translated["Resources"].items()
        if resource["Type"] == "AWS::IAM::Role"
    }


def resource_measures(translated: dict[str, Any]) -> list[Measure]:
    """Roles' inline policies, managed policies, function environments, dashboards."""
    values = Values(translated)
    measures = [
        Measure(f"{role} inline policies", chars, MAX_ROLE_INLINE_CHARS, "chars")
        for role, chars in sorted(role_policy_chars(translated).items())
    ]
    for logical_id, resource in sorted(translated["Resources"].items()):
        kind, props = resource["Type"], resource.get("Properties", {})
        if kind == "AWS::IAM::ManagedPolicy":
            chars = _chars(values.resolve(props["PolicyDocument"]))
            measures.append(
                Measure(f"{logical_id} policy", chars, MAX_MANAGED_POLICY_CHARS, "chars")
            )
        elif kind == "AWS::Lambda::Function":
            variables = values.resolve(props.get("Environment", {}).get("Variables", {}))
            size = sum(len(str(k).encode()) + len(str(v).encode()) for k, v in variables.items())
            measures.append(Measure(f"{logical_id} environment", size, MAX_ENVIRONMENT_BYTES, "B"))
        elif kind == "AWS::CloudWatch::Dashboard":
            measures.extend(_dashboard(logical_id, values.resolve(props["DashboardBody"])))
    return measures


def _dashboard(logical_id: str, body: str) -> list[Measure]:
    widgets = json.loads(body).get("widgets", [])
    per_widget = [len(w.get("properties", {}).get("metrics", [])) for w in widgets]
    return [
        Measure(f"{logical_id} widgets", len(widgets), MAX_DASHBOARD_WIDGETS),
        Measure(
            f"{logical_id} metrics in one widget", max(per_widget, default=0), MAX_WIDGET_METRICS
        ),
        Measure(f"{logical_id} metrics", sum(per_widget), MAX_DASHBOARD_METRICS),
    ]
