"""cfn-lint over the source template and over the template after the SAM transform.

cfn-lint skips SAM's own resource types, so a cycle or a bad reference among the roles,
versions and routes SAM generates shows only in the translated template. Every rule runs
on both; `.cfnlintrc.yaml` lists the warnings we accept, each with its reason. Any other
error or warning fails the check.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

CONFIG = Path(".cfnlintrc.yaml")


def _cfn_lint() -> str:
    beside = Path(sys.executable).parent / "cfn-lint"
    return str(beside) if beside.exists() else "cfn-lint"


def _run(path: Path, config: Path, label: str) -> list[str]:
    done = subprocess.run(
        [_cfn_lint(), "--config-file", str(config), "--format", "parseable", str(path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    findings = [line.replace(str(path), label) for line in done.stdout.splitlines() if line]
    if done.returncode and not findings:  # cfn-lint itself failed
        findings.append(f"{label}: cfn-lint failed: {done.stderr.strip()[-500:]}")
    return findings


def lint(source: Path, translated: dict[str, Any], root: Path) -> list[str]:
    """Each finding as cfn-lint's parseable line (`file:line:col:…:RULE:message`)."""
    config = root / CONFIG
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(translated, f, indent=1)
        name = Path(f.name)
    try:
        with ThreadPoolExecutor(2) as pool:
            jobs = [
                pool.submit(_run, source, config, source.name),
                pool.submit(_run, name, config, "translated"),
            ]
            return [line for job in jobs for line in job.result()]
    finally:
        name.unlink()
