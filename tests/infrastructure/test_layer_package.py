"""The runtime layer ships what the functions run, and nothing that shadows the Lambda
runtime (layers/agentworks/requirements.txt, installed by its Makefile with --no-deps)."""

from __future__ import annotations

import re
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

import pytest
from packaging.markers import Marker
from packaging.requirements import Requirement

from agentworks_local.template import load_template

ROOT = Path(__file__).resolve().parents[2]
LAYER = ROOT / "layers" / "agentworks"

# In the python3.12 Lambda runtime already: a layer copy would shadow the runtime's.
RUNTIME = {"boto3", "botocore", "s3transfer", "jmespath", "urllib3", "python-dateutil", "six"}
# Required by a shipped package, but only on paths the functions never take.
NOT_SHIPPED = {
    "uvicorn": "mcp's standalone server runner; Lambda serves through mangum",
    "click": "uvicorn's command line",
    "pyjwt": "mcp's OAuth client and server auth, unused",
    "google-api-core": "a2a-sdk's gRPC transport and client retries, never imported by its server",
}
LOCAL_ONLY = {"moto", "pytest", "hypothesis", "cfn-lint", "aws-sam-translator", "ruff", "mypy"}
# What the layer targets (template.yaml Globals: python3.12, arm64).
ENVIRONMENT = {
    "python_version": "3.12",
    "python_full_version": "3.12.0",
    "sys_platform": "linux",
    "platform_system": "Linux",
    "platform_machine": "aarch64",
    "os_name": "posix",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
}


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pins(path: Path) -> dict[str, Requirement]:
    lines = [line.split("#")[0].strip() for line in path.read_text().splitlines()]
    return {_canonical(Requirement(line).name): Requirement(line) for line in lines if line}


@pytest.fixture(scope="module")
def shipped() -> dict[str, Requirement]:
    return _pins(LAYER / "requirements.txt")


def test_layer_ships_nothing_of_the_runtime_or_the_local_tooling(shipped):
    forbidden = RUNTIME | set(NOT_SHIPPED) | LOCAL_ONLY
    assert sorted(set(shipped) & forbidden) == []


def test_layer_pins_are_exact_and_match_the_repository_constraints(shipped):
    constraints = _pins(ROOT / "constraints.txt")
    for name, requirement in shipped.items():
        assert str(requirement.specifier).startswith("=="), name
        assert name in constraints, f"{name} is not pinned in constraints.txt"
        assert requirement.specifier == constraints[name].specifier, name


def _requirements_of(name: str, extras: set[str]) -> set[str]:
    """What `name` (with `extras`) requires on python3.12/linux/arm64, from its metadata."""
    try:
        declared = distribution(name).requires or []
    except PackageNotFoundError:
        pytest.fail(f"{name} is not installed in this environment (pip install -c constraints)")
    needed = set()
    for line in declared:
        requirement = Requirement(line)
        marker = requirement.marker or Marker("python_version >= '0'")
        if any(marker.evaluate({**ENVIRONMENT, "extra": e}) for e in extras | {""}):
            needed.add(_canonical(requirement.name))
    return needed


def test_layer_requirements_are_the_whole_closure(shipped):
    """--no-deps installs only what is listed: every requirement of a shipped package must be
    shipped too, provided by the runtime, or deliberately left out (NOT_SHIPPED)."""
    missing = {}
    for name, requirement in shipped.items():
        for dependency in _requirements_of(name, set(requirement.extras)):
            if dependency not in shipped and dependency not in RUNTIME | set(NOT_SHIPPED):
                missing[dependency] = name
    assert missing == {}, f"add these (needed by) to requirements.txt: {missing}"


def test_layer_is_built_without_dependency_resolution():
    """SAM's python builder would follow aws-xray-sdk to botocore; the Makefile doesn't."""
    layer = load_template()["Resources"]["RuntimeLayer"]
    assert layer["Metadata"]["BuildMethod"] == "makefile"
    makefile = (LAYER / "Makefile").read_text()
    recipe = makefile.split("build-RuntimeLayer:", 1)[1].split("\n\n", 1)[0]
    assert "-r requirements.txt" in recipe and "$(LAYER_PIP)" in recipe
    assert "--no-deps" in makefile.split("LAYER_PIP =", 1)[1].split("\n\n", 1)[0]
