"""`sam build` without a container, by the pinned SAM CLI in its own venv (.venv-sam:
its dependencies conflict with the project's pinned boto3). The functions carry no
requirements of their own; the layer is built by layers/agentworks/Makefile (pip
downloads of the pinned arm64 wheels), so PyPI is all the build needs."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

SAM_VENV = Path(".venv-sam")
BUILD_DIR = Path(".aws-sam/build")
OTHER_BUILD_DIR = Path(".aws-sam/check-build")  # a template other than template.yaml


def sam(root: Path) -> Path | None:
    """The pinned SAM CLI (`make check-deploy` installs it), or None."""
    path = root / SAM_VENV / "bin" / "sam"
    return path if path.exists() else None


def build(template: Path, root: Path, build_dir: Path | None = None) -> tuple[bool, str]:
    """Builds `template` into `build_dir` (.aws-sam/build, where `sam deploy` looks; cached:
    an unchanged layer is reused); whether it succeeded, and SAM's output."""
    tool = sam(root)
    if tool is None:
        raise FileNotFoundError(f"the SAM CLI is not installed in {SAM_VENV}")
    environment = {
        **os.environ,
        "SAM_CLI_TELEMETRY": "0",
        # The layer's Makefile runs `$(PYTHON) -m pip`: the SAM venv's, which has pip.
        "PYTHON": str((root / SAM_VENV / "bin" / "python").absolute()),
    }
    done = subprocess.run(
        [
            str(tool),
            "build",
            "--template-file",
            str(template.absolute()),
            "--base-dir",
            str(root.absolute()),
            "--build-dir",
            str(build_dir or root / BUILD_DIR),
            "--cached",
            "--parallel",
        ],
        capture_output=True,
        text=True,
        cwd=root,
        env=environment,
        timeout=900,
    )
    return done.returncode == 0, (done.stdout + done.stderr).strip()
