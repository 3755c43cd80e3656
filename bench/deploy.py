"""What the deploy gate measures (deploycheck), as bench figures: the template as
CloudFormation receives it, the largest role policy, and the layer as built.

The layer is measured in .aws-sam/build when a build exists (`make check-deploy` or
`sam build` made one), else taken from the figures the last `make check-deploy` wrote;
without either it is left out.
"""

from __future__ import annotations

import json
from pathlib import Path

from deploycheck import limits, sizes
from deploycheck.__main__ import FIGURES
from deploycheck.build import BUILD_DIR
from deploycheck.template import load, translate

ROOT = Path(__file__).resolve().parents[1]
LAYER = "RuntimeLayer"

DETAILS = {
    "deploy_resources": "resources after the SAM transform (CloudFormation: 500)",
    "deploy_template_bytes": "template.yaml as sent (over 51,200: through S3)",
    "deploy_translated_bytes": "the template after the SAM transform, minified",
    "deploy_largest_role_policy_chars": "one role's inline policies (IAM: 10,240)",
    "deploy_layer_zip_bytes": "the runtime layer zipped (Lambda: 50 MB)",
    "deploy_layer_unzipped_bytes": "the runtime layer unzipped (with a function: 250 MB)",
}


def measure() -> dict[str, float]:
    """The deploy figures (see DETAILS)."""
    source = ROOT / "template.yaml"
    translated = translate(load(source))
    policies = limits.role_policy_chars(translated)
    figures = {
        "deploy_resources": float(len(translated["Resources"])),
        "deploy_template_bytes": float(source.stat().st_size),
        "deploy_translated_bytes": float(len(json.dumps(translated, separators=(",", ":")))),
        "deploy_largest_role_policy_chars": float(max(policies.values())),
    }
    layer = ROOT / BUILD_DIR / LAYER
    if layer.is_dir():
        figures["deploy_layer_zip_bytes"] = float(sizes.zipped_bytes(layer))
        figures["deploy_layer_unzipped_bytes"] = float(sizes.folder_bytes(layer))
    elif (ROOT / FIGURES).exists():
        checked = json.loads((ROOT / FIGURES).read_text())
        if "deploy_layer_zip_bytes" in checked:
            figures["deploy_layer_zip_bytes"] = float(checked["deploy_layer_zip_bytes"])
    return figures


def add_figures(results: dict[str, float], details: dict[str, str]) -> None:
    """`measure()` into the bench's results, with what each figure is."""
    results.update(measure())
    details.update(DETAILS)
