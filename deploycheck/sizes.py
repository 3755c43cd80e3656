"""What the built functions and layers weigh against Lambda's limits: a function and
its layers together at most 250 MB unzipped; a layer's zip at most 50 MB (direct upload;
SAM uploads through S3, where the unzipped limit is the one that binds)."""

from __future__ import annotations

import os
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from deploycheck.limits import Measure

MAX_UNZIPPED_BYTES = 262_144_000  # 250 MB: function code and every layer, unzipped
MAX_LAYER_ZIP_BYTES = 52_428_800  # 50 MB


def folder_bytes(folder: Path) -> int:
    return sum(
        (Path(base) / name).stat().st_size for base, _, names in os.walk(folder) for name in names
    )


def zipped_bytes(folder: Path) -> int:
    """The size of `folder` zipped as SAM packages it (deflate)."""
    with tempfile.TemporaryFile() as f:
        with zipfile.ZipFile(f, "w", zipfile.ZIP_DEFLATED) as archive:
            for base, _, names in os.walk(folder):
                for name in names:
                    path = Path(base) / name
                    archive.write(path, path.relative_to(folder))
        return f.tell()


def _layers(template: dict[str, Any], props: dict[str, Any]) -> list[str]:
    globals_ = template.get("Globals", {}).get("Function", {})
    layers = props.get("Layers", globals_.get("Layers", []))
    return [layer["Ref"] for layer in layers if isinstance(layer, dict) and "Ref" in layer]


def measures(template: dict[str, Any], build_dir: Path) -> list[Measure]:
    """Each function with its layers (unzipped) and each layer (zipped), as built."""
    resources = template.get("Resources", {})
    layer_bytes = {
        logical_id: folder_bytes(build_dir / logical_id)
        for logical_id, resource in resources.items()
        if resource["Type"] == "AWS::Serverless::LayerVersion"
    }
    found = [
        Measure(f"{layer} zipped", zipped_bytes(build_dir / layer), MAX_LAYER_ZIP_BYTES, "B")
        for layer in sorted(layer_bytes)
    ]
    for logical_id, resource in sorted(resources.items()):
        if resource["Type"] != "AWS::Serverless::Function":
            continue
        code = folder_bytes(build_dir / logical_id)
        layers = _layers(template, resource.get("Properties") or {})
        total = code + sum(layer_bytes.get(layer, 0) for layer in layers)
        what = f"{logical_id} with {', '.join(layers) or 'no layer'} unzipped"
        found.append(Measure(what, total, MAX_UNZIPPED_BYTES, "B"))
    return found
