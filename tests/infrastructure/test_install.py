"""`make install` prints its own line and nothing of setuptools' (issue 29): the Makefile's
editable install, run as written but into a throwaway prefix, shows no warning box."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _editable_install_line() -> str:
    planned = subprocess.run(
        ["make", "-n", "-B", "install"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    [line] = [line for line in planned.splitlines() if " -e " in line]
    return line


def test_the_editable_install_prints_no_setuptools_warning_box(tmp_path: Path) -> None:
    line = _editable_install_line()
    # The same command and environment, minus the dependencies (already installed) and
    # into a throwaway environment (pip --python), so the project's own is left as it is.
    target = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(target)], check=True)
    command = line.replace(
        "-m pip install", f"-m pip --python {shlex.quote(str(target / 'bin' / 'python'))} install"
    ).replace("-e '.[local,dev]'", "--no-deps -e .")
    assert "--python" in command and "--no-deps" in command, line
    done = subprocess.run(command, shell=True, cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    printed = done.stdout + done.stderr
    assert "Editable installation" not in printed and "!!" not in printed, printed[-2000:]
