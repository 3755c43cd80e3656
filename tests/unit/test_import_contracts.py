"""The layers' contracts (pyproject.toml, [tool.importlinter]) catch what they declare: an
import that runs up a floor, reaches a service from a store, pulls the CLI into the layer
or closes a cycle fails `lint-imports`, naming the contract it breaks. Each case runs it
on a copy of the packages with one import added (well under a second each).

The Lambda handlers (functions/*/app.py) are not a package, so the contracts can't see
them: they are held to the same rule here (the layer only; relay code not even that).
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {
    "agentworks": ROOT / "layers" / "agentworks" / "agentworks",
    "agentworks_cli": ROOT / "cli" / "agentworks_cli",
    "agentworks_local": ROOT / "localstack" / "agentworks_local",
}
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _copy(tmp_path: Path) -> Path:
    """The three packages, the config and the custom contract, nothing else."""
    for name, source in PACKAGES.items():
        shutil.copytree(source, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "tools").mkdir()
    shutil.copy(ROOT / "tools" / "import_contracts.py", tmp_path / "tools")
    return tmp_path


def _lint_imports(where: Path) -> subprocess.CompletedProcess[str]:
    # The copy comes first on sys.path, ahead of the editable install's packages.
    env = {**os.environ, "PYTHONPATH": str(where), "NO_COLOR": "1", "COLUMNS": "200"}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=where,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _add_import(module: Path, line: str) -> None:
    module.write_text(module.read_text() + f"\n{line}  # noqa\n")


BREACHES = {
    "a primitive imports a service": (
        "agentworks/ids.py",
        "from agentworks.messaging import service",
        "The layer: surfaces above the composition root above services above primitives",
    ),
    "a service imports the composition root": (
        "agentworks/messaging/service.py",
        "from agentworks import runtime",
        "The layer: surfaces above the composition root above services above primitives",
    ),
    "a store imports a service": (
        "agentworks/conversations/wakeup_store.py",
        "from agentworks.conversations import requests",
        "Stores below the services that use them",
    ),
    "the layer imports the local AWS": (
        "agentworks/crews/models.py",
        "from agentworks_local import snapshot",
        "The layer never imports the CLI or the local AWS",
    ),
    "two modules import each other": (
        "agentworks/conversations/delivery_items.py",
        "from agentworks.conversations import delivery_audit",
        "No import cycles, at any depth",
    ),
}


def test_the_packages_as_they_are_keep_every_contract(tmp_path: Path) -> None:
    run = _lint_imports(_copy(tmp_path))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 broken" in run.stdout


@pytest.mark.parametrize("case", sorted(BREACHES))
def test_one_bad_import_fails_lint_imports_naming_its_contract(case: str, tmp_path: Path) -> None:
    module, line, contract = BREACHES[case]
    where = _copy(tmp_path)
    _add_import(where / module, line)
    run = _lint_imports(where)
    assert run.returncode != 0, run.stdout
    assert f"{contract} BROKEN" in run.stdout, run.stdout


def _imported_packages(path: Path) -> set[str]:
    """Top-level names of every import in a file, function-local ones included."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


HANDLERS = sorted((ROOT / "functions").glob("*/app.py"))
RELAY_CODE = sorted((ROOT / "functions" / "relay_code").rglob("*.py"))


@pytest.mark.parametrize("handler", HANDLERS, ids=lambda p: p.parent.name)
def test_a_lambda_handler_imports_the_layer_never_the_cli_or_the_local_aws(
    handler: Path,
) -> None:
    assert not {"agentworks_cli", "agentworks_local"} & _imported_packages(handler)


@pytest.mark.parametrize("module", RELAY_CODE, ids=lambda p: p.name)
def test_relay_code_reaches_the_platform_through_the_api_only(module: Path) -> None:
    """Its role reaches no table (template.yaml): it runs without the layer's packages."""
    assert not {"agentworks", "agentworks_cli", "agentworks_local"} & _imported_packages(module)
