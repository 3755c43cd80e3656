"""Each state machine definition, substituted as deployed, through asl-validator (the npm
package pinned in tools/asl/): the Amazon States Language's own rules, offline."""

from __future__ import annotations

import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from deploycheck.statemachines import Definition

TOOL_DIR = Path("tools/asl")
BIN = "node_modules/.bin/asl-validator"


@dataclass(frozen=True)
class Verdict:
    logical_id: str
    source: str
    valid: bool
    detail: str


def validator(root: Path) -> Path | None:
    """The installed asl-validator (`npm ci` in tools/asl installs it), or None."""
    path = root / TOOL_DIR / BIN
    return path if path.exists() else None


def validate(definitions: list[Definition], root: Path) -> list[Verdict]:
    """One verdict per definition; a placeholder left unfilled is invalid too."""
    tool = validator(root)
    if tool is None:
        raise FileNotFoundError(f"asl-validator is not installed: run `npm ci` in {TOOL_DIR}")
    verdicts = []
    with tempfile.TemporaryDirectory() as folder:
        for definition in definitions:
            path = Path(folder) / f"{definition.logical_id}.asl.json"
            path.write_text(definition.text)
            done = subprocess.run(
                [str(tool), "--json-path", str(path)],
                capture_output=True,
                text=True,
                timeout=120,
            )
            detail = (done.stdout + done.stderr).replace(str(path), definition.source).strip()
            valid = done.returncode == 0 and not definition.unfilled
            if definition.unfilled:
                detail += f"\nno substitution for: {', '.join(definition.unfilled)}"
            verdicts.append(Verdict(definition.logical_id, definition.source, valid, detail))
    return verdicts
